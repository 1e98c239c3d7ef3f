//! The ingestion queue in both dialects: `ingest_jobs` (one row per upload, its bytes until it
//! ends) and `ingest_turns` (when each team was last served).
//!
//! A claim picks, among waiting jobs (queued, or running under an expired lease), the one whose
//! team has the lowest turn, then the oldest; it takes the team a new turn (one more than the
//! highest), so teams with work take turns. On PostgreSQL the pick is `FOR UPDATE OF j SKIP
//! LOCKED`: replicas claiming at once take different jobs, none waits for another's claim;
//! SQLite's one writer (`BEGIN IMMEDIATE`) makes the pick and the update one step anyway.
//! Enqueueing sums what waits under PostgreSQL's advisory lock for the queue, so replicas
//! enqueueing at once cannot together overshoot a limit.

use super::{
    Cancellation, Enqueued, IngestJob, JobError, JobState, MAX_ATTEMPTS, NewIngestJob, Progress,
    QueueFull, QueueLimits, QueueStats,
};
use crate::store::rules::i64_of;
use crate::store::sql::{Db, Row, Sql, Tx, Value};
use crate::store::teams::sql::hold;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// The columns [`job_row`] reads, then `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT id, team_id, collection, filename, content_type, metadata, file_id, sha256,
                key_id, actor, request_id, bytes, state, owner, lease_until, attempts, pages,
                pages_done, chunks, chunks_done, error_status, error_type, error_code,
                error_message, created_at, finished_at FROM ingest_jobs ",
            $rest
        )
    };
}
pub(crate) use select;

/// The advisory lock key enqueues serialise on: "Sov" + "ingq".
const QUEUE_LOCK: i64 = 0x0053_6f76_696e_6771;

const LOCK_QUEUE: Sql<'static> = Sql::postgres_only("SELECT pg_advisory_xact_lock($1)");

const GET: Sql<'static> = Sql {
    sqlite: select!("WHERE team_id = ?1 AND id = ?2"),
    postgres: select!("WHERE team_id = $1 AND id = $2"),
};

const GET_ANY: Sql<'static> = Sql {
    sqlite: select!("WHERE id = ?1"),
    postgres: select!("WHERE id = $1"),
};

const UNFINISHED: Sql<'static> = Sql {
    sqlite: select!(
        "WHERE team_id = ?1 AND collection = ?2 AND sha256 = ?3 AND file_id = ?4
         AND state IN ('queued', 'running') LIMIT 1"
    ),
    postgres: select!(
        "WHERE team_id = $1 AND collection = $2 AND sha256 = $3 AND file_id = $4
         AND state IN ('queued', 'running') LIMIT 1"
    ),
};

const TEAM_WAITING: Sql<'static> = Sql {
    sqlite: "SELECT COALESCE(SUM(bytes), 0), COALESCE(SUM(pages), 0) FROM ingest_jobs
         WHERE team_id = ?1 AND state IN ('queued', 'running')",
    postgres: "SELECT COALESCE(SUM(bytes), 0)::BIGINT, COALESCE(SUM(pages), 0)::BIGINT
         FROM ingest_jobs WHERE team_id = $1 AND state IN ('queued', 'running')",
};

const STATS: Sql<'static> = Sql {
    sqlite: "SELECT COALESCE(SUM(state = 'queued'), 0), COALESCE(SUM(state = 'running'), 0),
         COALESCE(SUM(bytes), 0), COALESCE(SUM(pages), 0), MIN(created_at)
         FROM ingest_jobs WHERE state IN ('queued', 'running')",
    postgres: "SELECT COUNT(*) FILTER (WHERE state = 'queued'),
         COUNT(*) FILTER (WHERE state = 'running'),
         COALESCE(SUM(bytes), 0)::BIGINT, COALESCE(SUM(pages), 0)::BIGINT, MIN(created_at)
         FROM ingest_jobs WHERE state IN ('queued', 'running')",
};

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO ingest_jobs (id, team_id, collection, filename, content_type, metadata,
         file_id, sha256, key_id, actor, request_id, bytes, data, state, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'queued', ?14)",
    postgres: "INSERT INTO ingest_jobs (id, team_id, collection, filename, content_type,
         metadata, file_id, sha256, key_id, actor, request_id, bytes, data, state, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'queued', $14)",
};

const DATA: Sql<'static> = Sql {
    sqlite: "SELECT data FROM ingest_jobs WHERE id = ?1 AND state IN ('queued', 'running')",
    postgres: "SELECT data FROM ingest_jobs WHERE id = $1 AND state IN ('queued', 'running')",
};

/// The next job to claim: the least recently served team's oldest waiting job.
const NEXT: Sql<'static> = Sql {
    sqlite: "SELECT j.id, j.state, j.attempts FROM ingest_jobs j
         LEFT JOIN ingest_turns t ON t.team_id = j.team_id
         WHERE j.state = 'queued' OR (j.state = 'running' AND j.lease_until < ?1)
         ORDER BY COALESCE(t.turn, 0), j.created_at, j.id LIMIT 1",
    postgres: "SELECT j.id, j.state, j.attempts FROM ingest_jobs j
         LEFT JOIN ingest_turns t ON t.team_id = j.team_id
         WHERE j.state = 'queued' OR (j.state = 'running' AND j.lease_until < $1)
         ORDER BY COALESCE(t.turn, 0), j.created_at, j.id LIMIT 1
         FOR UPDATE OF j SKIP LOCKED",
};

const TAKE: Sql<'static> = Sql {
    sqlite: "UPDATE ingest_jobs SET state = 'running', owner = ?2, lease_until = ?3,
         attempts = attempts + 1 WHERE id = ?1 RETURNING team_id",
    postgres: "UPDATE ingest_jobs SET state = 'running', owner = $2, lease_until = $3,
         attempts = attempts + 1 WHERE id = $1 RETURNING team_id",
};

/// The team takes a turn after every other team's latest.
const TURN: Sql<'static> = Sql {
    sqlite: "INSERT INTO ingest_turns (team_id, turn)
         SELECT ?1, COALESCE(MAX(turn), 0) + 1 FROM ingest_turns WHERE true
         ON CONFLICT (team_id) DO UPDATE SET turn = excluded.turn",
    postgres: "INSERT INTO ingest_turns (team_id, turn)
         SELECT $1, COALESCE(MAX(turn), 0) + 1 FROM ingest_turns WHERE true
         ON CONFLICT (team_id) DO UPDATE SET turn = excluded.turn",
};

const RENEW: Sql<'static> = Sql {
    sqlite: "UPDATE ingest_jobs SET lease_until = ?3, pages = ?4, pages_done = ?5, chunks = ?6,
         chunks_done = ?7 WHERE id = ?1 AND owner = ?2 AND state = 'running'",
    postgres: "UPDATE ingest_jobs SET lease_until = $3, pages = $4, pages_done = $5,
         chunks = $6, chunks_done = $7 WHERE id = $1 AND owner = $2 AND state = 'running'",
};

/// Ends a job: its state, error and end time; its bytes dropped, its lease given up.
const CANCEL: Sql<'static> = Sql {
    sqlite: "UPDATE ingest_jobs SET state = ?2, error_status = ?3, error_type = ?4,
         error_code = ?5, error_message = ?6, finished_at = ?7, data = X'', lease_until = NULL
         WHERE id = ?1 AND state IN ('queued', 'running')",
    postgres: "UPDATE ingest_jobs SET state = $2, error_status = $3, error_type = $4,
         error_code = $5, error_message = $6, finished_at = $7, data = ''::BYTEA,
         lease_until = NULL WHERE id = $1 AND state IN ('queued', 'running')",
};

const END: Sql<'static> = Sql {
    sqlite: "UPDATE ingest_jobs SET state = ?2, error_status = ?3, error_type = ?4,
         error_code = ?5, error_message = ?6, finished_at = ?7, data = X'', lease_until = NULL
         WHERE id = ?1",
    postgres: "UPDATE ingest_jobs SET state = $2, error_status = $3, error_type = $4,
         error_code = $5, error_message = $6, finished_at = $7, data = ''::BYTEA,
         lease_until = NULL WHERE id = $1",
};

const END_OWNED: Sql<'static> = Sql {
    sqlite: "UPDATE ingest_jobs SET state = ?2, error_status = ?3, error_type = ?4,
         error_code = ?5, error_message = ?6, finished_at = ?7, data = X'', lease_until = NULL
         WHERE id = ?1 AND owner = ?8 AND state = 'running'",
    postgres: "UPDATE ingest_jobs SET state = $2, error_status = $3, error_type = $4,
         error_code = $5, error_message = $6, finished_at = $7, data = ''::BYTEA,
         lease_until = NULL WHERE id = $1 AND owner = $8 AND state = 'running'",
};

/// Running jobs whose lease names this replica's earlier life go back to the queue.
const REQUEUE: Sql<'static> = Sql {
    sqlite: "UPDATE ingest_jobs SET state = 'queued', owner = NULL, lease_until = NULL
         WHERE state = 'running' AND substr(owner, 1, ?2) = ?1 AND owner <> ?3",
    postgres: "UPDATE ingest_jobs SET state = 'queued', owner = NULL, lease_until = NULL
         WHERE state = 'running' AND substr(owner, 1, $2::BIGINT::INT) = $1 AND owner <> $3",
};

pub(crate) fn job_row(r: &Row) -> StoreResult<IngestJob> {
    let id = r.text(0)?;
    let state = r.text(12)?;
    let state = JobState::parse(&state)
        .ok_or_else(|| StoreError::Corrupt(format!("ingest_jobs {id}.state: {state}")))?;
    let error = match (
        r.opt_count(20)?,
        r.opt_text(21)?,
        r.opt_text(22)?,
        r.opt_text(23)?,
    ) {
        (Some(status), Some(kind), Some(code), Some(message)) => Some(JobError {
            status,
            kind,
            code,
            message,
        }),
        _ => None,
    };
    Ok(IngestJob {
        team_id: TeamId(r.text(1)?),
        collection: r.text(2)?,
        filename: r.text(3)?,
        content_type: r.opt_text(4)?,
        metadata: r.text(5)?,
        file_id: Some(r.text(6)?).filter(|f| !f.is_empty()),
        sha256: r.text(7)?,
        key_id: r.text(8)?,
        actor: r.text(9)?,
        request_id: r.text(10)?,
        bytes: r.count(11)?,
        state,
        owner: r.opt_text(13)?,
        lease_until: r.opt_i64(14)?,
        attempts: r.count(15)?,
        progress: Progress {
            pages: r.opt_count(16)?,
            pages_done: r.count(17)?,
            chunks: r.opt_count(18)?,
            chunks_done: r.count(19)?,
        },
        error,
        created_at: r.i64(24)?,
        finished_at: r.opt_i64(25)?,
        id,
    })
}

pub(crate) async fn get(db: &impl Db, team: &TeamId, id: &str) -> StoreResult<Option<IngestJob>> {
    db.query_opt(GET, &[Value::from(&team.0), id.into()])
        .await?
        .as_ref()
        .map(job_row)
        .transpose()
}

async fn get_any(db: &impl Db, id: &str) -> StoreResult<IngestJob> {
    let row = db.query_opt(GET_ANY, &[id.into()]).await?;
    let row = row.ok_or_else(|| StoreError::Corrupt(format!("ingest_jobs {id} vanished")))?;
    job_row(&row)
}

pub(crate) async fn data(db: &impl Db, id: &str) -> StoreResult<Option<Vec<u8>>> {
    db.query_opt(DATA, &[id.into()])
        .await?
        .map(|r| r.bytes(0))
        .transpose()
}

/// Sums of bytes and known pages of unfinished jobs, the team's or everyone's.
async fn waiting(db: &impl Db, team: Option<&TeamId>) -> StoreResult<(u64, u64)> {
    let row = match team {
        Some(team) => db.query_opt(TEAM_WAITING, &[Value::from(&team.0)]).await?,
        None => {
            let stats = stats(db).await?;
            return Ok((stats.bytes, stats.pages));
        }
    };
    let row = row.ok_or_else(|| StoreError::Corrupt("ingest_jobs: no sum".into()))?;
    Ok((row.count(0)?, row.count(1)?))
}

/// Which limit the job would exceed, if any: bytes counting the new job's, pages only what
/// waits (the new job's are not known before extraction).
fn over(limits: &QueueLimits, bytes: u64, team: (u64, u64), all: (u64, u64)) -> Option<QueueFull> {
    if team.0.saturating_add(bytes) > limits.team_bytes {
        Some(QueueFull::TeamBytes)
    } else if team.1 >= limits.team_pages {
        Some(QueueFull::TeamPages)
    } else if all.0.saturating_add(bytes) > limits.total_bytes {
        Some(QueueFull::TotalBytes)
    } else if all.1 >= limits.total_pages {
        Some(QueueFull::TotalPages)
    } else {
        None
    }
}

pub(crate) async fn enqueue(
    tx: impl Tx,
    now: UnixMillis,
    job: NewIngestJob,
    limits: QueueLimits,
) -> StoreResult<Enqueued> {
    tx.execute(LOCK_QUEUE, &[QUEUE_LOCK.into()]).await?;
    if !hold(&tx, &job.team_id).await? {
        return Err(StoreError::TeamNotFound(job.team_id));
    }
    let file_id = job.file_id.as_deref().unwrap_or("");
    let same = tx
        .query_opt(
            UNFINISHED,
            &[
                Value::from(&job.team_id.0),
                Value::from(&job.collection),
                Value::from(&job.sha256),
                file_id.into(),
            ],
        )
        .await?;
    if let Some(row) = same {
        let existing = job_row(&row)?;
        tx.commit().await?;
        return Ok(Enqueued::Existing(existing));
    }
    let bytes = job.data.len() as u64;
    let team = waiting(&tx, Some(&job.team_id)).await?;
    let all = waiting(&tx, None).await?;
    if let Some(full) = over(&limits, bytes, team, all) {
        tx.commit().await?;
        return Ok(Enqueued::Full(full));
    }
    tx.execute(
        INSERT,
        &[
            Value::from(&job.id),
            Value::from(&job.team_id.0),
            Value::from(&job.collection),
            Value::from(&job.filename),
            job.content_type.as_deref().into(),
            Value::from(&job.metadata),
            file_id.into(),
            Value::from(&job.sha256),
            Value::from(&job.key_id),
            Value::from(&job.actor),
            Value::from(&job.request_id),
            i64_of(bytes, "bytes")?.into(),
            job.data.into(),
            now.into(),
        ],
    )
    .await?;
    let stored = get_any(&tx, &job.id).await?;
    tx.commit().await?;
    Ok(Enqueued::New(stored))
}

pub(crate) async fn claim(
    tx: impl Tx,
    now: UnixMillis,
    owner: &str,
    until: UnixMillis,
) -> StoreResult<Option<IngestJob>> {
    // A job given up on is failed, then the next one looked at: a bounded number per claim.
    for _ in 0..16 {
        let Some(next) = tx.query_opt(NEXT, &[now.into()]).await? else {
            tx.commit().await?;
            return Ok(None);
        };
        let id = next.text(0)?;
        let attempts: u32 = next.count(2)?;
        if next.text(1)? == JobState::Running.as_str() && attempts >= MAX_ATTEMPTS {
            let error = JobError {
                status: 422,
                kind: "invalid_request_error".into(),
                code: "abandoned".into(),
                message: format!(
                    "Ingestion was abandoned: its worker stopped {attempts} times while reading \
                     this document."
                ),
            };
            end(&tx, now, &id, JobState::Failed, Some(&error)).await?;
            continue;
        }
        let team = tx
            .query_opt(TAKE, &[Value::from(&id), owner.into(), until.into()])
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("ingest_jobs {id} vanished")))?
            .text(0)?;
        tx.execute(TURN, &[team.into()]).await?;
        let job = get_any(&tx, &id).await?;
        tx.commit().await?;
        return Ok(Some(job));
    }
    tx.commit().await?;
    Ok(None)
}

/// A job's end as parameters: id, state, the error's four columns, the time; then `more`.
fn ending(
    id: &str,
    state: JobState,
    error: Option<&JobError>,
    now: UnixMillis,
    more: Option<&str>,
) -> Vec<Value> {
    let mut params = vec![
        id.into(),
        state.as_str().into(),
        error.map(|e| i64::from(e.status)).into(),
        error.map(|e| e.kind.as_str()).into(),
        error.map(|e| e.code.as_str()).into(),
        error.map(|e| e.message.as_str()).into(),
        now.into(),
    ];
    params.extend(more.map(Value::from));
    params
}

async fn end(
    db: &impl Db,
    now: UnixMillis,
    id: &str,
    state: JobState,
    error: Option<&JobError>,
) -> StoreResult<u64> {
    db.execute(END, &ending(id, state, error, now, None)).await
}

pub(crate) async fn renew(
    db: &impl Db,
    id: &str,
    owner: &str,
    until: UnixMillis,
    p: Progress,
) -> StoreResult<bool> {
    let n = db
        .execute(
            RENEW,
            &[
                id.into(),
                owner.into(),
                until.into(),
                p.pages.map(i64::from).into(),
                i64::from(p.pages_done).into(),
                p.chunks.map(i64::from).into(),
                i64::from(p.chunks_done).into(),
            ],
        )
        .await?;
    Ok(n > 0)
}

pub(crate) async fn finish(
    db: &impl Db,
    now: UnixMillis,
    id: &str,
    owner: &str,
    error: Option<JobError>,
) -> StoreResult<bool> {
    let state = match error {
        None => JobState::Completed,
        Some(_) => JobState::Failed,
    };
    let params = ending(id, state, error.as_ref(), now, Some(owner));
    let n = db.execute(END_OWNED, &params).await?;
    Ok(n > 0)
}

pub(crate) async fn cancel(
    tx: impl Tx,
    now: UnixMillis,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<Cancellation>> {
    let Some(job) = get(&tx, team, id).await? else {
        tx.commit().await?;
        return Ok(None);
    };
    if job.state.is_final() {
        tx.commit().await?;
        return Ok(Some(Cancellation {
            job,
            ended_now: false,
        }));
    }
    // Only an unfinished job is ended: of two cancellations racing, one ends it.
    let ended = tx
        .execute(CANCEL, &ending(id, JobState::Cancelled, None, now, None))
        .await?;
    let job = get_any(&tx, id).await?;
    tx.commit().await?;
    Ok(Some(Cancellation {
        job,
        ended_now: ended > 0,
    }))
}

/// Puts back in the queue the running jobs whose owner starts with `replica` (this replica's
/// earlier life: `<replica>#<boot>`) other than `current`; how many.
pub(crate) async fn requeue(db: &impl Db, replica: &str, current: &str) -> StoreResult<u64> {
    let len = i64::try_from(replica.chars().count()).unwrap_or(i64::MAX);
    db.execute(REQUEUE, &[replica.into(), len.into(), current.into()])
        .await
}

pub(crate) async fn stats(db: &impl Db) -> StoreResult<QueueStats> {
    let row = db
        .query_opt(STATS, &[])
        .await?
        .ok_or_else(|| StoreError::Corrupt("ingest_jobs: no stats".into()))?;
    Ok(QueueStats {
        queued: row.count(0)?,
        running: row.count(1)?,
        bytes: row.count(2)?,
        pages: row.count(3)?,
        oldest: row.opt_i64(4)?,
    })
}

//! The queue as the OpenAI Vector Stores surface sees it, in both dialects: the jobs of a
//! vector store's files (a file's latest job is its state until its document is stored), a
//! file's (or a whole store's) jobs forgotten when it is detached, and file batches (the files
//! one call attached, and whether it was cancelled).

use super::sql::{job_row, select};
use super::{FileBatch, IngestJob};
use crate::store::sql::{Db, Sql, Value};
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// At most this many jobs of one vector store are read at once (its files' states).
pub const MAX_COLLECTION_JOBS: i64 = 10_000;

const OF_COLLECTION: Sql<'static> = Sql {
    sqlite: select!(
        "WHERE team_id = ?1 AND collection = ?2 AND file_id <> ''
         ORDER BY created_at DESC, id DESC LIMIT ?3"
    ),
    postgres: select!(
        "WHERE team_id = $1 AND collection = $2 AND file_id <> ''
         ORDER BY created_at DESC, id DESC LIMIT $3"
    ),
};

const FORGET_FILE: Sql<'static> = Sql {
    sqlite: "DELETE FROM ingest_jobs WHERE team_id = ?1 AND collection = ?2 AND file_id = ?3",
    postgres: "DELETE FROM ingest_jobs WHERE team_id = $1 AND collection = $2 AND file_id = $3",
};

const FORGET_COLLECTION: Sql<'static> = Sql {
    sqlite: "DELETE FROM ingest_jobs WHERE team_id = ?1 AND collection = ?2",
    postgres: "DELETE FROM ingest_jobs WHERE team_id = $1 AND collection = $2",
};

const INSERT_BATCH: Sql<'static> = Sql {
    sqlite: "INSERT INTO vector_store_file_batches (id, team_id, vector_store_id, file_ids,
         created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    postgres: "INSERT INTO vector_store_file_batches (id, team_id, vector_store_id, file_ids,
         created_at) VALUES ($1, $2, $3, $4, $5)",
};

const GET_BATCH: Sql<'static> = Sql {
    sqlite: "SELECT id, team_id, vector_store_id, file_ids, cancelled, created_at
         FROM vector_store_file_batches WHERE team_id = ?1 AND id = ?2",
    postgres: "SELECT id, team_id, vector_store_id, file_ids, cancelled, created_at
         FROM vector_store_file_batches WHERE team_id = $1 AND id = $2",
};

const CANCEL_BATCH: Sql<'static> = Sql {
    sqlite: "UPDATE vector_store_file_batches SET cancelled = 1 WHERE team_id = ?1 AND id = ?2",
    postgres: "UPDATE vector_store_file_batches SET cancelled = TRUE
         WHERE team_id = $1 AND id = $2",
};

/// The team's jobs for files of `collection`, newest first (at most [`MAX_COLLECTION_JOBS`]).
pub(crate) async fn of_collection(
    db: &impl Db,
    team: &TeamId,
    collection: &str,
) -> StoreResult<Vec<IngestJob>> {
    db.query(
        OF_COLLECTION,
        &[
            Value::from(&team.0),
            collection.into(),
            MAX_COLLECTION_JOBS.into(),
        ],
    )
    .await?
    .iter()
    .map(job_row)
    .collect()
}

const OF_FILE: Sql<'static> = Sql {
    sqlite: select!(
        "WHERE team_id = ?1 AND file_id = ?2 ORDER BY created_at DESC, id DESC LIMIT ?3"
    ),
    postgres: select!(
        "WHERE team_id = $1 AND file_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3"
    ),
};

/// The team's jobs for `file_id` in every vector store, newest first (at most
/// [`MAX_COLLECTION_JOBS`]).
pub(crate) async fn of_file(
    db: &impl Db,
    team: &TeamId,
    file_id: &str,
) -> StoreResult<Vec<IngestJob>> {
    db.query(
        OF_FILE,
        &[
            Value::from(&team.0),
            file_id.into(),
            MAX_COLLECTION_JOBS.into(),
        ],
    )
    .await?
    .iter()
    .map(job_row)
    .collect()
}

/// Deletes the team's jobs for `file_id` in `collection` (every file's when `None`); how many.
pub(crate) async fn forget(
    db: &impl Db,
    team: &TeamId,
    collection: &str,
    file_id: Option<&str>,
) -> StoreResult<u64> {
    match file_id {
        Some(file) => {
            db.execute(
                FORGET_FILE,
                &[Value::from(&team.0), collection.into(), file.into()],
            )
            .await
        }
        None => {
            db.execute(
                FORGET_COLLECTION,
                &[Value::from(&team.0), collection.into()],
            )
            .await
        }
    }
}

pub(crate) async fn create_batch(
    db: &impl Db,
    now: UnixMillis,
    batch: &FileBatch,
) -> StoreResult<FileBatch> {
    let file_ids = serde_json::to_string(&batch.file_ids)
        .map_err(|e| StoreError::Corrupt(format!("file batch {}: {e}", batch.id)))?;
    db.execute(
        INSERT_BATCH,
        &[
            Value::from(&batch.id),
            Value::from(&batch.team_id.0),
            Value::from(&batch.vector_store_id),
            file_ids.into(),
            now.into(),
        ],
    )
    .await?;
    Ok(FileBatch {
        created_at: now,
        ..batch.clone()
    })
}

pub(crate) async fn batch(db: &impl Db, team: &TeamId, id: &str) -> StoreResult<Option<FileBatch>> {
    let Some(r) = db
        .query_opt(GET_BATCH, &[Value::from(&team.0), id.into()])
        .await?
    else {
        return Ok(None);
    };
    let file_ids = serde_json::from_str(&r.text(3)?)
        .map_err(|e| StoreError::Corrupt(format!("file batch {id}.file_ids: {e}")))?;
    Ok(Some(FileBatch {
        id: r.text(0)?,
        team_id: TeamId(r.text(1)?),
        vector_store_id: r.text(2)?,
        file_ids,
        cancelled: r.bool(4)?,
        created_at: r.i64(5)?,
    }))
}

pub(crate) async fn cancel_batch(db: &impl Db, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(db
        .execute(CANCEL_BATCH, &[Value::from(&team.0), id.into()])
        .await?
        > 0)
}

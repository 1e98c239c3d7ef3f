//! The journal index: `journal_entries`, every replica's chain entry by entry; and
//! `journal_tlog_heads`, each replica's latest signed tree head; [`JournalIndexStore`] for
//! [`PgStore`].

use deadpool_postgres::GenericClient;
use futures_util::future::BoxFuture;
use tokio_postgres::error::SqlState;

use super::JournalIndexStore;
use crate::store::postgres::PgStore;
use crate::store::postgres::statements::{Filters, Params, execute, query, query_one};
use crate::store::{JournalRow, JournalScan, StoreError, StoreResult, TlogHead};

impl JournalIndexStore for PgStore {
    fn index_journal(&self, rows: Vec<JournalRow>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { add(&c, &rows).await })
    }

    fn journal_indexed_to(&self, replica: String) -> BoxFuture<'_, StoreResult<i64>> {
        self.run(move |c, _| async move { head(&c, &replica).await })
    }

    fn journal_rows(&self, scan: JournalScan) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.run(move |c, _| async move { page(&c, &scan).await })
    }

    fn journal_chain(
        &self,
        replica: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.run(move |c, _| async move { chain(&c, &replica, after_seq, limit).await })
    }

    fn journal_replicas(&self) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run(move |c, _| async move { replicas(&c).await })
    }

    fn publish_tlog_head(&self, replica: String, head: TlogHead) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { publish_head(&c, &replica, &head).await })
    }

    fn tlog_head(&self, replica: String) -> BoxFuture<'_, StoreResult<Option<TlogHead>>> {
        self.run(move |c, _| async move { tlog_head(&c, &replica).await })
    }

    fn prune_journal_index(
        &self,
        replica: String,
        through_seq: i64,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| async move { prune(&c, &replica, through_seq).await })
    }
}

pub(crate) async fn add<C: GenericClient>(tx: &C, rows: &[JournalRow]) -> StoreResult<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let replicas: Vec<&str> = rows.iter().map(|r| r.replica.as_str()).collect();
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    let times: Vec<&str> = rows.iter().map(|r| r.timestamp.as_str()).collect();
    let teams: Vec<&str> = rows.iter().map(|r| r.team_id.as_str()).collect();
    let lines: Vec<&str> = rows.iter().map(|r| r.line.as_str()).collect();
    let params: Params<'_> = &[&replicas, &seqs, &times, &teams, &lines];
    // A plain insert first: `ON CONFLICT` (speculative insertion) costs PostgreSQL about a third
    // more per row, and rows already there only come back when a replica restarts before its
    // last copy was acknowledged.
    match execute(tx, COPY, params).await {
        Err(StoreError::Postgres(e)) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            execute(tx, COPY_OR_SKIP, params).await?;
        }
        other => {
            other?;
        }
    }
    Ok(())
}

macro_rules! copy_rows {
    () => {
        "INSERT INTO journal_entries (replica, seq, timestamp, team_id, line)
         SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])"
    };
}
const COPY: &str = copy_rows!();
const COPY_OR_SKIP: &str = concat!(copy_rows!(), " ON CONFLICT (replica, seq) DO NOTHING");

pub(crate) async fn head<C: GenericClient>(c: &C, replica: &str) -> StoreResult<i64> {
    let row = query_one(
        c,
        "SELECT COALESCE(MAX(seq), 0) FROM journal_entries WHERE replica = $1",
        &[&replica],
    )
    .await?;
    Ok(row.try_get(0)?)
}

pub(crate) async fn page<C: GenericClient>(c: &C, s: &JournalScan) -> StoreResult<Vec<JournalRow>> {
    let limit = i64::from(s.limit.max(1));
    let mut f = Filters::default();
    let (past, order) = if s.descending {
        ("<", "timestamp DESC, replica DESC, seq DESC")
    } else {
        (">", "timestamp, replica, seq")
    };
    if let Some((ts, replica, seq)) = &s.after {
        let after = format!(
            "(timestamp, replica, seq) {past} ({}, {}, {})",
            f.bind(ts),
            f.bind(replica),
            f.bind(seq)
        );
        f.and(after);
    }
    f.given("team_id =", s.team_id.as_ref());
    f.given("replica =", s.replica.as_ref());
    f.given("timestamp >=", s.from.as_ref());
    f.given("timestamp <", s.to.as_ref());
    let sql = format!(
        "SELECT replica, seq, timestamp, team_id, line FROM journal_entries {}
         ORDER BY {order} LIMIT {}",
        f.where_clause(),
        f.bind(&limit)
    );
    let rows = query(c, &sql, &f.params).await?;
    rows.iter().map(row).collect()
}

pub(crate) async fn chain<C: GenericClient>(
    c: &C,
    replica: &str,
    after_seq: i64,
    limit: u32,
) -> StoreResult<Vec<JournalRow>> {
    let rows = query(
        c,
        "SELECT replica, seq, timestamp, team_id, line FROM journal_entries
         WHERE replica = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        &[&replica, &after_seq, &i64::from(limit.max(1))],
    )
    .await?;
    rows.iter().map(row).collect()
}

pub(crate) async fn replicas<C: GenericClient>(c: &C) -> StoreResult<Vec<String>> {
    let rows = query(
        c,
        "SELECT DISTINCT replica FROM journal_entries ORDER BY replica",
        &[],
    )
    .await?;
    rows.iter()
        .map(|r| r.try_get(0).map_err(StoreError::from))
        .collect()
}

fn row(r: &tokio_postgres::Row) -> StoreResult<JournalRow> {
    Ok(JournalRow {
        replica: r.try_get(0)?,
        seq: r.try_get(1)?,
        timestamp: r.try_get(2)?,
        team_id: r.try_get(3)?,
        line: r.try_get(4)?,
    })
}

pub(crate) async fn prune<C: GenericClient>(
    c: &C,
    replica: &str,
    through: i64,
) -> StoreResult<u64> {
    execute(
        c,
        "DELETE FROM journal_entries WHERE replica = $1 AND seq <= $2",
        &[&replica, &through],
    )
    .await
}

/// Keeps `note` as `replica`'s head unless a larger one is there already.
pub(crate) async fn publish_head<C: GenericClient>(
    c: &C,
    replica: &str,
    head: &TlogHead,
) -> StoreResult<()> {
    execute(
        c,
        "INSERT INTO journal_tlog_heads (replica, size, vkey, note) VALUES ($1, $2, $3, $4)
         ON CONFLICT (replica) DO UPDATE
         SET size = EXCLUDED.size, vkey = EXCLUDED.vkey, note = EXCLUDED.note
         WHERE journal_tlog_heads.size < EXCLUDED.size",
        &[&replica, &head.size, &head.vkey, &head.note],
    )
    .await
    .map(drop)
}

pub(crate) async fn tlog_head<C: GenericClient>(
    c: &C,
    replica: &str,
) -> StoreResult<Option<TlogHead>> {
    let rows = query(
        c,
        "SELECT size, vkey, note FROM journal_tlog_heads WHERE replica = $1",
        &[&replica],
    )
    .await?;
    rows.first()
        .map(|r| {
            Ok(TlogHead {
                size: r.try_get(0)?,
                vkey: r.try_get(1)?,
                note: r.try_get(2)?,
            })
        })
        .transpose()
}

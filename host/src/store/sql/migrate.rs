//! Schema migrations, run the same way on both back ends: each back end lists its own migrations
//! (`sqlite/migrations.rs`, `postgres/migrations.rs`), version `n` being the `n`-th, each one the
//! resources' DDL it runs (their `schema.rs`, in both dialects); this applies the missing ones in
//! one transaction and records each in `schema_version`. On PostgreSQL the
//! transaction first takes an advisory lock, so replicas starting together take turns (a second
//! one waits, then sees the work done).

use super::{Conn, Db, Sql, Tx, Value};
use crate::store::{StoreError, StoreResult, UnixMillis};

/// The advisory lock key migrations serialise on: "Sov" + "migr".
const MIGRATION_LOCK: i64 = 0x0053_6f76_6d69_6772;

const LOCK: Sql<'static> = Sql::postgres_only("SELECT pg_advisory_xact_lock($1)");

const EXISTS: Sql<'static> = Sql {
    sqlite: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table'
        AND name = 'schema_version')",
    postgres: "SELECT to_regclass('schema_version') IS NOT NULL",
};

const CURRENT: Sql<'static> = Sql::same("SELECT COALESCE(MAX(version), 0) FROM schema_version");

const CREATE: Sql<'static> = Sql {
    sqlite: "CREATE TABLE IF NOT EXISTS schema_version (
             version    INTEGER PRIMARY KEY,
             applied_at INTEGER NOT NULL
         ) STRICT;",
    postgres: "CREATE TABLE IF NOT EXISTS schema_version (
             version    BIGINT PRIMARY KEY,
             applied_at BIGINT NOT NULL
         )",
};

const RECORD: Sql<'static> = Sql {
    sqlite: "INSERT INTO schema_version (version, applied_at) VALUES (?1, ?2)",
    postgres: "INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)",
};

/// One migration: resources' DDL (`<resource>/schema.rs`), run in order.
pub(crate) type Migration = &'static [Sql<'static>];

/// The schema version a list of migrations ends at.
pub(crate) fn latest(scripts: &[Migration]) -> i64 {
    i64::try_from(scripts.len()).unwrap_or(i64::MAX)
}

/// The database's schema version (0 for an empty database).
pub(crate) async fn version(db: &impl Db) -> StoreResult<i64> {
    let exists = match db.query_opt(EXISTS, &[]).await? {
        Some(r) => r.bool(0)?,
        None => false,
    };
    if !exists {
        return Ok(0);
    }
    match db.query_opt(CURRENT, &[]).await? {
        Some(r) => r.i64(0),
        None => Ok(0),
    }
}

/// Applies `scripts` up to `target` (normally [`latest`]) in one transaction; returns the
/// version the database is at afterwards. Refuses a database newer than this build.
pub(crate) async fn migrate_to(
    c: &mut impl Conn,
    scripts: &[Migration],
    target: i64,
    now: UnixMillis,
) -> StoreResult<i64> {
    let tx = c.begin().await?;
    // Held until commit or rollback.
    tx.execute(LOCK, &[MIGRATION_LOCK.into()]).await?;
    tx.batch(CREATE).await?;
    let current = version(&tx).await?;
    let known = latest(scripts);
    if current > known {
        return Err(StoreError::SchemaTooNew {
            found: current,
            known,
        });
    }
    let mut at = current;
    for (i, script) in scripts.iter().enumerate() {
        let v = i64::try_from(i).unwrap_or(i64::MAX) + 1;
        if v <= current || v > target {
            continue;
        }
        for ddl in *script {
            tx.batch(*ddl).await?;
        }
        tx.execute(RECORD, &[Value::Int(v), now.into()]).await?;
        at = v;
    }
    tx.commit().await?;
    Ok(at)
}

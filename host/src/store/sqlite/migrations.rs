//! The SQLite schema as an ordered list of migrations. `schema_version` holds one row per applied
//! migration; opening a database applies the missing ones in one transaction, so a crash
//! mid-upgrade leaves the previous version intact. Never edit a published migration: add one.
//!
//! Each migration names the DDL it runs, which lives with its resource (`<resource>/schema.rs`,
//! both dialects side by side); the numbering is SQLite's own (PostgreSQL's first migration
//! created at once what SQLite had added in ten).

use rusqlite::Connection;

use crate::store::sql::migrate::{self, Migration};
use crate::store::sql::sqlite::finish;
use crate::store::{StoreResult, UnixMillis};
use crate::store::{
    budgets::schema as budgets, cert_identities::schema as cert_identities,
    documents::schema as documents, ingest_jobs::schema as ingest_jobs, keys::schema as keys,
    mcp_servers::schema as mcp_servers, responses::schema as responses, teams::schema as teams,
    usage::schema as usage, webhooks::schema as webhooks,
};

/// Migration `i` (0-based) brings the schema to version `i + 1`.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: teams, keys, budget counters and reservations, usage.
    &[teams::TABLE, keys::TABLE, budgets::TABLES, usage::TABLE],
    // 2: usage queries filter by team or key and a time range.
    &[usage::INDEXES],
    // 3: teams whose every request is sensitive (processed on local models only).
    &[teams::SENSITIVE_ONLY],
    // 4: the models a team may use (JSON array; empty: every model).
    &[teams::ALLOWED_MODELS],
    // 5: webhook subscriptions and their outbox (deliveries in order, attempts).
    &[webhooks::SUBSCRIPTIONS, webhooks::OUTBOX],
    // 6: webhook secret rotation: the previous secret keeps signing (a second signature) until
    // its grace ends.
    &[webhooks::PREVIOUS_SECRET],
    // 7: the document library (issue 15): documents per team and collection, their chunks with
    // provenance and vectors; files and vector stores. A team's deletion takes them with it.
    &[documents::TABLES],
    // 8: certificate identities (issue 16).
    &[cert_identities::TABLE],
    // 9: stored responses (issue 22, the Responses API).
    &[responses::TABLE],
    // 10: charges carried by journal entries (issue 19): the request each usage row charged, and
    // the marker (docs/STORE.md, "Charges ride the journal's fsync").
    &[usage::CHARGES_MARKER],
    // 11: the ingestion queue (issue 44): a job per upload with its bytes, state, progress and
    // lease; the teams' turns that make claims fair.
    &[ingest_jobs::TABLES],
    // 12: MCP upstream servers registered through the admin API and per-key tool allowlists
    // (issue 46), so they survive a restart and every replica serves them.
    &[mcp_servers::TABLES],
    // 13: vector-store file batches and the queue's jobs by collection (issue 44).
    &[ingest_jobs::FILE_BATCHES],
];

/// The schema version this build writes.
pub(crate) fn latest() -> i64 {
    migrate::latest(MIGRATIONS)
}

/// The database's schema version (0 for an empty file).
pub(crate) fn version(conn: &Connection) -> StoreResult<i64> {
    finish(migrate::version(&conn))
}

/// Applies migrations up to `target` (normally [`latest`]) in one transaction; returns the
/// version the database is at afterwards. Refuses a database newer than this build.
pub(crate) fn migrate_to(
    mut conn: &mut Connection,
    target: i64,
    now: UnixMillis,
) -> StoreResult<i64> {
    finish(migrate::migrate_to(&mut conn, MIGRATIONS, target, now))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::store::StoreError;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type IN ('table','index') AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn empty_database_upgrades_step_by_step_and_in_one_go_to_the_same_schema() {
        let mut stepwise = Connection::open_in_memory().unwrap();
        assert_eq!(version(&stepwise).unwrap(), 0);
        assert_eq!(migrate_to(&mut stepwise, 1, 1).unwrap(), 1);
        assert!(!tables(&stepwise).contains(&"usage_by_team".to_string()));
        assert_eq!(migrate_to(&mut stepwise, latest(), 2).unwrap(), latest());

        let mut direct = Connection::open_in_memory().unwrap();
        assert_eq!(migrate_to(&mut direct, latest(), 1).unwrap(), latest());
        assert_eq!(tables(&stepwise), tables(&direct));
        // Re-running is a no-op.
        assert_eq!(migrate_to(&mut direct, latest(), 3).unwrap(), latest());
        let rows: i64 = direct
            .query_row("SELECT COUNT(*) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, latest());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate_to(&mut conn, latest(), 1).unwrap();
        conn.execute(
            "INSERT INTO schema_version (version, applied_at) VALUES (?1, 0)",
            [latest() + 1],
        )
        .unwrap();
        assert!(matches!(
            migrate_to(&mut conn, latest(), 2),
            Err(StoreError::SchemaTooNew { .. })
        ));
    }
}

//! The PostgreSQL schema as an ordered list of migrations (numbered on their own, not SQLite's).
//! `schema_version` holds one row per applied migration. Connecting applies the missing ones in
//! one transaction that first takes a transaction-level advisory lock, so replicas starting at
//! once take turns: the second finds the version applied and does nothing. PostgreSQL DDL is
//! transactional, so a failure mid-upgrade leaves the previous version whole. Never edit a
//! published migration: add one.
//!
//! Each migration names the DDL it runs, which lives with its resource (`<resource>/schema.rs`,
//! both dialects side by side); `store::sql::migrate` is the one runner of both back ends. Text
//! columns that are ids or sort keys are `COLLATE "C"`, so ordering and grouping compare bytes as
//! SQLite does, whatever the database's default collation.

use deadpool_postgres::Object;

use crate::store::sql::migrate::{self, Migration};
use crate::store::sql::postgres::Pg;
use crate::store::{StoreResult, UnixMillis};
use crate::store::{
    budgets::schema as budgets, cert_identities::schema as cert_identities,
    documents::schema as documents, ingest_jobs::schema as ingest_jobs,
    journal_index::schema as journal_index, keys::schema as keys,
    mcp_servers::schema as mcp_servers, policies::schema as policies,
    responses::schema as responses, teams::schema as teams, usage::schema as usage,
    webhooks::schema as webhooks,
};

/// Migration `i` (0-based) brings the schema to version `i + 1`.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: the schema of SQLite's migrations 1–6, 8 and 9, at once: teams, keys, budget counters
    // and reservations, usage, webhooks and their outbox, certificate identities, stored
    // responses. (SQLite's migration 7, the document library, is migration 2.)
    &[
        teams::TABLE,
        keys::TABLE,
        budgets::TABLES,
        usage::TABLE,
        webhooks::SUBSCRIPTIONS,
        webhooks::OUTBOX,
        cert_identities::TABLE,
        responses::TABLE,
    ],
    // 2: the document library (`DocumentStore`, SQLite's migration 7).
    &[documents::TABLES],
    // 3: policy versions replicas share (`PolicyStore`).
    &[policies::TABLES],
    // 4: the index of every replica's journal chain (`JournalIndexStore`).
    &[journal_index::ENTRIES],
    // 5: each replica's latest signed tree head of its transparency log.
    &[journal_index::TLOG_HEADS],
    // 6: the ingestion queue (issue 44; SQLite's migration 11).
    &[ingest_jobs::TABLES],
    // 7: MCP servers registered through the admin API and key allowlists (issue 46; SQLite's
    // migration 12).
    &[mcp_servers::TABLES],
    // 8: vector-store file batches and the queue's jobs by collection (issue 44; SQLite's 13).
    &[ingest_jobs::FILE_BATCHES],
];

/// The schema version this build writes.
pub(crate) fn latest() -> i64 {
    migrate::latest(MIGRATIONS)
}

/// The database's schema version (0 for an empty database).
pub(crate) async fn version(c: Object) -> StoreResult<i64> {
    migrate::version(&Pg(c)).await
}

/// Applies migrations up to `target` (normally [`latest`]) in one transaction, under the
/// advisory lock; returns the version the database is at afterwards. Refuses a database newer
/// than this build.
pub(crate) async fn migrate_to(c: Object, target: i64, now: UnixMillis) -> StoreResult<i64> {
    migrate::migrate_to(&mut Pg(c), MIGRATIONS, target, now).await
}

//! The policy-version tables, PostgreSQL's alone (SQLite keeps no versions), as its migrations
//! create them (a published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// PostgreSQL's migration 3: router and guardrail versions uploaded through the admin API,
/// whole (component bytes, document, pool mode, settings), and which one of each kind is active.
pub(crate) const TABLES: Sql<'static> = Sql::postgres_only(
    r#"
    CREATE TABLE policy_versions (
        id         TEXT COLLATE "C" PRIMARY KEY,
        kind       TEXT NOT NULL CHECK (kind IN ('router', 'guardrail')),
        component  BYTEA NOT NULL,
        document   TEXT,
        pool       TEXT,
        settings   TEXT,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX policy_versions_by_kind ON policy_versions(kind, created_at, id);

    CREATE TABLE policy_active (
        kind TEXT PRIMARY KEY,
        id   TEXT COLLATE "C" NOT NULL REFERENCES policy_versions(id)
    );
    "#,
);

//! The `teams` table in both dialects, side by side, as the migrations create it
//! (`sqlite/migrations.rs`, `postgres/migrations.rs` list them in order; a published one is never
//! edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Teams (SQLite's migration 1, PostgreSQL's 1: PostgreSQL's has the columns SQLite added in
/// its migrations 3 and 4).
pub(crate) const TABLE: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE teams (
        id                TEXT PRIMARY KEY,
        name              TEXT NOT NULL,
        plan              TEXT NOT NULL,
        token_cap_per_day INTEGER,
        allowed_regions   TEXT NOT NULL,          -- JSON array of strings
        created_at        INTEGER NOT NULL,       -- Unix ms
        updated_at        INTEGER NOT NULL
    ) STRICT;
    ",
    postgres: r#"
    CREATE TABLE teams (
        id                TEXT COLLATE "C" PRIMARY KEY,
        name              TEXT NOT NULL,
        plan              TEXT NOT NULL,
        token_cap_per_day BIGINT,
        allowed_regions   TEXT NOT NULL,              -- JSON array of strings
        sensitive_only    BOOLEAN NOT NULL DEFAULT FALSE,
        allowed_models    TEXT NOT NULL DEFAULT '[]', -- JSON array of model ids
        created_at        BIGINT NOT NULL,            -- Unix ms
        updated_at        BIGINT NOT NULL
    );
    "#,
};

/// SQLite's migration 3: teams whose every request is sensitive (processed on local models
/// only).
pub(crate) const SENSITIVE_ONLY: Sql<'static> = Sql::sqlite_only(
    r"
    ALTER TABLE teams ADD COLUMN sensitive_only INTEGER NOT NULL DEFAULT 0;
    ",
);

/// SQLite's migration 4: the models a team may use (JSON array; empty: every model).
pub(crate) const ALLOWED_MODELS: Sql<'static> = Sql::sqlite_only(
    r"
    ALTER TABLE teams ADD COLUMN allowed_models TEXT NOT NULL DEFAULT '[]';
    ",
);

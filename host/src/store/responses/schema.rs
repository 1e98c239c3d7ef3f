//! The `responses` table in both dialects, side by side, as the migrations create it (a
//! published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Stored responses (issue 22): the turn's messages after redaction and the response object,
/// read within the team; purged by age (SQLite's migration 9, PostgreSQL's 1).
pub(crate) const TABLE: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE responses (
        id          TEXT PRIMARY KEY,             -- resp_ + UUIDv7
        team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        key_id      TEXT NOT NULL,
        previous_id TEXT,
        input       TEXT NOT NULL,                -- JSON array of chat messages
        response    TEXT NOT NULL,                -- JSON response object
        created_at  INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX responses_by_age ON responses(created_at);
    ",
    postgres: r#"
    CREATE TABLE responses (
        id          TEXT COLLATE "C" PRIMARY KEY,     -- resp_ + UUIDv7
        team_id     TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        key_id      TEXT NOT NULL,
        previous_id TEXT,
        input       TEXT NOT NULL,                    -- JSON array of chat messages, as written
        response    TEXT NOT NULL,                    -- JSON response object, as written
        created_at  BIGINT NOT NULL
    );
    CREATE INDEX responses_by_age ON responses(created_at);
    "#,
};

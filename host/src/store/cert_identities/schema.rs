//! The `cert_identities` table in both dialects, side by side, as the migrations create it (a
//! published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Certificate identities (issue 16): a client certificate's matcher (SAN URI, SAN DNS name,
/// key pin) mapped to a team and role; one identity per matcher; a team's deletion takes them
/// (SQLite's migration 8, PostgreSQL's 1).
pub(crate) const TABLE: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE cert_identities (
        id          TEXT PRIMARY KEY,             -- cid_ + UUIDv7
        name        TEXT NOT NULL,
        team_id     TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        role        TEXT NOT NULL,
        match_kind  TEXT NOT NULL,                -- uri | dns | spki_sha256
        match_value TEXT NOT NULL,
        source      TEXT NOT NULL,                -- api | config
        created_at  INTEGER NOT NULL,
        UNIQUE (match_kind, match_value)
    ) STRICT;
    ",
    postgres: r#"
    CREATE TABLE cert_identities (
        id          TEXT COLLATE "C" PRIMARY KEY,     -- cid_ + UUIDv7
        name        TEXT NOT NULL,
        team_id     TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        role        TEXT NOT NULL,
        match_kind  TEXT NOT NULL,                    -- uri | dns | spki_sha256
        match_value TEXT NOT NULL,
        source      TEXT NOT NULL,                    -- api | config
        created_at  BIGINT NOT NULL,
        CONSTRAINT cert_identities_matcher UNIQUE (match_kind, match_value)
    );
    "#,
};

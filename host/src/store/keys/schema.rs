//! The `keys` table in both dialects, side by side, as the migrations create it (a published
//! one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Keys and their index by team (migration 1 of both).
pub(crate) const TABLE: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE keys (
        id           TEXT PRIMARY KEY,
        team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        name         TEXT,
        hash         BLOB NOT NULL UNIQUE,        -- SHA-256 of the secret; the secret is not kept
        prefix       TEXT NOT NULL,
        role         TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        last_used_at INTEGER,
        expires_at   INTEGER,
        revoked_at   INTEGER,
        rotated_to   TEXT,
        grace_until  INTEGER,                     -- set by rotation: valid while now < grace_until
        ip_allowlist TEXT NOT NULL,               -- JSON array of CIDRs
        rpm          INTEGER,
        tpd          INTEGER
    ) STRICT;
    CREATE INDEX keys_by_team ON keys(team_id, created_at);
    ",
    postgres: r#"
    CREATE TABLE keys (
        id           TEXT COLLATE "C" PRIMARY KEY,
        team_id      TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        name         TEXT,
        hash         BYTEA NOT NULL UNIQUE,           -- SHA-256 of the secret; the secret is not kept
        prefix       TEXT NOT NULL,
        role         TEXT NOT NULL,
        created_at   BIGINT NOT NULL,
        last_used_at BIGINT,
        expires_at   BIGINT,
        revoked_at   BIGINT,
        rotated_to   TEXT COLLATE "C",
        grace_until  BIGINT,                          -- set by rotation: valid while now < grace_until
        ip_allowlist TEXT NOT NULL,                   -- JSON array of CIDRs
        rpm          BIGINT,
        tpd          BIGINT
    );
    CREATE INDEX keys_by_team ON keys(team_id, created_at);
    "#,
};

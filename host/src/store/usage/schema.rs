//! The `usage` table in both dialects, side by side, as the migrations create it (a published
//! one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Usage rows (migration 1 of both; PostgreSQL's with the indexes SQLite added in its
/// migration 2).
pub(crate) const TABLE: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE usage (
        id           INTEGER PRIMARY KEY,
        at           INTEGER NOT NULL,
        team_id      TEXT NOT NULL,               -- no foreign key: history outlives teams
        key_id       TEXT NOT NULL,
        actor        TEXT NOT NULL,
        model        TEXT NOT NULL,
        tokens_in    INTEGER NOT NULL,
        tokens_out   INTEGER NOT NULL,
        spend_micros INTEGER NOT NULL
    ) STRICT;
    ",
    postgres: r#"
    CREATE TABLE usage (
        id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        at           BIGINT NOT NULL,
        team_id      TEXT COLLATE "C" NOT NULL,       -- no foreign key: history outlives teams
        key_id       TEXT COLLATE "C" NOT NULL,
        actor        TEXT COLLATE "C" NOT NULL,
        model        TEXT COLLATE "C" NOT NULL,
        tokens_in    BIGINT NOT NULL,
        tokens_out   BIGINT NOT NULL,
        spend_micros BIGINT NOT NULL
    );
    CREATE INDEX usage_by_team ON usage(team_id, at);
    CREATE INDEX usage_by_key ON usage(key_id, at);
    "#,
};

/// SQLite's migration 2: usage queries filter by team or key and a time range.
pub(crate) const INDEXES: Sql<'static> = Sql::sqlite_only(
    r"
    CREATE INDEX usage_by_team ON usage(team_id, at);
    CREATE INDEX usage_by_key ON usage(key_id, at);
    ",
);

/// SQLite's migration 10: charges carried by journal entries (issue 19): the request each usage
/// row charged, and the marker from which start-up looks in the journal for charges a crash took
/// from the store (docs/STORE.md, "Charges ride the journal's fsync"). PostgreSQL has neither:
/// its charges do not ride the journal.
pub(crate) const CHARGES_MARKER: Sql<'static> = Sql::sqlite_only(
    r"
    ALTER TABLE usage ADD COLUMN request_id TEXT;
    CREATE INDEX usage_by_request ON usage(request_id) WHERE request_id IS NOT NULL;
    CREATE TABLE charges_marker (
        id       INTEGER PRIMARY KEY CHECK (id = 1),
        from_seq INTEGER NOT NULL                 -- journal seq from which charges may be missing
    ) STRICT;
    ",
);

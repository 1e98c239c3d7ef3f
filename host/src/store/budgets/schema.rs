//! The budget counters and reservations in both dialects, side by side, as the migrations
//! create them (a published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// `budgets` (one counter row per scope), `reservations` and their scopes (migration 1 of
/// both).
pub(crate) const TABLES: Sql<'static> = Sql {
    sqlite: r"
    -- One row per team ('team:<id>') and per key ('key:<id>'); limit NULL is unlimited.
    CREATE TABLE budgets (
        scope           TEXT PRIMARY KEY,
        limit_micros    INTEGER,
        spent_micros    INTEGER NOT NULL DEFAULT 0,
        reserved_micros INTEGER NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0)
    ) STRICT;

    CREATE TABLE reservations (
        id            INTEGER PRIMARY KEY,
        amount_micros INTEGER NOT NULL CHECK (amount_micros >= 0),
        created_at    INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE reservation_scopes (
        reservation_id INTEGER NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
        scope          TEXT NOT NULL,
        PRIMARY KEY (reservation_id, scope)
    ) STRICT;
    ",
    postgres: r#"
    -- One row per team ('team:<id>') and per key ('key:<id>'); limit NULL is unlimited.
    CREATE TABLE budgets (
        scope           TEXT COLLATE "C" PRIMARY KEY,
        limit_micros    BIGINT,
        spent_micros    BIGINT NOT NULL DEFAULT 0,
        reserved_micros BIGINT NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0)
    );

    CREATE TABLE reservations (
        id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        amount_micros BIGINT NOT NULL CHECK (amount_micros >= 0),
        created_at    BIGINT NOT NULL
    );
    CREATE TABLE reservation_scopes (
        reservation_id BIGINT NOT NULL REFERENCES reservations(id) ON DELETE CASCADE,
        scope          TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (reservation_id, scope)
    );
    "#,
};

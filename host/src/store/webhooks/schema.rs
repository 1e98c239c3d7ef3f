//! The webhook tables in both dialects, side by side, as the migrations create them (a published
//! one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Subscriptions (SQLite's migration 5, PostgreSQL's 1: PostgreSQL's has the rotation columns
/// SQLite added in its migration 6, and the delivery lease, which only replicas need).
pub(crate) const SUBSCRIPTIONS: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE webhooks (
        id          TEXT PRIMARY KEY,
        url         TEXT NOT NULL,
        events      TEXT NOT NULL,                -- JSON array of event kinds ('*': all)
        team_id     TEXT,                         -- only this team's events; NULL: all teams'
        shaper      TEXT,                         -- shaper policy name; NULL: the event as is
        secret      TEXT NOT NULL,                -- whsec_…: kept, deliveries are signed with it
        description TEXT,
        created_at  INTEGER NOT NULL
    ) STRICT;
    ",
    postgres: r#"
    CREATE TABLE webhooks (
        id              TEXT COLLATE "C" PRIMARY KEY,
        url             TEXT NOT NULL,
        events          TEXT NOT NULL,                -- JSON array of event kinds ('*': all)
        team_id         TEXT COLLATE "C",             -- only this team's events; NULL: all teams'
        shaper          TEXT,                         -- shaper policy name; NULL: the event as is
        secret          TEXT NOT NULL,                -- whsec_…: kept, deliveries are signed with it
        description     TEXT,
        created_at      BIGINT NOT NULL,
        previous_secret TEXT,                         -- after a rotation, signs until previous_until
        previous_until  BIGINT,
        lease_owner     TEXT,                         -- the replica delivering the outbox …
        lease_until     BIGINT                        -- … until then (Store::claim_webhook)
    );
    "#,
};

/// The outbox: deliveries in order, their attempts (SQLite's migration 5, PostgreSQL's 1).
pub(crate) const OUTBOX: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE webhook_deliveries (
        seq             INTEGER PRIMARY KEY,      -- enqueue order; per subscription, send order
        webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event_id        TEXT NOT NULL,
        kind            TEXT NOT NULL,
        payload         TEXT NOT NULL,            -- the event, JSON in the seed's shape
        state           TEXT NOT NULL,            -- pending | delivered | dead | skipped
        attempts        INTEGER NOT NULL,
        created_at      INTEGER NOT NULL,
        age_from        INTEGER NOT NULL,         -- creation or last re-drive
        next_attempt_at INTEGER NOT NULL,
        last_status     INTEGER,
        last_error      TEXT,
        done_at         INTEGER
    ) STRICT;
    CREATE INDEX webhook_deliveries_by_state ON webhook_deliveries(webhook_id, state, seq);

    CREATE TABLE webhook_attempts (
        id          INTEGER PRIMARY KEY,
        seq         INTEGER NOT NULL REFERENCES webhook_deliveries(seq) ON DELETE CASCADE,
        at          INTEGER NOT NULL,
        duration_ms INTEGER NOT NULL,
        status      INTEGER,
        error       TEXT
    ) STRICT;
    CREATE INDEX webhook_attempts_by_seq ON webhook_attempts(seq);
    ",
    postgres: r#"
    CREATE TABLE webhook_deliveries (
        seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- enqueue (= commit) order
        webhook_id      TEXT COLLATE "C" NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
        event_id        TEXT NOT NULL,
        kind            TEXT NOT NULL,
        payload         TEXT NOT NULL,                -- the event, JSON in the seed's shape
        state           TEXT NOT NULL,                -- pending | delivered | dead | skipped
        attempts        BIGINT NOT NULL,
        created_at      BIGINT NOT NULL,
        age_from        BIGINT NOT NULL,              -- creation or last re-drive
        next_attempt_at BIGINT NOT NULL,
        last_status     BIGINT,
        last_error      TEXT,
        done_at         BIGINT
    );
    CREATE INDEX webhook_deliveries_by_state ON webhook_deliveries(webhook_id, state, seq);

    CREATE TABLE webhook_attempts (
        id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        seq         BIGINT NOT NULL REFERENCES webhook_deliveries(seq) ON DELETE CASCADE,
        at          BIGINT NOT NULL,
        duration_ms BIGINT NOT NULL,
        status      BIGINT,
        error       TEXT
    );
    CREATE INDEX webhook_attempts_by_seq ON webhook_attempts(seq);
    "#,
};

/// SQLite's migration 6: webhook secret rotation: the previous secret keeps signing (a second
/// signature) until its grace ends.
pub(crate) const PREVIOUS_SECRET: Sql<'static> = Sql::sqlite_only(
    r"
    ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
    ALTER TABLE webhooks ADD COLUMN previous_until INTEGER;
    ",
);

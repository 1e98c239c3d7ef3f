//! The SQLite schema as an ordered list of migrations. `schema_version` holds one row per applied
//! migration; opening a database applies the missing ones in one transaction, so a crash
//! mid-upgrade leaves the previous version intact. Never edit a published migration: add one.
//!
//! The two schemas stay two files: they are two languages' DDL (SQLite's `STRICT` tables and row
//! ids, PostgreSQL's identities, collations and named constraints), numbered on their own, and a
//! published migration is never rewritten.

use rusqlite::Connection;

use crate::store::sql::migrate;
use crate::store::sql::sqlite::finish;
use crate::store::{StoreResult, UnixMillis};

/// Migration `i` (0-based) brings the schema to version `i + 1`.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: teams, keys, budget counters and reservations, usage.
    r"
    CREATE TABLE teams (
        id                TEXT PRIMARY KEY,
        name              TEXT NOT NULL,
        plan              TEXT NOT NULL,
        token_cap_per_day INTEGER,
        allowed_regions   TEXT NOT NULL,          -- JSON array of strings
        created_at        INTEGER NOT NULL,       -- Unix ms
        updated_at        INTEGER NOT NULL
    ) STRICT;

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
    // 2: usage queries filter by team or key and a time range.
    r"
    CREATE INDEX usage_by_team ON usage(team_id, at);
    CREATE INDEX usage_by_key ON usage(key_id, at);
    ",
    // 3: teams whose every request is sensitive (processed on local models only).
    r"
    ALTER TABLE teams ADD COLUMN sensitive_only INTEGER NOT NULL DEFAULT 0;
    ",
    // 4: the models a team may use (JSON array; empty: every model).
    r"
    ALTER TABLE teams ADD COLUMN allowed_models TEXT NOT NULL DEFAULT '[]';
    ",
    // 5: webhook subscriptions and their outbox (deliveries in order, attempts).
    r"
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
    // 6: webhook secret rotation: the previous secret keeps signing (a second signature) until
    // its grace ends.
    r"
    ALTER TABLE webhooks ADD COLUMN previous_secret TEXT;
    ALTER TABLE webhooks ADD COLUMN previous_until INTEGER;
    ",
    // 7: the document library (issue 15): documents per team and collection, their chunks with
    // provenance and vectors; files and vector stores. A team's deletion takes them with it.
    r"
    CREATE TABLE documents (
        id         TEXT PRIMARY KEY,              -- doc_ + UUIDv7: orders by creation
        team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        collection TEXT NOT NULL,
        filename   TEXT NOT NULL,
        kind       TEXT NOT NULL,
        bytes      INTEGER NOT NULL,
        sha256     TEXT NOT NULL,
        pages      INTEGER,
        chunks     INTEGER NOT NULL,
        metadata   TEXT NOT NULL,                 -- JSON object
        model      TEXT NOT NULL,                 -- the embedding model of its vectors
        file_id    TEXT NOT NULL DEFAULT '',      -- the source file (vector stores), else ''
        created_at INTEGER NOT NULL,
        UNIQUE (team_id, collection, sha256, file_id)
    ) STRICT;
    CREATE INDEX documents_by_team ON documents(team_id, id);

    CREATE TABLE document_chunks (
        id          INTEGER PRIMARY KEY,
        document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        ordinal     INTEGER NOT NULL,
        page        INTEGER,
        paragraph   INTEGER NOT NULL,
        text        TEXT NOT NULL,
        vector      BLOB NOT NULL
    ) STRICT;
    CREATE INDEX document_chunks_by_document ON document_chunks(document_id, ordinal);

    -- The OpenAI-compatible surface: files kept until attached, vector stores (= collections).
    CREATE TABLE files (
        id           TEXT PRIMARY KEY,
        team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        filename     TEXT NOT NULL,
        purpose      TEXT NOT NULL,
        content_type TEXT,
        bytes        INTEGER NOT NULL,
        data         BLOB NOT NULL,
        created_at   INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX files_by_team ON files(team_id, id);

    CREATE TABLE vector_stores (
        id         TEXT PRIMARY KEY,
        team_id    TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        name       TEXT NOT NULL,
        metadata   TEXT NOT NULL,
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX vector_stores_by_team ON vector_stores(team_id, id);
    ",
    // 8: certificate identities (issue 16): a client certificate's matcher (SAN URI, SAN DNS name,
    // key pin) mapped to a team and role; one identity per matcher; a team's deletion takes them.
    r"
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
    // 9: stored responses (issue 22, the Responses API): the turn's messages after redaction and
    // the response object, read within the team; purged by age (`[responses] retention_hours`).
    r"
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
    // 10: charges carried by journal entries (issue 19): the request each usage row charged, and
    // the marker from which start-up looks in the journal for charges a crash took from the
    // store (docs/STORE.md, "Charges ride the journal's fsync").
    r"
    ALTER TABLE usage ADD COLUMN request_id TEXT;
    CREATE INDEX usage_by_request ON usage(request_id) WHERE request_id IS NOT NULL;
    CREATE TABLE charges_marker (
        id       INTEGER PRIMARY KEY CHECK (id = 1),
        from_seq INTEGER NOT NULL                 -- journal seq from which charges may be missing
    ) STRICT;
    ",
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

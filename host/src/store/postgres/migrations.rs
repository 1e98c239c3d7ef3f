//! The PostgreSQL schema as an ordered list of migrations (numbered on their own, not SQLite's).
//! `schema_version` holds one row per applied migration. Connecting applies the missing ones in
//! one transaction that first takes a transaction-level advisory lock, so replicas starting at
//! once take turns: the second finds the version applied and does nothing. PostgreSQL DDL is
//! transactional, so a failure mid-upgrade leaves the previous version whole. Never edit a
//! published migration: add one.
//!
//! The two schemas stay two files (`sqlite/migrations.rs`): two languages' DDL, numbered on their
//! own; `store::sql::migrate` is the one runner of both.

use deadpool_postgres::Object;

use crate::store::sql::migrate;
use crate::store::sql::postgres::Pg;
use crate::store::{StoreResult, UnixMillis};

/// Migration `i` (0-based) brings the schema to version `i + 1`.
///
/// Text columns that are ids or sort keys are `COLLATE "C"`, so ordering and grouping compare
/// bytes as SQLite does, whatever the database's default collation.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: the schema of SQLite's migrations 1–6, 8 and 9, at once: teams, keys, budget counters
    // and reservations, usage, webhooks and their outbox, certificate identities, stored
    // responses. (SQLite's migration 7, the document library, is migration 2.)
    r#"
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
    // 2: the document library (`DocumentStore`, SQLite's migration 7): documents per team and
    // collection (one per bytes and source file: the unique constraint decides between replicas
    // uploading the same bytes at once), their chunks with provenance and vectors (little-endian
    // f32 bytes; the search index is rebuilt from them in memory, no pgvector), files and vector
    // stores. A team's deletion takes them all with it.
    r#"
    CREATE TABLE documents (
        id         TEXT COLLATE "C" PRIMARY KEY,      -- doc_ + UUIDv7: orders by creation
        team_id    TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        collection TEXT COLLATE "C" NOT NULL,
        filename   TEXT NOT NULL,
        kind       TEXT NOT NULL,
        bytes      BIGINT NOT NULL,
        sha256     TEXT COLLATE "C" NOT NULL,
        pages      BIGINT,
        chunks     BIGINT NOT NULL,
        metadata   TEXT NOT NULL,                     -- JSON object, as written
        model      TEXT COLLATE "C" NOT NULL,         -- the embedding model of its vectors
        file_id    TEXT COLLATE "C" NOT NULL DEFAULT '', -- the source file (vector stores), else ''
        created_at BIGINT NOT NULL,
        CONSTRAINT documents_identity UNIQUE (team_id, collection, sha256, file_id)
    );
    CREATE INDEX documents_by_team ON documents(team_id, id);

    CREATE TABLE document_chunks (
        id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- insertion order
        document_id TEXT COLLATE "C" NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        ordinal     BIGINT NOT NULL,
        page        BIGINT,
        paragraph   BIGINT NOT NULL,
        text        TEXT NOT NULL,
        vector      BYTEA NOT NULL
    );
    CREATE INDEX document_chunks_by_document ON document_chunks(document_id, ordinal);

    -- The OpenAI-compatible surface: files kept until deleted, vector stores (= collections).
    CREATE TABLE files (
        id           TEXT COLLATE "C" PRIMARY KEY,
        team_id      TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        filename     TEXT NOT NULL,
        purpose      TEXT NOT NULL,
        content_type TEXT,
        bytes        BIGINT NOT NULL,
        data         BYTEA NOT NULL,
        created_at   BIGINT NOT NULL
    );
    CREATE INDEX files_by_team ON files(team_id, id);

    CREATE TABLE vector_stores (
        id         TEXT COLLATE "C" PRIMARY KEY,
        team_id    TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        name       TEXT NOT NULL,
        metadata   TEXT NOT NULL,                     -- JSON object, as written
        created_at BIGINT NOT NULL
    );
    CREATE INDEX vector_stores_by_team ON vector_stores(team_id, id);
    "#,
    // 3: policy versions replicas share (`Store::save_policy`): router versions and guardrail
    // versions uploaded through the admin API, whole (component bytes, document, pool mode,
    // settings), and which one of each kind is active.
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
    // 4: the index of every replica's journal chain (`Store::index_journal`): one row per entry,
    // the line as written, for activity-log queries and verification across replicas.
    r#"
    CREATE TABLE journal_entries (
        replica   TEXT COLLATE "C" NOT NULL,
        seq       BIGINT NOT NULL,
        timestamp TEXT COLLATE "C" NOT NULL,           -- ISO 8601 UTC, fixed width: orders as text
        team_id   TEXT COLLATE "C" NOT NULL,
        line      TEXT NOT NULL,
        PRIMARY KEY (replica, seq)
    );
    CREATE INDEX journal_entries_by_time ON journal_entries(timestamp, replica, seq);
    CREATE INDEX journal_entries_by_team ON journal_entries(team_id, timestamp, replica, seq);
    "#,
    // 5: each replica's latest signed tree head of its transparency log (`Store::publish_tlog_head`),
    // so any replica can prove any replica's entries (docs/JOURNAL.md, "Replicas").
    r#"
    CREATE TABLE journal_tlog_heads (
        replica TEXT COLLATE "C" PRIMARY KEY,
        size    BIGINT NOT NULL,
        vkey    TEXT NOT NULL,                         -- the note verifier key of its signer
        note    TEXT NOT NULL
    );
    "#,
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

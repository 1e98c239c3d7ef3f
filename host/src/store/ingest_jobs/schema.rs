//! The ingestion queue's tables in both dialects, side by side, as the migrations create them
//! (a published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Ingestion jobs (issue 44; SQLite's migration 11, PostgreSQL's 6): one row per uploaded
/// document until it is ingested, its bytes kept until it ends (then emptied); `ingest_turns`
/// is when each team was last served (a number that grows with each claim), which makes claims
/// fair across teams. A team's deletion takes its jobs with it.
pub(crate) const TABLES: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE ingest_jobs (
        id           TEXT PRIMARY KEY,            -- doc_ + UUIDv7: the document it becomes
        team_id      TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        collection   TEXT NOT NULL,
        filename     TEXT NOT NULL,
        content_type TEXT,
        metadata     TEXT NOT NULL,               -- JSON object
        file_id      TEXT NOT NULL DEFAULT '',    -- the source file (vector stores), else ''
        sha256       TEXT NOT NULL,
        key_id       TEXT NOT NULL,
        actor        TEXT NOT NULL,
        request_id   TEXT NOT NULL,
        bytes        INTEGER NOT NULL,
        data         BLOB NOT NULL,               -- the upload; empty once the job ended
        state        TEXT NOT NULL CHECK (state IN ('queued','running','completed','failed','cancelled')),
        owner        TEXT,                        -- the replica holding the lease …
        lease_until  INTEGER,                     -- … until then
        attempts     INTEGER NOT NULL DEFAULT 0,
        pages        INTEGER,
        pages_done   INTEGER NOT NULL DEFAULT 0,
        chunks       INTEGER,
        chunks_done  INTEGER NOT NULL DEFAULT 0,
        error_status INTEGER,                     -- a failure in the OpenAI error shape
        error_type   TEXT,
        error_code   TEXT,
        error_message TEXT,
        created_at   INTEGER NOT NULL,
        finished_at  INTEGER
    ) STRICT;
    CREATE INDEX ingest_jobs_waiting ON ingest_jobs(state, created_at);
    CREATE INDEX ingest_jobs_by_team ON ingest_jobs(team_id, state);

    CREATE TABLE ingest_turns (
        team_id TEXT PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
        turn    INTEGER NOT NULL
    ) STRICT;
    ",
    postgres: r#"
    CREATE TABLE ingest_jobs (
        id           TEXT COLLATE "C" PRIMARY KEY,    -- doc_ + UUIDv7: the document it becomes
        team_id      TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        collection   TEXT COLLATE "C" NOT NULL,
        filename     TEXT NOT NULL,
        content_type TEXT,
        metadata     TEXT NOT NULL,                   -- JSON object, as written
        file_id      TEXT COLLATE "C" NOT NULL DEFAULT '', -- the source file (vector stores), else ''
        sha256       TEXT COLLATE "C" NOT NULL,
        key_id       TEXT NOT NULL,
        actor        TEXT NOT NULL,
        request_id   TEXT NOT NULL,
        bytes        BIGINT NOT NULL,
        data         BYTEA NOT NULL,                  -- the upload; empty once the job ended
        state        TEXT NOT NULL CHECK (state IN ('queued','running','completed','failed','cancelled')),
        owner        TEXT,                            -- the replica holding the lease …
        lease_until  BIGINT,                          -- … until then
        attempts     BIGINT NOT NULL DEFAULT 0,
        pages        BIGINT,
        pages_done   BIGINT NOT NULL DEFAULT 0,
        chunks       BIGINT,
        chunks_done  BIGINT NOT NULL DEFAULT 0,
        error_status BIGINT,                          -- a failure in the OpenAI error shape
        error_type   TEXT,
        error_code   TEXT,
        error_message TEXT,
        created_at   BIGINT NOT NULL,
        finished_at  BIGINT
    );
    CREATE INDEX ingest_jobs_waiting ON ingest_jobs(state, created_at);
    CREATE INDEX ingest_jobs_by_team ON ingest_jobs(team_id, state);

    CREATE TABLE ingest_turns (
        team_id TEXT COLLATE "C" PRIMARY KEY REFERENCES teams(id) ON DELETE CASCADE,
        turn    BIGINT NOT NULL
    );
    "#,
};

/// Vector-store file batches (issue 44; SQLite's migration 13, PostgreSQL's 8): the files a
/// batch attached and whether it was cancelled. Its files' states are their jobs' (or their
/// stored documents'), so a batch keeps no counts of its own. A store's (or team's) deletion
/// takes its batches with it.
pub(crate) const FILE_BATCHES: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE vector_store_file_batches (
        id              TEXT PRIMARY KEY,         -- vsfb_ + UUIDv7
        team_id         TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        vector_store_id TEXT NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
        file_ids        TEXT NOT NULL,            -- JSON array of the batch's file ids
        cancelled       INTEGER NOT NULL DEFAULT 0,
        created_at      INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX ingest_jobs_by_collection ON ingest_jobs(team_id, collection, file_id);
    ",
    postgres: r#"
    CREATE TABLE vector_store_file_batches (
        id              TEXT COLLATE "C" PRIMARY KEY, -- vsfb_ + UUIDv7
        team_id         TEXT COLLATE "C" NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
        vector_store_id TEXT COLLATE "C" NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
        file_ids        TEXT NOT NULL,                -- JSON array of the batch's file ids
        cancelled       BOOLEAN NOT NULL DEFAULT FALSE,
        created_at      BIGINT NOT NULL
    );
    CREATE INDEX ingest_jobs_by_collection ON ingest_jobs(team_id, collection, file_id);
    "#,
};

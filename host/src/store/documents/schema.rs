//! The document library's tables in both dialects, side by side, as the migrations create them
//! (a published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// Documents per team and collection, their chunks with provenance and vectors, files and
/// vector stores (SQLite's migration 7, PostgreSQL's 2). A team's deletion takes them with it.
/// PostgreSQL: one document per bytes and source file is a named constraint (it decides between
/// replicas uploading the same bytes at once); vectors are little-endian f32 bytes, the index is
/// rebuilt from them in memory (no pgvector).
pub(crate) const TABLES: Sql<'static> = Sql {
    sqlite: r"
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
    postgres: r#"
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
};

//! The `mcp_servers` and `mcp_key_tools` tables in both dialects, side by side, as the migrations
//! create them (a published one is never edited: a change is a new constant and a new migration).

use crate::store::sql::Sql;

/// MCP upstream servers registered through the admin API (issue 46): one row per server name,
/// its teams, per-team tool lists and headers as JSON text; the credentials are kept because
/// the gateway sends them upstream (as webhook secrets are), and the API never shows them. Per
/// key, the tool allowlist; a key's deletion takes it (SQLite's migration 12, PostgreSQL's 7).
pub(crate) const TABLES: Sql<'static> = Sql {
    sqlite: r"
    CREATE TABLE mcp_servers (
        name       TEXT PRIMARY KEY,
        id         TEXT NOT NULL UNIQUE,          -- mcp_ + UUIDv7: this registration
        url        TEXT NOT NULL,
        teams      TEXT NOT NULL,                 -- JSON array of team ids
        tools      TEXT NOT NULL,                 -- JSON object: team id -> array of tool names
        bearer     TEXT,                          -- kept: sent upstream, never shown
        headers    TEXT NOT NULL,                 -- JSON object: header -> value; never shown
        created_at INTEGER NOT NULL
    ) STRICT;
    CREATE TABLE mcp_key_tools (
        key_id     TEXT PRIMARY KEY REFERENCES keys(id) ON DELETE CASCADE,
        tools      TEXT NOT NULL,                 -- JSON array: <server>__<tool> or <server>__*
        updated_at INTEGER NOT NULL
    ) STRICT;
    ",
    postgres: r#"
    CREATE TABLE mcp_servers (
        name       TEXT COLLATE "C" PRIMARY KEY,
        id         TEXT COLLATE "C" NOT NULL UNIQUE,  -- mcp_ + UUIDv7: this registration
        url        TEXT NOT NULL,
        teams      TEXT NOT NULL,                     -- JSON array of team ids
        tools      TEXT NOT NULL,                     -- JSON object: team id -> array of tool names
        bearer     TEXT,                              -- kept: sent upstream, never shown
        headers    TEXT NOT NULL,                     -- JSON object: header -> value; never shown
        created_at BIGINT NOT NULL
    );
    CREATE TABLE mcp_key_tools (
        key_id     TEXT COLLATE "C" PRIMARY KEY REFERENCES keys(id) ON DELETE CASCADE,
        tools      TEXT NOT NULL,                     -- JSON array: <server>__<tool> or <server>__*
        updated_at BIGINT NOT NULL
    );
    "#,
};

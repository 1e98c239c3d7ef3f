//! MCP servers and key allowlists in both dialects: rows of `mcp_servers` (one per name: the
//! primary key decides between two replicas registering the same name at once) and
//! `mcp_key_tools` (one per key; the key's foreign key refuses an allowlist for a key that is
//! not stored, and its deletion takes the allowlist).

use std::collections::BTreeMap;

use super::{McpKeyTools, McpServer, NewMcpServer};
use crate::store::rules::new_id;
use crate::store::sql::{Db, Row, Sql, Value, refused_foreign_key};
use crate::store::{KeyId, StoreError, StoreResult, UnixMillis};

const LIST: Sql<'static> = Sql::same(
    "SELECT id, name, url, teams, tools, bearer, headers, created_at FROM mcp_servers ORDER BY name",
);

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO mcp_servers (name, id, url, teams, tools, bearer, headers, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (name) DO NOTHING
         RETURNING id",
    postgres: "INSERT INTO mcp_servers (name, id, url, teams, tools, bearer, headers, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (name) DO NOTHING
         RETURNING id",
};

const UPDATE: Sql<'static> = Sql {
    sqlite: "UPDATE mcp_servers SET id = ?2, url = ?3, teams = ?4, tools = ?5, bearer = ?6,
         headers = ?7 WHERE name = ?1 RETURNING created_at",
    postgres: "UPDATE mcp_servers SET id = $2, url = $3, teams = $4, tools = $5, bearer = $6,
         headers = $7 WHERE name = $1 RETURNING created_at",
};

const DELETE: Sql<'static> = Sql {
    sqlite: "DELETE FROM mcp_servers WHERE name = ?1",
    postgres: "DELETE FROM mcp_servers WHERE name = $1",
};

const SET_KEY: Sql<'static> = Sql {
    sqlite: "INSERT INTO mcp_key_tools (key_id, tools, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key_id) DO UPDATE SET tools = excluded.tools, updated_at = excluded.updated_at",
    postgres: "INSERT INTO mcp_key_tools (key_id, tools, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (key_id) DO UPDATE SET tools = excluded.tools, updated_at = excluded.updated_at",
};

const KEYS: Sql<'static> =
    Sql::same("SELECT key_id, tools, updated_at FROM mcp_key_tools ORDER BY key_id");

const DELETE_KEY: Sql<'static> = Sql {
    sqlite: "DELETE FROM mcp_key_tools WHERE key_id = ?1",
    postgres: "DELETE FROM mcp_key_tools WHERE key_id = $1",
};

fn json_text(v: &impl serde::Serialize) -> StoreResult<Value> {
    serde_json::to_string(v)
        .map(Value::from)
        .map_err(|e| StoreError::Corrupt(format!("mcp: {e}")))
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

fn row(r: &Row) -> StoreResult<McpServer> {
    let name = r.text(1)?;
    let at = format!("mcp_servers {name}");
    Ok(McpServer {
        id: r.text(0)?,
        url: r.text(2)?,
        teams: parse(&at, &r.text(3)?)?,
        tools: parse::<BTreeMap<String, Vec<String>>>(&at, &r.text(4)?)?,
        bearer: r.opt_text(5)?,
        headers: parse(&at, &r.text(6)?)?,
        created_at: r.i64(7)?,
        name,
    })
}

/// `Invalid` (field `name`) when a server of that name is stored.
pub(crate) async fn create(
    db: &impl Db,
    now: UnixMillis,
    new: NewMcpServer,
) -> StoreResult<McpServer> {
    let id = new_id("mcp_");
    let mut params = registration(&new, &id)?;
    params.push(now.into());
    if db.query_opt(INSERT, &params).await?.is_none() {
        return Err(StoreError::Invalid {
            field: "name",
            reason: format!("an MCP server named `{}` is already registered", new.name),
        });
    }
    Ok(stored(new, id, now))
}

/// A registration's columns in the order INSERT and UPDATE take them: name, id, url, teams,
/// tools, bearer, headers.
fn registration(new: &NewMcpServer, id: &str) -> StoreResult<Vec<Value>> {
    Ok(vec![
        Value::from(&new.name),
        Value::from(id),
        Value::from(&new.url),
        json_text(&new.teams)?,
        json_text(&new.tools)?,
        Value::from(new.bearer.clone()),
        json_text(&new.headers)?,
    ])
}

fn stored(new: NewMcpServer, id: String, created_at: UnixMillis) -> McpServer {
    McpServer {
        id,
        name: new.name,
        url: new.url,
        teams: new.teams,
        tools: new.tools,
        bearer: new.bearer,
        headers: new.headers,
        created_at,
    }
}

/// The stored server of `new.name` replaced, under a new registration id; `None` when there is
/// no such server.
pub(crate) async fn update(db: &impl Db, new: NewMcpServer) -> StoreResult<Option<McpServer>> {
    let id = new_id("mcp_");
    let Some(row) = db.query_opt(UPDATE, &registration(&new, &id)?).await? else {
        return Ok(None);
    };
    Ok(Some(stored(new, id, row.i64(0)?)))
}

pub(crate) async fn list(db: &impl Db) -> StoreResult<Vec<McpServer>> {
    db.query(LIST, &[]).await?.iter().map(row).collect()
}

pub(crate) async fn delete(db: &impl Db, name: &str) -> StoreResult<bool> {
    Ok(db.execute(DELETE, &[name.into()]).await? > 0)
}

/// `KeyNotFound` when the key is not stored (or was deleted meanwhile).
pub(crate) async fn set_key_tools(
    db: &impl Db,
    now: UnixMillis,
    key: KeyId,
    tools: Vec<String>,
) -> StoreResult<McpKeyTools> {
    let done = db
        .execute(
            SET_KEY,
            &[Value::from(&key.0), json_text(&tools)?, now.into()],
        )
        .await;
    match done {
        Err(e) if refused_foreign_key(&e) => return Err(StoreError::KeyNotFound(key)),
        other => other?,
    };
    Ok(McpKeyTools {
        key_id: key,
        tools,
        updated_at: now,
    })
}

pub(crate) async fn key_tools(db: &impl Db) -> StoreResult<Vec<McpKeyTools>> {
    db.query(KEYS, &[])
        .await?
        .iter()
        .map(|r| {
            let key_id = KeyId(r.text(0)?);
            Ok(McpKeyTools {
                tools: parse(&format!("mcp_key_tools {}", key_id.0), &r.text(1)?)?,
                key_id,
                updated_at: r.i64(2)?,
            })
        })
        .collect()
}

pub(crate) async fn delete_key_tools(db: &impl Db, key: &KeyId) -> StoreResult<bool> {
    Ok(db.execute(DELETE_KEY, &[Value::from(&key.0)]).await? > 0)
}

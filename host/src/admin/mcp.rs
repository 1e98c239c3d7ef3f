//! `/v1/admin/mcp/servers` and `/v1/admin/mcp/keys/{id}` (admin): upstream MCP servers
//! registered (name, URL, the teams granted its tools, per-team tool lists, the credentials the
//! gateway sends it), listed (credentials named, never shown), read, edited and removed; and per-key tool
//! allowlists — all through `crate::services::McpServers`, which stores them and tells the other
//! replicas. Servers the config file declares are listed (`source: "config"`), and removed there
//! (409). docs/MCP.md.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::config::RawMcpServer;
use crate::server::body;
use crate::server::error::ApiError;
use crate::state::AppState;

pub async fn create(
    State(app): State<AppState>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let raw: RawMcpServer =
        body::read_json(&headers, req, &app.config().server, "MCP server").await?;
    let server = app.mcp_servers().register(raw).await?;
    Ok((StatusCode::CREATED, Json(server.view())).into_response())
}

pub async fn list(State(app): State<AppState>) -> Json<Value> {
    let data: Vec<Value> = app.mcp_servers().list().iter().map(|s| s.view()).collect();
    Json(json!({"object": "list", "data": data}))
}

pub async fn get(
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    app.mcp_servers()
        .list()
        .into_iter()
        .find(|s| s.name == name)
        .map(|s| Json(s.view()))
        .ok_or_else(|| ApiError::not_found(format!("No MCP server named `{name}`.")))
}

/// `PATCH /v1/admin/mcp/servers/{name}`: the fields given replace the server's (the others,
/// credentials included, are kept).
pub async fn edit(
    State(app): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Json<Value>, ApiError> {
    let patch: serde_json::Map<String, Value> =
        body::read_json(&headers, req, &app.config().server, "MCP server").await?;
    let server = app.mcp_servers().edit(&name, patch).await?;
    Ok(Json(server.view()))
}

pub async fn delete(
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    app.mcp_servers().remove(&name).await?;
    Ok(Json(
        json!({"object": "mcp.server.deleted", "name": name, "deleted": true}),
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyTools {
    /// Listed names (`<server>__<tool>`) or a server's every tool (`<server>__*`).
    tools: Vec<String>,
}

/// `PUT /v1/admin/mcp/keys/{id}`: the key may use only these of its team's tools.
pub async fn put_key(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Json<Value>, ApiError> {
    let k: KeyTools = body::read_json(&headers, req, &app.config().server, "key allowlist").await?;
    app.mcp_servers()
        .set_key_tools(&id, k.tools.clone())
        .await?;
    Ok(Json(
        json!({"object": "mcp.key_tools", "key_id": id, "tools": k.tools}),
    ))
}

pub async fn get_key(State(app): State<AppState>, Path(id): Path<String>) -> Json<Value> {
    let tools = app.mcp_servers().key_tools(&id).map(|t| t.as_ref().clone());
    Json(json!({"object": "mcp.key_tools", "key_id": id, "tools": tools}))
}

/// `DELETE /v1/admin/mcp/keys/{id}`: the key may use all its team's tools again.
pub async fn delete_key(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let deleted = app.mcp_servers().clear_key_tools(&id).await?;
    Ok(Json(
        json!({"object": "mcp.key_tools.deleted", "key_id": id, "deleted": deleted}),
    ))
}

//! `/mcp`: the MCP gateway's door (issue 46, `docs/MCP.md`), Streamable HTTP in both eras, on
//! the gateway's listener behind the same authentication, limits and journal as `/v1`:
//!
//! - **2025-11-25 / 2025-06-18 (sessions)**: `initialize` opens a session (`Mcp-Session-Id`,
//!   bound to the key); later requests carry it (404 when unknown, so the client starts over);
//!   `DELETE` ends it.
//! - **2026-07-28 (stateless)**: no `initialize`; every POST carries `MCP-Protocol-Version`,
//!   `Mcp-Method` (and `Mcp-Name` on `tools/call`), mirrored in the body and `_meta`, all
//!   checked (400 `HeaderMismatch` when they differ); `server/discover` answers the versions.
//!
//! Top to bottom: the body read under the server's limits → one JSON-RPC message → the era →
//! the method: `tools/list` (the caller's catalogue, `crate::mcp::Mcp::catalogue`),
//! `tools/call` (`tools.rs`: the pipeline), `prompts/list`, `resources/list`,
//! `resources/templates/list` (`Mcp::feature_list`), `prompts/get` and `resources/read`
//! (`reads.rs`) → a JSON answer. Each request's journal entry is
//! named by its method (`mcp.tools/call`, ...). No server-to-client stream is offered: GET is 405.

mod jsonrpc;
mod reads;
mod tools;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::mcp::{Caller, Feature, wire};
use crate::pipeline::call::Call;
use crate::server::error::ApiError;
use jsonrpc::{Failure, Message};

/// The era a request speaks.
enum Era {
    /// A session's.
    Session,
    /// `initialize`: a session is opened by the answer.
    Opening,
    Modern,
}

/// `POST /mcp`.
pub async fn post(call: Call, body: Body) -> Response {
    let body = match call.read_body(body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let msg = match Message::parse(body) {
        Ok(m) => m,
        Err(f) => return f.with_status(StatusCode::BAD_REQUEST).into_response(),
    };
    let era = match era(&call, &msg) {
        Ok(e) => e,
        Err(f) => return f.into_response(),
    };
    // Named once the era's checks passed: a refused message stays `mcp`.
    call.audit.action(action(&msg.method, msg.id.is_none()));
    if msg.id.is_none() {
        // Notifications and a client's responses: nothing to do.
        return StatusCode::ACCEPTED.into_response();
    }
    let modern = matches!(era, Era::Modern);
    match answer(&call, &msg, &era).await {
        Ok(r) => r,
        Err(f) => {
            let f = f.id(msg.id.clone());
            if modern { f.modern_status() } else { f }.into_response()
        }
    }
}

/// `DELETE /mcp`: ends a session.
pub async fn delete(call: Call) -> Response {
    let Some(id) = session_id(&call.headers) else {
        return not_offered("DELETE /mcp ends a session: send its Mcp-Session-Id.");
    };
    if call.app.mcp().sessions.close(id, &call.principal.key_id) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        ApiError::not_found("No such MCP session.").into_response()
    }
}

/// `GET /mcp`: no server-to-client stream is offered (the spec allows 405).
pub async fn get() -> Response {
    not_offered("The gateway offers no server-to-client stream; POST MCP messages to /mcp.")
}

fn not_offered(message: &str) -> Response {
    let mut r = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        message,
    )
    .into_response();
    r.headers_mut().insert(
        http::header::ALLOW,
        http::HeaderValue::from_static("POST, DELETE"),
    );
    r
}

/// The journal's action for a method.
fn action(method: &str, notification: bool) -> &'static str {
    match method {
        "initialize" => "mcp.initialize",
        "server/discover" => "mcp.server/discover",
        "tools/list" => "mcp.tools/list",
        "tools/call" => "mcp.tools/call",
        "prompts/list" => "mcp.prompts/list",
        "prompts/get" => "mcp.prompts/get",
        "resources/list" => "mcp.resources/list",
        "resources/templates/list" => "mcp.resources/templates/list",
        "resources/read" => "mcp.resources/read",
        "ping" => "mcp.ping",
        _ if notification => "mcp.notification",
        _ => "mcp.other",
    }
}

fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(wire::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Which era the request speaks, its headers checked; the refusal otherwise.
fn era(call: &Call, msg: &Message) -> Result<Era, Failure> {
    let h = &call.headers;
    if let Some(id) = session_id(h) {
        return match call.app.mcp().sessions.find(id, &call.principal.key_id) {
            Some(_) => Ok(Era::Session),
            None => Err(Failure::new(wire::INVALID_REQUEST, "Session not found")
                .id(msg.id.clone())
                .with_status(StatusCode::NOT_FOUND)),
        };
    }
    if msg.method == "initialize" {
        return Ok(Era::Opening);
    }
    let bad = |f: Failure| f.id(msg.id.clone()).modern_status();
    match header(h, wire::PROTOCOL_VERSION_HEADER) {
        Some(wire::MODERN) => {}
        Some(v) if wire::HANDSHAKE_VERSIONS.contains(&v) => {
            return Err(Failure::new(
                wire::INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id; send `initialize` first",
            )
            .id(msg.id.clone())
            .with_status(StatusCode::BAD_REQUEST));
        }
        Some(_) => {
            return Err(bad(Failure::new(
                wire::UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
            )
            .data(supported())));
        }
        None => {
            return Err(bad(Failure::new(
                wire::INVALID_REQUEST,
                "Bad Request: send `initialize` (2025-11-25) or the MCP-Protocol-Version header (2026-07-28)",
            )));
        }
    }
    if msg.id.is_none() {
        return Ok(Era::Modern);
    }
    if header(h, wire::METHOD_HEADER) != Some(msg.method.as_str()) {
        return Err(bad(Failure::new(
            wire::HEADER_MISMATCH,
            "The Mcp-Method header does not match the body's method",
        )));
    }
    let name_key = match msg.method.as_str() {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(key) = name_key
        && header(h, wire::NAME_HEADER) != msg.params.get(key).and_then(Value::as_str)
    {
        return Err(bad(Failure::new(
            wire::HEADER_MISMATCH,
            format!("The Mcp-Name header does not match the body's `{key}`"),
        )));
    }
    match msg
        .meta(wire::META_PROTOCOL_VERSION)
        .and_then(Value::as_str)
    {
        Some(wire::MODERN) => Ok(Era::Modern),
        Some(_) => Err(bad(Failure::new(
            wire::HEADER_MISMATCH,
            "`_meta` protocolVersion does not match the MCP-Protocol-Version header",
        ))),
        None => Err(bad(Failure::new(
            wire::INVALID_PARAMS,
            format!(
                "`params._meta` must carry `{}`",
                wire::META_PROTOCOL_VERSION
            ),
        ))),
    }
}

fn supported() -> Value {
    let mut v: Vec<&str> = wire::HANDSHAKE_VERSIONS.to_vec();
    v.push(wire::MODERN);
    json!({ "supported": v })
}

fn capabilities() -> Value {
    json!({
        "tools": {"listChanged": false},
        "prompts": {"listChanged": false},
        "resources": {"listChanged": false, "subscribe": false},
    })
}

fn server_info() -> Value {
    json!({"name": "sovereign-gateway", "version": env!("CARGO_PKG_VERSION")})
}

const INSTRUCTIONS: &str = "Tools and prompts of the MCP servers your team may use, named \
<server>__<name>; their resources' URIs are <server>+<uri>.";

/// The method's answer.
async fn answer(call: &Call, msg: &Message, era: &Era) -> Result<Response, Failure> {
    let modern = matches!(era, Era::Modern);
    // The 2026-07-28 result fields: every result says it is complete; the cacheable ones
    // (lists, discover) say for how long and for whom — a catalogue is the caller's own.
    let cacheable = matches!(
        msg.method.as_str(),
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
    );
    let done = |mut v: Value| -> Result<Response, Failure> {
        if modern && let Some(o) = v.as_object_mut() {
            o.insert("resultType".into(), json!("complete"));
            if cacheable {
                o.insert("ttlMs".into(), json!(0));
                o.insert("cacheScope".into(), json!("private"));
            }
        }
        Ok(jsonrpc::result(msg.id.clone(), v, None))
    };
    match msg.method.as_str() {
        "initialize" if !modern => {
            let asked = msg.params.get("protocolVersion").and_then(Value::as_str);
            let version = asked
                .filter(|v| wire::HANDSHAKE_VERSIONS.contains(v))
                .unwrap_or(wire::LEGACY);
            let session = match era {
                Era::Opening => Some(
                    call.app
                        .mcp()
                        .sessions
                        .open(&call.principal.key_id, version),
                ),
                _ => None,
            };
            let result = json!({
                "protocolVersion": version,
                "capabilities": capabilities(),
                "serverInfo": server_info(),
                "instructions": INSTRUCTIONS,
            });
            Ok(jsonrpc::result(msg.id.clone(), result, session.as_deref()))
        }
        "ping" if !modern => done(json!({})),
        "server/discover" => done(json!({
            "supportedVersions": supported()["supported"],
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": INSTRUCTIONS,
        })),
        "tools/list" => {
            let caller = Caller {
                team: &call.principal.team_id,
                key: &call.principal.key_id,
            };
            let tools = call.app.mcp().catalogue(caller).await;
            done(json!({ "tools": tools }))
        }
        "tools/call" => done(tools::call(call, &msg.params).await?),
        "prompts/list" | "resources/list" | "resources/templates/list" => {
            let feature = match msg.method.as_str() {
                "prompts/list" => Feature::Prompts,
                "resources/list" => Feature::Resources,
                _ => Feature::ResourceTemplates,
            };
            let caller = Caller {
                team: &call.principal.team_id,
                key: &call.principal.key_id,
            };
            let items = call.app.mcp().feature_list(caller, feature).await;
            done(json!({ feature.fields().0: items }))
        }
        "prompts/get" => done(reads::read(call, reads::Read::Prompt, &msg.params).await?),
        "resources/read" => done(reads::read(call, reads::Read::Resource, &msg.params).await?),
        _ => Err(Failure::new(
            wire::METHOD_NOT_FOUND,
            format!("Method not found: {}", msg.method),
        )),
    }
}

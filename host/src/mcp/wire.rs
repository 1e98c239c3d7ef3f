//! MCP on the wire, both eras (docs/MCP.md, "Both eras"): the protocol versions, header and
//! `_meta` names, JSON-RPC error codes, and reading one JSON-RPC answer out of a Streamable HTTP
//! body — `application/json`, or a `text/event-stream` whose events are scanned until the answer
//! to our request id arrives (notifications before it are skipped).

use serde_json::{Map, Value, json};

/// The stateless revision: no `initialize`, no session, headers on every POST.
pub const MODERN: &str = "2026-07-28";
/// The newest revision with `initialize` and `Mcp-Session-Id`.
pub const LEGACY: &str = "2025-11-25";
/// Revisions a client may `initialize` with (the answer echoes a supported one, else
/// [`LEGACY`]).
pub const HANDSHAKE_VERSIONS: &[&str] = &["2025-03-26", "2025-06-18", LEGACY];

pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
pub const SESSION_HEADER: &str = "mcp-session-id";
pub const METHOD_HEADER: &str = "mcp-method";
pub const NAME_HEADER: &str = "mcp-name";
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// The gateway's own: a limit (the team's tool-call quota) refused the call.
pub const LIMITED: i64 = -32029;
/// The gateway's own: the upstream server failed (down, past its deadline, malformed).
pub const UPSTREAM_FAILED: i64 = -32050;
pub const HEADER_MISMATCH: i64 = -32020;
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Longest upstream answer read (bytes).
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// The `params` of a modern request: `params` with the `_meta` the 2026-07-28 revision requires.
pub fn modern_params(params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        meta.insert(META_PROTOCOL_VERSION.into(), json!(MODERN));
        meta.entry(META_CLIENT_CAPABILITIES)
            .or_insert_with(|| json!({}));
    }
    Value::Object(params)
}

/// What an upstream's JSON-RPC answer said.
#[derive(Debug)]
pub enum Answer {
    Result(Value),
    Error { code: i64, message: String },
}

/// Finds the answer to request `id` in a whole JSON body.
pub fn answer_in_json(body: &[u8], id: u64) -> Result<Answer, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    answer_of(v, id).ok_or_else(|| "no JSON-RPC answer to the request".into())
}

/// Scans the complete events at the start of `buf` (an SSE body so far) for the answer to `id`;
/// returns it, or `None` with the bytes consumed removed (a partial event stays).
pub fn answer_in_events(buf: &mut Vec<u8>, id: u64) -> Result<Option<Answer>, String> {
    loop {
        let Some((end, sep)) = event_end(buf) else {
            return Ok(None);
        };
        let event: Vec<u8> = buf.drain(..end + sep).take(end).collect();
        let text = String::from_utf8_lossy(&event);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue; // a comment, a ping, a priming event
        }
        let v: Value = serde_json::from_str(&data.join("\n"))
            .map_err(|e| format!("an event is not JSON: {e}"))?;
        if let Some(answer) = answer_of(v, id) {
            return Ok(Some(answer));
        }
    }
}

/// Where the first complete event ends, and the length of its blank-line separator.
fn event_end(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 < b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// `v` as the answer to `id`: a response with that id, or an error without an id (a server's
/// refusal of the whole body); `None` for anything else (a notification, another id).
pub(super) fn answer_of(v: Value, id: u64) -> Option<Answer> {
    let Value::Object(mut m) = v else { return None };
    let matches = match m.get("id") {
        Some(Value::Number(n)) => n.as_u64() == Some(id),
        Some(Value::String(s)) => s.parse::<u64>().ok() == Some(id),
        Some(Value::Null) | None => m.contains_key("error"),
        _ => false,
    };
    if !matches {
        return None;
    }
    if let Some(e) = m.remove("error") {
        let code = e
            .get("code")
            .and_then(Value::as_i64)
            .unwrap_or(INTERNAL_ERROR);
        let message = e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .chars()
            .take(500)
            .collect();
        return Some(Answer::Error { code, message });
    }
    m.remove("result").map(Answer::Result)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]
    use super::*;

    #[test]
    fn finds_the_answer_among_events() {
        let mut buf = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n: ping\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\r\n\r\ndata: {\"partial".to_vec();
        match answer_in_events(&mut buf, 7).unwrap() {
            Some(Answer::Result(v)) => assert_eq!(v, json!({"ok": true})),
            other => panic!("{other:?}"),
        }
        assert_eq!(buf, b"data: {\"partial");
        assert!(answer_in_events(&mut buf, 7).unwrap().is_none());
    }

    #[test]
    fn errors_and_other_ids() {
        let body = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool"}}"#;
        assert!(matches!(
            answer_in_json(body, 3).unwrap(),
            Answer::Error { code: -32602, .. }
        ));
        assert!(answer_in_json(body, 4).is_err());
        assert!(answer_in_json(b"<html>", 3).is_err());
    }

    #[test]
    fn modern_params_carry_the_meta() {
        let p = modern_params(json!({"name": "echo"}));
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], MODERN);
        assert_eq!(p["name"], "echo");
    }
}

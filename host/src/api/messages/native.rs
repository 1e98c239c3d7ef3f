//! The Messages body itself, for what reads it as the client wrote it rather than as the chat
//! body it converts to: the guardrail's input stage over every text in it ([`guard`]; system,
//! text blocks, the string values of tool inputs, tool results, replayed thinking), and the
//! request a model that speaks Messages natively (`messages = "native"`) gets ([`outbound`]): the
//! body passed through as the client sent it (redactions applied, the upstream's model name,
//! the gateway's own fields removed), with `anthropic-version` and `anthropic-beta` forwarded.

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::domain::{MessagesApi, ModelConfig};
use crate::pipeline::call::Call;
use crate::pipeline::fallback::encode_body;
use crate::pipeline::guard;
use crate::server::error::ApiError;
use crate::upstream::{Endpoint, Outbound};

/// The Messages API version a native upstream is told when the client named none.
const DEFAULT_VERSION: &str = "2023-06-01";
/// The headers forwarded to a native upstream.
const FORWARDED: [&str; 2] = ["anthropic-version", "anthropic-beta"];

/// The guardrail's input stage over every text of a Messages body (block → 400, redact in place,
/// flag); returns whether it flagged the request and whether it changed the body.
pub async fn guard(call: &Call, body: &mut Map<String, Value>) -> Result<(bool, bool), ApiError> {
    if call.app.guardrail().is_none() {
        return Ok((false, false));
    }
    let mut places = Vec::new();
    let root = Value::Object(std::mem::take(body));
    texts(&root, &mut places);
    let mut value = root;
    let mut found: Vec<String> = places
        .iter()
        .filter_map(|p| value.pointer(p).and_then(Value::as_str).map(str::to_owned))
        .collect();
    let before = found.clone();
    let checked = guard::texts(call, &mut found).await;
    let changed = checked.is_ok() && found != before;
    if changed {
        for (place, text) in places.iter().zip(found) {
            if let Some(v) = value.pointer_mut(place) {
                *v = Value::String(text);
            }
        }
    }
    if let Value::Object(o) = value {
        *body = o;
    }
    Ok((checked?, changed))
}

/// JSON pointer of every text the guardrail reads in a Messages body.
fn texts(body: &Value, out: &mut Vec<String>) {
    match body.get("system") {
        Some(Value::String(_)) => out.push("/system".into()),
        Some(Value::Array(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                if b.get("text").is_some_and(Value::is_string) {
                    out.push(format!("/system/{i}/text"));
                }
            }
        }
        _ => {}
    }
    let messages = body.get("messages").and_then(Value::as_array);
    for (i, m) in messages.into_iter().flatten().enumerate() {
        let here = format!("/messages/{i}/content");
        match m.get("content") {
            Some(Value::String(_)) => out.push(here),
            Some(Value::Array(blocks)) => {
                for (j, b) in blocks.iter().enumerate() {
                    blocks_texts(b, &format!("{here}/{j}"), out);
                }
            }
            _ => {}
        }
    }
}

/// The texts of one content block at `at`.
fn blocks_texts(block: &Value, at: &str, out: &mut Vec<String>) {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => out.push(format!("{at}/text")),
        Some("thinking") => out.push(format!("{at}/thinking")),
        Some("tool_use") => strings(&block["input"], &format!("{at}/input"), out),
        Some("tool_result") => match block.get("content") {
            Some(Value::String(_)) => out.push(format!("{at}/content")),
            Some(Value::Array(parts)) => {
                for (k, p) in parts.iter().enumerate() {
                    if p.get("text").is_some_and(Value::is_string) {
                        out.push(format!("{at}/content/{k}/text"));
                    }
                }
            }
            _ => {}
        },
        _ => {}
    }
}

/// Every string value inside a tool's input (the redaction markers keep it an object).
fn strings(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::String(_) => out.push(at.to_owned()),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, &format!("{at}/{i}"), out);
            }
        }
        Value::Object(o) => {
            for (k, item) in o {
                let key = k.replace('~', "~0").replace('/', "~1");
                strings(item, &format!("{at}/{key}"), out);
            }
        }
        _ => {}
    }
}

/// The headers a native upstream gets from the client's request.
pub fn forwarded(headers: &HeaderMap) -> Vec<(HeaderName, HeaderValue)> {
    FORWARDED
        .into_iter()
        .filter_map(|name| {
            let value = headers.get(name).cloned().or_else(|| {
                (name == "anthropic-version").then(|| HeaderValue::from_static(DEFAULT_VERSION))
            })?;
            Some((HeaderName::from_static(name), value))
        })
        .collect()
}

/// The request for `model` when it speaks Messages natively: the (guarded) Messages body with
/// the upstream's model name; `None` for a model that takes the chat translation.
pub fn outbound(
    model: &ModelConfig,
    body: &Map<String, Value>,
    headers: &[(HeaderName, HeaderValue)],
) -> Option<Result<Outbound, ApiError>> {
    if model.messages != MessagesApi::Native {
        return None;
    }
    let mut native = body.clone();
    crate::facts::strip_gateway_fields(&mut native);
    native.insert("model".into(), Value::String(model.upstream_model.clone()));
    Some(encode_body(&native).map(|b| Outbound {
        endpoint: Endpoint::Messages,
        body: b,
        headers: headers.to_vec(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_text_the_upstream_reads_is_found() {
        let body = json!({
            "system": [{"type": "text", "text": "s"}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": "x"},
                    {"type": "tool_use", "id": "a", "name": "f", "input": {"p/q": ["v", 1]}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "r"}]},
                    {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]},
            ]
        });
        let mut out = Vec::new();
        texts(&body, &mut out);
        assert_eq!(
            out,
            [
                "/system/0/text",
                "/messages/0/content",
                "/messages/1/content/0/thinking",
                "/messages/1/content/1/input/p~1q/0",
                "/messages/2/content/0/content/0/text",
            ]
        );
        let found: Vec<&str> = out
            .iter()
            .map(|p| body.pointer(p).unwrap().as_str().unwrap())
            .collect();
        assert_eq!(found, ["s", "hi", "t", "v", "r"]);
    }
}

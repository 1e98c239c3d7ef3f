//! From the Anthropic Messages API to chat completions, which every upstream speaks: a
//! `POST /v1/messages` (or `/v1/messages/count_tokens`) body checked and turned into a chat body.
//!
//! - `system` (a string or text blocks) → one system message;
//! - a user turn's `tool_result` blocks → one `role: "tool"` message each, in order, before the
//!   turn's text and images (a chat upstream wants the results right after the assistant's
//!   `tool_calls`); `image` blocks (base64 or URL) → `image_url` parts;
//! - an assistant turn's `tool_use` blocks → `tool_calls` (the input as a JSON string); its
//!   `thinking` / `redacted_thinking` blocks are accepted and not sent (a chat upstream takes no
//!   reasoning back);
//! - `tools` (`input_schema` → `parameters`), `tool_choice` (`any` → `required`, `tool` → the
//!   named function, `disable_parallel_tool_use`), `stop_sequences` → `stop`,
//!   `metadata.user_id` → `user`, `temperature`, `top_p`, `top_k`, `max_tokens`, `stream` (with
//!   usage asked for).
//!
//! Fields the gateway does not use (`cache_control`, `context_management`, `output_config`,
//! `thinking`, `input_examples`, `service_tier`, …) are accepted and ignored, never a 400:
//! clients keep adding them. Shapes the API defines wrongly filled are a 400 naming the field.

use serde_json::{Map, Value, json};

use crate::server::error::ApiError;

/// Which Messages endpoint the body came to: `count_tokens` takes no `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Create,
    CountTokens,
}

/// A checked Messages body and the chat body it becomes.
#[derive(Debug)]
pub struct MessagesRequest {
    /// The chat-completions body (`model`, `messages`, `tools`, …).
    pub chat: Map<String, Value>,
    pub stream: bool,
    /// `stop_sequences`, to tell `stop_sequence` from `end_turn` in the answer.
    pub stop_sequences: Vec<String>,
}

impl MessagesRequest {
    pub fn parse(body: &Map<String, Value>, endpoint: Endpoint) -> Result<Self, ApiError> {
        let model = match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => m.clone(),
            _ => return Err(ApiError::invalid("model", "model: Field required")),
        };
        let mut chat = Map::new();
        chat.insert("model".into(), json!(model));
        match (endpoint, body.get("max_tokens")) {
            (_, Some(v)) if v.as_u64().is_some_and(|n| n >= 1) => {
                chat.insert("max_tokens".into(), v.clone());
            }
            (Endpoint::CountTokens, None | Some(Value::Null)) => {}
            (_, None) => {
                return Err(ApiError::invalid(
                    "max_tokens",
                    "max_tokens: Field required",
                ));
            }
            (_, Some(_)) => {
                return Err(ApiError::invalid(
                    "max_tokens",
                    "max_tokens: Input should be a positive integer",
                ));
            }
        }
        let mut messages = Vec::new();
        if let Some(system) = body.get("system").filter(|s| !s.is_null()) {
            messages.push(json!({"role": "system", "content": text_of(system, "system")?}));
        }
        let turns = match body.get("messages") {
            Some(Value::Array(turns)) if !turns.is_empty() => turns,
            Some(Value::Array(_)) => {
                return Err(ApiError::invalid(
                    "messages",
                    "messages: at least one message is required",
                ));
            }
            _ => return Err(ApiError::invalid("messages", "messages: Field required")),
        };
        for (i, turn) in turns.iter().enumerate() {
            convert_turn(i, turn, &mut messages)?;
        }
        chat.insert("messages".into(), Value::Array(messages));

        if let Some(tools) = body.get("tools").filter(|t| !t.is_null()) {
            chat.insert("tools".into(), convert_tools(tools)?);
        }
        if let Some(choice) = body.get("tool_choice").filter(|c| !c.is_null()) {
            convert_tool_choice(choice, &mut chat)?;
        }
        let stop_sequences = match body.get("stop_sequences") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(s)) if s.iter().all(Value::is_string) => s
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            Some(_) => {
                return Err(ApiError::invalid(
                    "stop_sequences",
                    "stop_sequences: Input should be a list of strings",
                ));
            }
        };
        if !stop_sequences.is_empty() {
            chat.insert("stop".into(), json!(stop_sequences));
        }
        for name in ["temperature", "top_p", "top_k"] {
            match body.get(name) {
                None | Some(Value::Null) => {}
                Some(v) if v.is_number() => {
                    chat.insert(name.into(), v.clone());
                }
                Some(_) => {
                    return Err(ApiError::invalid(
                        name,
                        format!("{name}: Input should be a valid number"),
                    ));
                }
            }
        }
        if let Some(user) = body
            .get("metadata")
            .and_then(|m| m.get("user_id"))
            .and_then(Value::as_str)
        {
            chat.insert("user".into(), json!(user));
        }
        let stream = match body.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ApiError::invalid(
                    "stream",
                    "stream: Input should be a valid boolean",
                ));
            }
        };
        if stream && endpoint == Endpoint::Create {
            chat.insert("stream".into(), json!(true));
            chat.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(MessagesRequest {
            chat,
            stream: stream && endpoint == Endpoint::Create,
            stop_sequences,
        })
    }
}

/// The text of a string or of a list of text blocks (`system`, a tool result's content),
/// blocks joined by a blank line.
fn text_of(v: &Value, field: &str) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut texts = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                match (b.get("type").and_then(Value::as_str), b.get("text")) {
                    (Some("text"), Some(Value::String(t))) => texts.push(t.as_str()),
                    _ => {
                        return Err(ApiError::invalid(
                            field,
                            format!("{field}.{i}: Input should be a text block"),
                        ));
                    }
                }
            }
            Ok(texts.join("\n\n"))
        }
        _ => Err(ApiError::invalid(
            field,
            format!("{field}: Input should be a string or a list of text blocks"),
        )),
    }
}

/// One Messages turn → its chat messages, appended in order.
fn convert_turn(i: usize, turn: &Value, out: &mut Vec<Value>) -> Result<(), ApiError> {
    let at = |what: &str| format!("messages.{i}{what}");
    let role = turn.get("role").and_then(Value::as_str);
    let content = turn.get("content");
    let blocks: Vec<Value> = match content {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(b)) => b.clone(),
        _ => {
            return Err(ApiError::invalid(
                "messages",
                format!("{}: Field required", at(".content")),
            ));
        }
    };
    match role {
        Some("user") => convert_user(&at(""), &blocks, out),
        Some("assistant") => convert_assistant(&at(""), &blocks, out),
        // Some agents put instructions in the conversation itself: a system message there.
        Some("system") => {
            let text = text_of(content.unwrap_or(&Value::Null), &at(".content"))?;
            out.push(json!({"role": "system", "content": text}));
            Ok(())
        }
        _ => Err(ApiError::invalid(
            "messages",
            format!("{}: Input should be 'user' or 'assistant'", at(".role")),
        )),
    }
}

fn bad_block(at: &str, j: usize, what: &str) -> ApiError {
    ApiError::invalid("messages", format!("{at}.content.{j}: {what}"))
}

fn convert_user(at: &str, blocks: &[Value], out: &mut Vec<Value>) -> Result<(), ApiError> {
    let mut parts = Vec::new();
    for (j, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => match b.get("text") {
                Some(Value::String(t)) => parts.push(json!({"type": "text", "text": t})),
                _ => return Err(bad_block(at, j, "a text block needs its `text`")),
            },
            Some("image") => parts.push(image_part(at, j, b)?),
            Some("document") => match (b.pointer("/source/type"), b.pointer("/source/data")) {
                (Some(Value::String(t)), Some(Value::String(data))) if t == "text" => {
                    parts.push(json!({"type": "text", "text": data}));
                }
                _ => {
                    return Err(bad_block(
                        at,
                        j,
                        "only plain-text documents are served; upload PDFs to /v1/documents",
                    ));
                }
            },
            Some("tool_result") => {
                let Some(id) = b.get("tool_use_id").and_then(Value::as_str) else {
                    return Err(bad_block(at, j, "a tool_result needs its `tool_use_id`"));
                };
                let mut text = match b.get("content") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(inner)) => {
                        // Text blocks become the tool message; images go to the user message
                        // that follows the results (a tool message carries text only).
                        let mut texts = Vec::new();
                        for (k, ib) in inner.iter().enumerate() {
                            match ib.get("type").and_then(Value::as_str) {
                                Some("text") => {
                                    texts.push(ib["text"].as_str().unwrap_or_default().to_owned());
                                }
                                Some("image") => parts.push(image_part(at, j, ib)?),
                                _ => {
                                    return Err(bad_block(
                                        at,
                                        j,
                                        &format!(
                                            "content.{k}: Input should be a text or image block"
                                        ),
                                    ));
                                }
                            }
                        }
                        texts.join("\n\n")
                    }
                    Some(_) => {
                        return Err(bad_block(
                            at,
                            j,
                            "a tool_result's content is a string or blocks",
                        ));
                    }
                };
                if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                    text = format!("Error: {text}");
                }
                out.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
            // Replayed reasoning and server-tool results have no chat form: accepted, not sent.
            Some("thinking" | "redacted_thinking") => {}
            Some(other) => {
                return Err(bad_block(
                    at,
                    j,
                    &format!("block type `{other}` is not served by this gateway"),
                ));
            }
            None => return Err(bad_block(at, j, "a content block needs its `type`")),
        }
    }
    if !parts.is_empty() {
        let content = match parts.as_slice() {
            [only] if only["type"] == "text" => only["text"].clone(),
            _ => Value::Array(parts),
        };
        out.push(json!({"role": "user", "content": content}));
    }
    Ok(())
}

fn image_part(at: &str, j: usize, b: &Value) -> Result<Value, ApiError> {
    let source = &b["source"];
    let url = match source.get("type").and_then(Value::as_str) {
        Some("base64") => match (source["media_type"].as_str(), source["data"].as_str()) {
            (Some(media), Some(data)) => format!("data:{media};base64,{data}"),
            _ => {
                return Err(bad_block(
                    at,
                    j,
                    "a base64 image needs `media_type` and `data`",
                ));
            }
        },
        Some("url") => match source["url"].as_str() {
            Some(url) => url.to_owned(),
            None => return Err(bad_block(at, j, "a URL image needs its `url`")),
        },
        _ => return Err(bad_block(at, j, "an image's source is `base64` or `url`")),
    };
    Ok(json!({"type": "image_url", "image_url": {"url": url}}))
}

fn convert_assistant(at: &str, blocks: &[Value], out: &mut Vec<Value>) -> Result<(), ApiError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for (j, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (b["id"].as_str(), b["name"].as_str()) else {
                    return Err(bad_block(at, j, "a tool_use needs its `id` and `name`"));
                };
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": input.to_string()},
                }));
            }
            Some("thinking" | "redacted_thinking") => {}
            Some(other) => {
                return Err(bad_block(
                    at,
                    j,
                    &format!("block type `{other}` is not served by this gateway"),
                ));
            }
            None => return Err(bad_block(at, j, "a content block needs its `type`")),
        }
    }
    let mut message = json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    out.push(message);
    Ok(())
}

fn convert_tools(tools: &Value) -> Result<Value, ApiError> {
    let Some(tools) = tools.as_array() else {
        return Err(ApiError::invalid("tools", "tools: Input should be a list"));
    };
    let mut out = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        let kind = t.get("type").and_then(Value::as_str);
        if kind.is_some_and(|k| k != "custom") {
            return Err(ApiError::invalid(
                "tools",
                format!(
                    "tools.{i}: the server tool `{}` is not served by this gateway; declare client tools with an `input_schema`",
                    kind.unwrap_or_default()
                ),
            ));
        }
        let (Some(name), Some(schema)) = (t["name"].as_str(), t.get("input_schema")) else {
            return Err(ApiError::invalid(
                "tools",
                format!("tools.{i}: a tool needs its `name` and `input_schema`"),
            ));
        };
        let mut function = json!({"name": name, "parameters": schema});
        if let Some(d) = t.get("description").and_then(Value::as_str) {
            function["description"] = json!(d);
        }
        out.push(json!({"type": "function", "function": function}));
    }
    Ok(Value::Array(out))
}

fn convert_tool_choice(choice: &Value, chat: &mut Map<String, Value>) -> Result<(), ApiError> {
    let converted = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => match choice["name"].as_str() {
            Some(name) => json!({"type": "function", "function": {"name": name}}),
            None => {
                return Err(ApiError::invalid(
                    "tool_choice",
                    "tool_choice.name: Field required",
                ));
            }
        },
        _ => {
            return Err(ApiError::invalid(
                "tool_choice",
                "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'",
            ));
        }
    };
    chat.insert("tool_choice".into(), converted);
    if choice
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        == Some(true)
    {
        chat.insert("parallel_tool_calls".into(), json!(false));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<MessagesRequest, ApiError> {
        MessagesRequest::parse(body.as_object().unwrap(), Endpoint::Create)
    }

    #[test]
    fn a_tool_round_trip_becomes_tool_calls_then_one_tool_message_per_result() {
        let r = parse(json!({
            "model": "m", "max_tokens": 64,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "Weather in Riyadh and Paris?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "two calls", "signature": "s"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Riyadh"}},
                    {"type": "tool_use", "id": "t2", "name": "weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "41C"},
                    {"type": "tool_result", "tool_use_id": "t2", "is_error": true,
                     "content": [{"type": "text", "text": "timeout"}]},
                    {"type": "text", "text": "And tomorrow?"}]}],
            "tools": [{"name": "weather", "description": "d", "input_examples": [{}],
                       "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
            "context_management": {"edits": []}, "output_config": {"effort": "high"},
            "thinking": {"type": "adaptive"}, "metadata": {"user_id": "u1"}
        }))
        .unwrap();
        let m = &r.chat["messages"];
        assert_eq!(m[0], json!({"role": "system", "content": "Be brief."}));
        assert_eq!(
            m[2]["tool_calls"][1]["function"]["arguments"],
            r#"{"city":"Paris"}"#
        );
        assert_eq!(m[2]["content"], "Checking.");
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "t1", "content": "41C"})
        );
        assert_eq!(m[4]["content"], "Error: timeout");
        assert_eq!(m[5], json!({"role": "user", "content": "And tomorrow?"}));
        assert_eq!(
            r.chat["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(r.chat["tool_choice"], "required");
        assert_eq!(r.chat["parallel_tool_calls"], false);
        assert_eq!(r.chat["user"], "u1");
        assert!(r.chat.get("thinking").is_none() && r.chat.get("context_management").is_none());
    }

    #[test]
    fn images_become_image_url_parts_and_streams_ask_for_usage() {
        let r = parse(json!({
            "model": "m", "max_tokens": 8, "stream": true, "stop_sequences": ["END"],
            "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                {"type": "text", "text": "What is this?"}]}]
        }))
        .unwrap();
        assert_eq!(
            r.chat["messages"][0]["content"][0]["image_url"]["url"],
            "data:image/png;base64,iVBO"
        );
        assert_eq!(r.chat["stream_options"], json!({"include_usage": true}));
        assert_eq!(r.chat["stop"], json!(["END"]));
        assert!(r.stream);
    }

    #[test]
    fn wrong_shapes_are_400s_naming_the_field_and_count_tokens_needs_no_max_tokens() {
        for (body, field) in [
            (
                json!({"max_tokens": 1, "messages": [{"role": "user", "content": "x"}]}),
                "model",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
                "max_tokens",
            ),
            (
                json!({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}),
                "max_tokens",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": []}),
                "messages",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "bot", "content": "x"}]}),
                "messages",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "video"}]}]}),
                "messages",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                    "tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
                "tools",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                    "tool_choice": {"type": "sometimes"}}),
                "tool_choice",
            ),
            (
                json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}],
                    "stop_sequences": "END"}),
                "stop_sequences",
            ),
        ] {
            let e = parse(body).unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.param.as_deref()),
                (400, Some(field)),
                "{}",
                e.message
            );
        }
        let body =
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": true});
        let r = MessagesRequest::parse(body.as_object().unwrap(), Endpoint::CountTokens).unwrap();
        assert!(!r.stream && r.chat.get("stream").is_none() && r.chat.get("max_tokens").is_none());
    }
}

//! From the Responses API to chat completions, which every upstream speaks: a `responses`
//! request checked and turned into a chat body (input items → messages, function tools, `text`
//! format → `response_format`). The answer's side (items, ids, usage) is `items.rs`.

use serde_json::{Map, Value, json};

use crate::server::error::ApiError;

/// Built-in tool types of the Responses API the gateway does not serve.
const UNSERVED_TOOLS: &[&str] = &[
    "web_search",
    "web_search_preview",
    "file_search",
    "computer_use",
    "computer_use_preview",
    "code_interpreter",
    "image_generation",
    "mcp",
    "local_shell",
    "shell",
    "apply_patch",
    "custom",
];

/// Request fields passed through to the chat body under the same name.
const SAME_NAME: &[&str] = &[
    "model",
    "temperature",
    "top_p",
    "user",
    "parallel_tool_calls",
];

/// Request fields the gateway reads itself (never sent upstream).
const OWN: &[&str] = &[
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "text",
    "max_output_tokens",
    "metadata",
    "store",
    "previous_response_id",
    "stream",
    "stream_options",
    "include",
    "truncation",
    "reasoning",
    "service_tier",
    "prompt_cache_key",
    "safety_identifier",
    "background",
    "top_logprobs",
    "max_tool_calls",
];

/// Responses API fields that need state or templates the gateway does not keep: refused by name
/// rather than sent to a chat upstream.
const UNSERVED_FIELDS: &[(&str, &str)] = &[
    (
        "conversation",
        "Conversation objects are not served by this gateway; chain responses with `previous_response_id`.",
    ),
    (
        "prompt",
        "Stored prompt templates are not served by this gateway; send the text as `input` and `instructions`.",
    ),
];

/// A checked `POST /v1/responses` body.
pub struct ResponsesRequest {
    pub body: Map<String, Value>,
    /// The chat messages of this turn: `instructions` (as a system message) excluded.
    pub turn: Vec<Value>,
    pub instructions: Option<String>,
    pub previous_response_id: Option<String>,
    pub store: bool,
    pub stream: bool,
}

impl ResponsesRequest {
    pub fn parse(body: Map<String, Value>) -> Result<ResponsesRequest, ApiError> {
        match body.get("model") {
            Some(Value::String(m)) if !m.is_empty() => {}
            _ => {
                return Err(ApiError::invalid(
                    "model",
                    "Missing required parameter: 'model' (a model id, or `auto-router`).",
                ));
            }
        }
        let turn = match body.get("input") {
            Some(Value::String(s)) => vec![json!({"role": "user", "content": s})],
            Some(Value::Array(items)) if !items.is_empty() => input_messages(items)?,
            Some(Value::Array(_)) => {
                return Err(ApiError::invalid("input", "'input' must not be empty."));
            }
            _ => {
                return Err(ApiError::invalid(
                    "input",
                    "Missing required parameter: 'input' (a string, or a list of input items).",
                ));
            }
        };
        let instructions = match body.get("instructions") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(ApiError::invalid("instructions", "Expected a string.")),
        };
        let previous_response_id = match body.get("previous_response_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.starts_with("resp_") && s.len() <= 64 => Some(s.clone()),
            Some(_) => {
                return Err(ApiError::invalid(
                    "previous_response_id",
                    "Expected the id of a stored response (`resp_…`).",
                ));
            }
        };
        for (field, why) in UNSERVED_FIELDS {
            if body.get(*field).is_some_and(|v| !v.is_null()) {
                return Err(ApiError::invalid(field, *why));
            }
        }
        let flag = |name: &str, default: bool| match body.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ApiError::invalid(name, "Expected a boolean.")),
        };
        let store = flag("store", true)?;
        let stream = flag("stream", false)?;
        if flag("background", false)? {
            return Err(ApiError::invalid(
                "background",
                "Background responses are not served by this gateway; send the request without `background`.",
            ));
        }
        if let Some(m) = body.get("metadata")
            && !m.is_null()
        {
            let ok = m.as_object().is_some_and(|o| {
                o.len() <= 16
                    && o.iter().all(|(k, v)| {
                        k.len() <= 64 && v.as_str().is_some_and(|s| s.chars().count() <= 512)
                    })
            });
            if !ok {
                return Err(ApiError::invalid(
                    "metadata",
                    "At most 16 string values, keys up to 64 and values up to 512 characters.",
                ));
            }
        }
        if let Some(v) = body.get("max_output_tokens")
            && !v.is_null()
            && v.as_u64().is_none_or(|n| n == 0)
        {
            return Err(ApiError::invalid(
                "max_output_tokens",
                "Expected a positive integer.",
            ));
        }
        Ok(ResponsesRequest {
            turn,
            instructions,
            previous_response_id,
            store,
            stream,
            body,
        })
    }

    /// The chat body: `history` (the chain's messages), then `instructions` as the first
    /// message, then this turn; tools, tool choice, format and sampling translated; fields the
    /// gateway does not own passed through.
    pub fn chat_body(&self, history: Vec<Value>) -> Result<Map<String, Value>, ApiError> {
        let mut chat = Map::new();
        let mut messages = Vec::with_capacity(history.len() + self.turn.len() + 1);
        if let Some(i) = &self.instructions {
            messages.push(json!({"role": "system", "content": i}));
        }
        messages.extend(history);
        messages.extend(self.turn.iter().cloned());
        for (k, v) in &self.body {
            if SAME_NAME.contains(&k.as_str()) || !OWN.contains(&k.as_str()) {
                chat.insert(k.clone(), v.clone());
            }
        }
        chat.insert("messages".into(), Value::Array(messages));
        if let Some(n) = self.body.get("max_output_tokens").filter(|v| !v.is_null()) {
            chat.insert("max_tokens".into(), n.clone());
        }
        if let Some(tools) = self.body.get("tools").filter(|v| !v.is_null()) {
            let tools = chat_tools(tools)?;
            if !tools.is_empty() {
                chat.insert("tools".into(), Value::Array(tools));
            }
        }
        if let Some(choice) = self.body.get("tool_choice").filter(|v| !v.is_null()) {
            chat.insert("tool_choice".into(), chat_tool_choice(choice)?);
        }
        let format = self.body.get("text").and_then(|t| t.get("format"));
        if let Some(format) = format.filter(|v| !v.is_null())
            && let Some(f) = response_format(format)?
        {
            chat.insert("response_format".into(), f);
        }
        chat.insert("stream".into(), Value::Bool(self.stream));
        Ok(chat)
    }
}

/// Input items → chat messages (consecutive function calls become one assistant message).
pub fn input_messages(items: &[Value]) -> Result<Vec<Value>, ApiError> {
    let mut out: Vec<Value> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let Some(obj) = item.as_object() else {
            return Err(ApiError::invalid(&at, "Expected an input item object."));
        };
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or("message");
        match kind {
            "message" => {
                let role = match obj.get("role").and_then(Value::as_str) {
                    Some("developer" | "system") => "system",
                    Some("user") => "user",
                    Some("assistant") => "assistant",
                    _ => {
                        return Err(ApiError::invalid(
                            &format!("{at}.role"),
                            "Expected `user`, `assistant`, `system` or `developer`.",
                        ));
                    }
                };
                let content = message_content(obj.get("content"), &format!("{at}.content"))?;
                out.push(json!({"role": role, "content": content}));
            }
            "function_call" => {
                let (Some(call_id), Some(name)) = (
                    obj.get("call_id").and_then(Value::as_str),
                    obj.get("name").and_then(Value::as_str),
                ) else {
                    return Err(ApiError::invalid(
                        &at,
                        "A `function_call` item needs `call_id` and `name`.",
                    ));
                };
                let arguments = obj.get("arguments").and_then(Value::as_str).unwrap_or("{}");
                let call = json!({"id": call_id, "type": "function",
                                  "function": {"name": name, "arguments": arguments}});
                match out.last_mut() {
                    Some(last)
                        if last["role"] == "assistant"
                            && last["content"].is_null()
                            && last["tool_calls"].is_array() =>
                    {
                        if let Some(calls) = last["tool_calls"].as_array_mut() {
                            calls.push(call);
                        }
                    }
                    _ => out
                        .push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
                }
            }
            "function_call_output" => {
                let Some(call_id) = obj.get("call_id").and_then(Value::as_str) else {
                    return Err(ApiError::invalid(
                        &at,
                        "A `function_call_output` item needs `call_id`.",
                    ));
                };
                let output = match obj.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(""),
                    _ => {
                        return Err(ApiError::invalid(
                            &format!("{at}.output"),
                            "Expected the function's output as a string.",
                        ));
                    }
                };
                out.push(json!({"role": "tool", "tool_call_id": call_id, "content": output}));
            }
            // Reasoning items of earlier turns carry nothing a chat upstream can use.
            "reasoning" => {}
            other => {
                return Err(ApiError::invalid(
                    &format!("{at}.type"),
                    format!(
                        "Input items of type `{other}` are not served by this gateway (served: `message`, `function_call`, `function_call_output`)."
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// A message's content: a string, or parts (`input_text`/`output_text` → text, `input_image` →
/// an image part).
fn message_content(content: Option<&Value>, at: &str) -> Result<Value, ApiError> {
    match content {
        Some(Value::String(s)) => Ok(Value::String(s.clone())),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            let mut chat_parts = Vec::new();
            for (j, p) in parts.iter().enumerate() {
                match p.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => {
                        let t = p.get("text").and_then(Value::as_str).unwrap_or_default();
                        texts.push(t.to_string());
                        chat_parts.push(json!({"type": "text", "text": t}));
                    }
                    Some("refusal") => {
                        let t = p.get("refusal").and_then(Value::as_str).unwrap_or_default();
                        texts.push(t.to_string());
                        chat_parts.push(json!({"type": "text", "text": t}));
                    }
                    Some("input_image") => {
                        let Some(url) = p.get("image_url").and_then(Value::as_str) else {
                            return Err(ApiError::invalid(
                                &format!("{at}[{j}]"),
                                "An `input_image` part needs `image_url` (file ids are not served).",
                            ));
                        };
                        chat_parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
                    }
                    other => {
                        return Err(ApiError::invalid(
                            &format!("{at}[{j}].type"),
                            format!(
                                "Content parts of type `{}` are not served (served: `input_text`, `output_text`, `input_image`).",
                                other.unwrap_or("?")
                            ),
                        ));
                    }
                }
            }
            if chat_parts.len() == texts.len() {
                Ok(Value::String(texts.concat()))
            } else {
                Ok(Value::Array(chat_parts))
            }
        }
        _ => Err(ApiError::invalid(
            at,
            "Expected a string or a list of content parts.",
        )),
    }
}

fn chat_tools(tools: &Value) -> Result<Vec<Value>, ApiError> {
    let Some(list) = tools.as_array() else {
        return Err(ApiError::invalid("tools", "Expected a list of tools."));
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        match t.get("type").and_then(Value::as_str) {
            Some("function") => {
                let Some(name) = t.get("name").and_then(Value::as_str) else {
                    return Err(ApiError::invalid(
                        &format!("tools[{i}].name"),
                        "A function tool needs a `name`.",
                    ));
                };
                let mut function = Map::new();
                function.insert("name".into(), Value::String(name.into()));
                for k in ["description", "parameters", "strict"] {
                    if let Some(v) = t.get(k).filter(|v| !v.is_null()) {
                        function.insert(k.into(), v.clone());
                    }
                }
                out.push(json!({"type": "function", "function": function}));
            }
            Some(kind) if UNSERVED_TOOLS.contains(&kind) || kind.starts_with("web_search") => {
                return Err(ApiError::invalid(
                    &format!("tools[{i}].type"),
                    format!(
                        "The built-in tool `{kind}` is not served by this gateway: only `function` tools are (your code runs them). For documents, use /v1/rag/query or /v1/vector_stores/{{id}}/search."
                    ),
                ));
            }
            other => {
                return Err(ApiError::invalid(
                    &format!("tools[{i}].type"),
                    format!(
                        "Unknown tool type `{}`; served: `function`.",
                        other.unwrap_or("?")
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn chat_tool_choice(choice: &Value) -> Result<Value, ApiError> {
    match choice {
        Value::String(s) if matches!(s.as_str(), "auto" | "none" | "required") => {
            Ok(choice.clone())
        }
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
            match o.get("name").and_then(Value::as_str) {
                Some(name) => Ok(json!({"type": "function", "function": {"name": name}})),
                None => Err(ApiError::invalid(
                    "tool_choice.name",
                    "A function tool choice needs `name`.",
                )),
            }
        }
        _ => Err(ApiError::invalid(
            "tool_choice",
            "Expected `auto`, `none`, `required` or {\"type\": \"function\", \"name\": …}.",
        )),
    }
}

/// `text.format` → `response_format` (`None` for plain text).
fn response_format(format: &Value) -> Result<Option<Value>, ApiError> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "json_object"}))),
        Some("json_schema") => {
            let Some(schema) = format.get("schema").filter(|s| s.is_object()) else {
                return Err(ApiError::invalid(
                    "text.format.schema",
                    "A `json_schema` format needs a `schema` object.",
                ));
            };
            let mut js = Map::new();
            js.insert(
                "name".into(),
                format
                    .get("name")
                    .cloned()
                    .unwrap_or_else(|| json!("response")),
            );
            js.insert("schema".into(), schema.clone());
            for k in ["strict", "description"] {
                if let Some(v) = format.get(k).filter(|v| !v.is_null()) {
                    js.insert(k.into(), v.clone());
                }
            }
            Ok(Some(json!({"type": "json_schema", "json_schema": js})))
        }
        _ => Err(ApiError::invalid(
            "text.format.type",
            "Expected `text`, `json_object` or `json_schema`.",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> Result<ResponsesRequest, ApiError> {
        ResponsesRequest::parse(v.as_object().unwrap().clone())
    }

    #[test]
    fn input_items_become_chat_messages() {
        let r = req(json!({
            "model": "m", "instructions": "be brief",
            "input": [
                {"role": "developer", "content": "rules"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{\"x\":1}"},
                {"type": "function_call_output", "call_id": "c1", "output": "42"}
            ],
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "f"},
            "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
            "max_output_tokens": 50, "metadata": {"k": "v"}, "store": false, "temperature": 0.2
        }))
        .ok()
        .unwrap();
        assert!(!r.store);
        let chat = r
            .chat_body(vec![json!({"role": "user", "content": "earlier"})])
            .ok()
            .unwrap();
        let m = chat["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(m[1]["content"], "earlier");
        assert_eq!(m[2], json!({"role": "system", "content": "rules"}));
        assert_eq!(m[3], json!({"role": "user", "content": "ab"}));
        assert_eq!(m[4]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(
            m[5],
            json!({"role": "tool", "tool_call_id": "c1", "content": "42"})
        );
        assert_eq!(chat["tools"][0]["function"]["name"], "f");
        assert_eq!(chat["tool_choice"]["function"]["name"], "f");
        assert_eq!(chat["response_format"]["json_schema"]["name"], "x");
        assert_eq!(chat["max_tokens"], 50);
        assert_eq!(chat["temperature"], 0.2);
        assert!(chat.get("metadata").is_none() && chat.get("input").is_none());
    }

    #[test]
    fn unserved_tools_and_items_are_named() {
        let e = req(json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}))
            .ok()
            .unwrap()
            .chat_body(Vec::new())
            .err()
            .unwrap();
        assert!(e.body().to_string().contains("web_search"));
        let e = req(json!({"model": "m", "input": [{"type": "item_reference", "id": "x"}]}))
            .err()
            .unwrap();
        assert!(e.body().to_string().contains("item_reference"));
        assert!(req(json!({"model": "m"})).is_err());
        assert!(req(json!({"model": "m", "input": []})).is_err());
        assert!(req(json!({"model": "m", "input": "x", "previous_response_id": "x"})).is_err());
    }
}

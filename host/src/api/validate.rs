//! Checks that chat and embeddings request bodies follow the convention before anything else
//! touches them: required fields present, well-known fields of the right type. Everything else in
//! the body is passed to the upstream untouched.

use serde_json::{Map, Value};

use crate::server::error::ApiError;

/// Roles the chat-completions convention defines.
const ROLES: &[&str] = &[
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

/// A chat-completions body that passed validation.
#[derive(Debug)]
pub struct ChatRequest {
    pub body: Map<String, Value>,
    pub stream: bool,
    /// The client set `stream_options.include_usage`.
    pub wants_usage: bool,
}

impl ChatRequest {
    pub fn parse(body: Map<String, Value>) -> Result<ChatRequest, ApiError> {
        required_model(&body)?;
        let messages = match body.get("messages") {
            None | Some(Value::Null) => {
                return Err(ApiError::invalid(
                    "messages",
                    "Missing required parameter: 'messages'.",
                ));
            }
            Some(Value::Array(m)) => m,
            Some(_) => {
                return Err(ApiError::invalid(
                    "messages",
                    "Invalid type for 'messages': expected an array of message objects.",
                ));
            }
        };
        if messages.is_empty() {
            return Err(ApiError::invalid(
                "messages",
                "'messages' must contain at least one message.",
            ));
        }
        for (i, m) in messages.iter().enumerate() {
            check_message(i, m)?;
        }
        let (stream, wants_usage) = stream_flags(&body)?;
        // The optional parameters in one pass over the keys the body has: a lookup per known
        // name hashed each (SipHash), a dozen a request, nearly all for keys that are absent.
        for (name, v) in &body {
            chat_parameter(name, v)?;
        }
        Ok(ChatRequest {
            body,
            stream,
            wants_usage,
        })
    }
}

/// A legacy completions body (`/v1/completions`) that passed validation.
#[derive(Debug)]
pub struct CompletionRequest {
    pub body: Map<String, Value>,
    pub stream: bool,
    pub wants_usage: bool,
}

impl CompletionRequest {
    pub fn parse(body: Map<String, Value>) -> Result<CompletionRequest, ApiError> {
        required_model(&body)?;
        if !text_or_tokens(body.get("prompt")) {
            return Err(ApiError::invalid(
                "prompt",
                "'prompt' must be a non-empty string, an array of non-empty strings, or token arrays.",
            ));
        }
        let (stream, wants_usage) = stream_flags(&body)?;
        for name in [
            "temperature",
            "top_p",
            "presence_penalty",
            "frequency_penalty",
        ] {
            optional_number(&body, name)?;
        }
        for name in ["max_tokens", "n", "best_of", "logprobs"] {
            optional_integer(&body, name)?;
        }
        for (name, ok) in [
            (
                "seed",
                body.get("seed")
                    .is_none_or(|v| v.is_null() || v.is_i64() || v.is_u64()),
            ),
            (
                "echo",
                body.get("echo")
                    .is_none_or(|v| v.is_null() || v.is_boolean()),
            ),
            (
                "suffix",
                body.get("suffix")
                    .is_none_or(|v| v.is_null() || v.is_string()),
            ),
            (
                "user",
                body.get("user")
                    .is_none_or(|v| v.is_null() || v.is_string()),
            ),
        ] {
            if !ok {
                return Err(ApiError::invalid(
                    name,
                    format!("Invalid type for '{name}'."),
                ));
            }
        }
        Ok(CompletionRequest {
            body,
            stream,
            wants_usage,
        })
    }
}

/// An embeddings body that passed validation.
#[derive(Debug)]
pub struct EmbeddingsRequest {
    pub body: Map<String, Value>,
    pub model: String,
}

impl EmbeddingsRequest {
    pub fn parse(body: Map<String, Value>) -> Result<EmbeddingsRequest, ApiError> {
        let model = required_model(&body)?;
        let ok = match body.get("input") {
            None | Some(Value::Null) => {
                return Err(ApiError::invalid(
                    "input",
                    "Missing required parameter: 'input'.",
                ));
            }
            input => text_or_tokens(input),
        };
        if !ok {
            return Err(ApiError::invalid(
                "input",
                "'input' must be a non-empty string, an array of non-empty strings, or token arrays.",
            ));
        }
        if let Some(v) = body.get("encoding_format")
            && !matches!(v.as_str(), Some("float" | "base64"))
            && !v.is_null()
        {
            return Err(ApiError::invalid(
                "encoding_format",
                "'encoding_format' must be 'float' or 'base64'.",
            ));
        }
        optional_integer(&body, "dimensions")?;
        Ok(EmbeddingsRequest { body, model })
    }
}

fn required_model(body: &Map<String, Value>) -> Result<String, ApiError> {
    match body.get("model") {
        None | Some(Value::Null) => Err(ApiError::invalid(
            "model",
            "Missing required parameter: 'model'.",
        )),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(ApiError::invalid("model", "'model' must not be empty.")),
        Some(_) => Err(ApiError::invalid(
            "model",
            "Invalid type for 'model': expected a string.",
        )),
    }
}

fn check_message(i: usize, m: &Value) -> Result<(), ApiError> {
    let param = format!("messages[{i}]");
    let Some(m) = m.as_object() else {
        return Err(ApiError::invalid(
            &param,
            format!("Invalid type for '{param}': expected an object."),
        ));
    };
    let role = match m.get("role") {
        Some(Value::String(r)) => r.as_str(),
        None => {
            return Err(ApiError::invalid(
                &format!("{param}.role"),
                format!("Missing required parameter: '{param}.role'."),
            ));
        }
        Some(_) => {
            return Err(ApiError::invalid(
                &format!("{param}.role"),
                format!("Invalid type for '{param}.role': expected a string."),
            ));
        }
    };
    if !ROLES.contains(&role) {
        return Err(ApiError::invalid(
            &format!("{param}.role"),
            format!(
                "Invalid value for '{param}.role': '{role}'. Supported values are: {}.",
                ROLES.join(", ")
            ),
        ));
    }
    let content_param = format!("{param}.content");
    match m.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) => {
            for (j, p) in parts.iter().enumerate() {
                if !p.get("type").is_some_and(Value::is_string) {
                    return Err(ApiError::invalid(
                        &format!("{content_param}[{j}]"),
                        format!(
                            "Invalid content part '{content_param}[{j}]': expected an object with a 'type'."
                        ),
                    ));
                }
            }
            Ok(())
        }
        // An assistant message may carry only tool calls.
        None | Some(Value::Null) if role == "assistant" => Ok(()),
        None | Some(Value::Null) => Err(ApiError::invalid(
            &content_param,
            format!("Missing required parameter: '{content_param}'."),
        )),
        Some(_) => Err(ApiError::invalid(
            &content_param,
            format!(
                "Invalid type for '{content_param}': expected a string or an array of content parts."
            ),
        )),
    }
}

fn optional_bool(body: &Map<String, Value>, name: &str) -> Result<Option<bool>, ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ApiError::invalid(
            name,
            format!("Invalid type for '{name}': expected a boolean."),
        )),
    }
}

/// A non-empty string, an array of non-empty strings, a token array or an array of token arrays
/// (embeddings `input`, completions `prompt`).
fn text_or_tokens(value: Option<&Value>) -> bool {
    match value {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(items)) if items.is_empty() => false,
        Some(Value::Array(items)) => {
            items
                .iter()
                .all(|i| i.as_str().is_some_and(|s| !s.is_empty()))
                || items.iter().all(Value::is_u64)
                || items.iter().all(|i| {
                    i.as_array()
                        .is_some_and(|t| !t.is_empty() && t.iter().all(Value::is_u64))
                })
        }
        _ => false,
    }
}

/// `stream` and `stream_options.include_usage` (only allowed with `stream`).
fn stream_flags(body: &Map<String, Value>) -> Result<(bool, bool), ApiError> {
    let stream = optional_bool(body, "stream")?.unwrap_or(false);
    let mut wants_usage = false;
    match body.get("stream_options") {
        None | Some(Value::Null) => {}
        Some(Value::Object(o)) => {
            if !stream {
                return Err(ApiError::invalid(
                    "stream_options",
                    "'stream_options' is only allowed when 'stream' is true.",
                ));
            }
            match o.get("include_usage") {
                None | Some(Value::Null) => {}
                Some(Value::Bool(b)) => wants_usage = *b,
                Some(_) => {
                    return Err(ApiError::invalid(
                        "stream_options.include_usage",
                        "Invalid type for 'stream_options.include_usage': expected a boolean.",
                    ));
                }
            }
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "stream_options",
                "Invalid type for 'stream_options': expected an object.",
            ));
        }
    }
    Ok((stream, wants_usage))
}

/// One optional chat parameter's type (`null` is absent); names the chat convention does not
/// check pass.
fn chat_parameter(name: &str, v: &Value) -> Result<(), ApiError> {
    let expected = match name {
        "temperature" | "top_p" | "presence_penalty" | "frequency_penalty" => {
            return number(name, v);
        }
        "max_tokens" | "max_completion_tokens" | "n" => return integer(name, v),
        // `seed` is any 64-bit integer in the convention (clients send -1 for "random").
        "seed" if !(v.is_null() || v.is_i64() || v.is_u64()) => "an integer",
        "stop"
            if !(v.is_null()
                || v.is_string()
                || v.as_array().is_some_and(|a| a.iter().all(Value::is_string))) =>
        {
            "a string or an array of strings"
        }
        "tools" | "functions" if !(v.is_null() || v.is_array()) => "an array",
        "user" if !(v.is_null() || v.is_string()) => "a string",
        _ => return Ok(()),
    };
    Err(ApiError::invalid(
        name,
        format!("Invalid type for '{name}': expected {expected}."),
    ))
}

fn optional_number(body: &Map<String, Value>, name: &str) -> Result<(), ApiError> {
    body.get(name).map_or(Ok(()), |v| number(name, v))
}

fn optional_integer(body: &Map<String, Value>, name: &str) -> Result<(), ApiError> {
    body.get(name).map_or(Ok(()), |v| integer(name, v))
}

fn number(name: &str, v: &Value) -> Result<(), ApiError> {
    match v {
        Value::Null | Value::Number(_) => Ok(()),
        _ => Err(ApiError::invalid(
            name,
            format!("Invalid type for '{name}': expected a number."),
        )),
    }
}

fn integer(name: &str, v: &Value) -> Result<(), ApiError> {
    match v {
        Value::Null => Ok(()),
        v if v.is_u64() => Ok(()),
        _ => Err(ApiError::invalid(
            name,
            format!("Invalid type for '{name}': expected a non-negative integer."),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat(v: Value) -> Result<ChatRequest, ApiError> {
        ChatRequest::parse(v.as_object().unwrap().clone())
    }

    #[test]
    fn seed_is_any_64_bit_integer() {
        for seed in [
            json!(-1),
            json!(0),
            json!(i64::MIN),
            json!(u64::MAX),
            Value::Null,
        ] {
            let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "seed": seed});
            assert!(chat(body).is_ok(), "{seed}");
        }
        for seed in [json!(1.5), json!("7"), json!(true)] {
            let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "seed": seed});
            assert_eq!(chat(body).unwrap_err().param.as_deref(), Some("seed"));
        }
    }

    #[test]
    fn accepts_the_convention_and_reads_stream_flags() {
        let r = chat(
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                            "stream": true, "stream_options": {"include_usage": true},
                            "tools": [], "temperature": 0.2}),
        )
        .unwrap();
        assert!(r.stream && r.wants_usage);
        assert!(
            chat(json!({"model": "m", "messages": [
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "user", "content": [{"type": "text", "text": "x"}]}]}))
            .is_ok()
        );
    }

    #[test]
    fn names_the_offending_parameter() {
        let cases = [
            (
                json!({"messages": [{"role": "user", "content": "x"}]}),
                "model",
            ),
            (json!({"model": 3, "messages": []}), "model"),
            (json!({"model": "m"}), "messages"),
            (json!({"model": "m", "messages": []}), "messages"),
            (json!({"model": "m", "messages": "hi"}), "messages"),
            (
                json!({"model": "m", "messages": [{"content": "x"}]}),
                "messages[0].role",
            ),
            (
                json!({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}),
                "messages[0].role",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": 5}]}),
                "messages[0].content",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user"}]}),
                "messages[0].content",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}),
                "stream",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {}}),
                "stream_options",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}),
                "max_tokens",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}),
                "temperature",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 1.5}),
                "n",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "seed": "1"}),
                "seed",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stop": [1]}),
                "stop",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": {}}),
                "tools",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "user": 7}),
                "user",
            ),
        ];
        for (body, param) in cases {
            let e = chat(body.clone()).unwrap_err();
            assert_eq!(e.status, 400, "{body}");
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
        }
    }

    #[test]
    fn embeddings_inputs() {
        let ok = |v: Value| EmbeddingsRequest::parse(v.as_object().unwrap().clone()).is_ok();
        assert!(ok(json!({"model": "e", "input": "hello"})));
        assert!(ok(json!({"model": "e", "input": ["a", "b"]})));
        assert!(ok(json!({"model": "e", "input": [1, 2, 3]})));
        assert!(ok(json!({"model": "e", "input": [[1, 2], [3]]})));
        assert!(!ok(json!({"model": "e", "input": []})));
        assert!(!ok(json!({"model": "e", "input": ""})));
        assert!(!ok(json!({"model": "e", "input": ["a", 1]})));
        assert!(!ok(json!({"model": "e"})));
        assert!(!ok(
            json!({"model": "e", "input": "x", "encoding_format": "hex"})
        ));
    }
}

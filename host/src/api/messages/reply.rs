//! From a chat completion back to the Messages API: a whole answer → a `message` (`msg_…` id,
//! the routed model, content blocks `thinking` → `text` → `tool_use`, `stop_reason`, usage), and
//! the pieces the stream (`stream.rs`) shares with it: the stop reason and the usage.

use serde_json::{Value, json};

/// A new message id, `msg_` and a v7 UUID.
pub fn message_id() -> String {
    format!("msg_{}", uuid::Uuid::now_v7().simple())
}

/// The signature given to a `thinking` block made from a chat upstream's reasoning text:
/// Messages clients drop a thinking block without one. It is not a proof of anything (the
/// reasoning is not sent to a chat upstream again): a fingerprint of the text, so a replayed
/// block is recognisable. A native upstream's own signature (`reasoning_signature`, read by
/// `upstream::messages`) is kept instead, so the client can replay the block to it.
pub fn thinking_signature(thinking: &str) -> String {
    use sha2::Digest as _;
    format!(
        "sovereign:{}",
        hex::encode(sha2::Sha256::digest(thinking.as_bytes()))
    )
}

/// A chat tool call's arguments as a Messages `input` object. Arguments that are not a JSON
/// object are kept, under `_invalid_arguments`, rather than sent as `{}`: the client's schema
/// check then fails visibly and the agent can retry, where an empty input would silently run the
/// tool with nothing.
pub fn tool_input(arguments: &str) -> Value {
    let trimmed = arguments.trim();
    if trimmed.is_empty() {
        return json!({});
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"_invalid_arguments": arguments}),
    }
}

/// The Messages stop reason of a chat `finish_reason`, and the stop sequence that ended the
/// answer when the upstream names one (vLLM's `stop_reason`) among those asked for.
pub fn stop_reason(
    finish_reason: Option<&str>,
    matched: Option<&Value>,
    stop_sequences: &[String],
) -> (&'static str, Value) {
    if let Some(s) = matched.and_then(Value::as_str)
        && stop_sequences.iter().any(|q| q == s)
    {
        return ("stop_sequence", json!(s));
    }
    let reason = match finish_reason {
        Some("length") => "max_tokens",
        Some("tool_calls" | "function_call") => "tool_use",
        Some("content_filter") => "refusal",
        _ => "end_turn",
    };
    (reason, Value::Null)
}

/// Chat usage → Messages usage. Tokens read from the upstream's prompt cache are
/// `cache_read_input_tokens`, and `input_tokens` is the rest, as the Messages API counts them.
pub fn usage(chat: Option<&Value>) -> Value {
    let get = |p: &str| {
        chat.and_then(|u| u.pointer(p))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let prompt = get("/prompt_tokens");
    let cached = get("/prompt_tokens_details/cached_tokens").min(prompt);
    // A native upstream's cache writes (`upstream::messages` keeps them here).
    let written = get("/cache_creation_input_tokens").min(prompt - cached);
    json!({
        "input_tokens": prompt - cached - written,
        "output_tokens": get("/completion_tokens"),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
    })
}

/// The reasoning text of a chat message or delta, under either name upstreams use.
pub fn reasoning(message: &Value) -> Option<&str> {
    message
        .get("reasoning_content")
        .or_else(|| message.get("reasoning"))
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
}

/// A whole chat completion → the `message` object.
pub fn message(answer: &Value, id: &str, model: &str, stop_sequences: &[String]) -> Value {
    let choice = &answer["choices"][0];
    let m = &choice["message"];
    let mut content = Vec::new();
    let signature = m.get("reasoning_signature").and_then(Value::as_str);
    if let Some(r) = reasoning(m).or(signature.map(|_| "")) {
        let signature = signature.map_or_else(|| thinking_signature(r), str::to_owned);
        content.push(json!({"type": "thinking", "thinking": r, "signature": signature}));
    }
    if let Some(text) = m.get("content").and_then(Value::as_str)
        && !text.is_empty()
    {
        content.push(json!({"type": "text", "text": text}));
    }
    for call in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        content.push(json!({
            "type": "tool_use",
            "id": call["id"],
            "name": call.pointer("/function/name").cloned().unwrap_or_else(|| json!("")),
            "input": tool_input(call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or_default()),
        }));
    }
    if content.is_empty() {
        content.push(json!({"type": "text", "text": ""}));
    }
    let (reason, sequence) = stop_reason(
        choice.get("finish_reason").and_then(Value::as_str),
        choice.get("stop_reason"),
        stop_sequences,
    );
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": sequence,
        "usage": usage(answer.get("usage")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_answer_gives_thinking_text_and_tool_use_blocks_in_order() {
        let answer = json!({
            "choices": [{"finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Let me look.", "reasoning_content": "need the tool",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "read", "arguments": "{\"path\":\"a.txt\"}"}}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 9,
                      "prompt_tokens_details": {"cached_tokens": 100}}
        });
        let m = message(&answer, "msg_1", "qwen", &[]);
        let kinds: Vec<&str> = m["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["thinking", "text", "tool_use"]);
        assert!(
            m["content"][0]["signature"]
                .as_str()
                .unwrap()
                .starts_with("sovereign:")
        );
        assert_eq!(m["content"][2]["input"], json!({"path": "a.txt"}));
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(
            m["usage"],
            json!({"input_tokens": 20, "output_tokens": 9,
                   "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100})
        );
    }

    #[test]
    fn stop_reasons_and_broken_arguments() {
        let seqs = ["END".to_string()];
        assert_eq!(
            stop_reason(Some("stop"), Some(&json!("END")), &seqs).0,
            "stop_sequence"
        );
        assert_eq!(
            stop_reason(Some("stop"), Some(&json!(151645)), &seqs).0,
            "end_turn"
        );
        assert_eq!(stop_reason(Some("length"), None, &seqs).0, "max_tokens");
        assert_eq!(
            stop_reason(Some("content_filter"), None, &seqs).0,
            "refusal"
        );
        assert_eq!(
            tool_input("{\"a\":"),
            json!({"_invalid_arguments": "{\"a\":"})
        );
        assert_eq!(tool_input(""), json!({}));
        let empty = message(
            &json!({"choices": [{"message": {"content": null}}]}),
            "m",
            "x",
            &[],
        );
        assert_eq!(empty["content"], json!([{"type": "text", "text": ""}]));
    }
}

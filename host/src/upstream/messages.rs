//! An upstream that speaks the Anthropic Messages API natively (`messages = "native"`; vLLM,
//! Ollama ≥ 0.14, llama.cpp server, SGLang), read back as the chat completion the rest of the
//! pipeline reads: the whole answer ([`whole_to_chat`]) and the stream, one Messages event at a
//! time ([`ToChat`], driven by the relay in `sse.rs`). The answer phases (the guardrail's output
//! stage, settling at the real usage, metrics, the journal) then run unchanged, and
//! `api/messages` re-tells the chat form as a message again.
//!
//! What chat has no field for travels in fields the chat readers ignore: a thinking block's
//! `signature` as `reasoning_signature` (so the client gets the upstream's own signature back and
//! can replay the block), the matched stop sequence as `stop_reason` (vLLM's field), the tokens
//! written to the prompt cache as `usage.cache_creation_input_tokens`.

use serde_json::{Map, Value, json};

/// A Messages `stop_reason` as a chat `finish_reason`.
fn finish_reason(stop_reason: Option<&str>) -> Option<&'static str> {
    Some(match stop_reason? {
        "max_tokens" | "model_context_window_exceeded" => "length",
        "tool_use" => "tool_calls",
        "refusal" => "content_filter",
        _ => "stop",
    })
}

/// Messages usage as chat usage: every prompt token (read from or written to the cache or not)
/// in `prompt_tokens`, so the charge covers them all.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tokens {
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
}

impl Tokens {
    /// Takes what `usage` says (the stream's `message_delta` repeats or updates the counts).
    fn read(&mut self, usage: Option<&Value>) {
        let Some(u) = usage else { return };
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(n) = get("input_tokens") {
            self.input = n;
        }
        if let Some(n) = get("cache_read_input_tokens") {
            self.cache_read = n;
        }
        if let Some(n) = get("cache_creation_input_tokens") {
            self.cache_creation = n;
        }
        if let Some(n) = get("output_tokens") {
            self.output = n;
        }
    }

    fn chat(self) -> Value {
        let prompt = self.input + self.cache_read + self.cache_creation;
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": self.output,
            "total_tokens": prompt + self.output,
            "prompt_tokens_details": {"cached_tokens": self.cache_read},
            "cache_creation_input_tokens": self.cache_creation,
        })
    }
}

/// A whole `message` as a chat completion: thinking → `reasoning_content` (and
/// `reasoning_signature`), text → `content`, `tool_use` → `tool_calls`, the stop reason, usage.
pub fn whole_to_chat(message: &Value) -> Value {
    let mut reasoning = String::new();
    let mut signature = None;
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match block.get("type").and_then(Value::as_str) {
            Some("thinking") => {
                reasoning.push_str(block["thinking"].as_str().unwrap_or_default());
                signature = block.get("signature").and_then(Value::as_str);
            }
            Some("text") => text.push_str(block["text"].as_str().unwrap_or_default()),
            Some("tool_use") => calls.push(json!({
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": block.get("input").map_or_else(|| "{}".to_string(), Value::to_string)},
            })),
            _ => {}
        }
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    m.insert(
        "content".into(),
        if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            json!(text)
        },
    );
    if !reasoning.is_empty() || signature.is_some() {
        m.insert("reasoning_content".into(), json!(reasoning));
        m.insert("reasoning_signature".into(), json!(signature));
    }
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    let mut tokens = Tokens::default();
    tokens.read(message.get("usage"));
    let mut choice = json!({
        "index": 0,
        "message": m,
        "finish_reason": finish_reason(message.get("stop_reason").and_then(Value::as_str)).unwrap_or("stop"),
    });
    if let Some(s) = message.get("stop_sequence").filter(|s| s.is_string()) {
        choice["stop_reason"] = s.clone();
    }
    json!({
        "id": message.get("id").cloned().unwrap_or(Value::Null),
        "object": "chat.completion",
        "model": message.get("model").cloned().unwrap_or(Value::Null),
        "choices": [choice],
        "usage": tokens.chat(),
    })
}

/// A Messages stream read as chat chunks, one event at a time.
#[derive(Debug, Default)]
pub struct ToChat {
    /// The chat tool-call index of each `tool_use` block, by block index.
    tools: Vec<(u64, u64)>,
    tokens: Tokens,
}

/// What one Messages event comes to.
#[derive(Debug, Default, PartialEq)]
pub struct Told {
    /// Chat chunks, in order (an `error` chunk for an error event).
    pub chunks: Vec<Value>,
    /// `message_stop`: the stream is complete (`[DONE]`).
    pub done: bool,
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"object": "chat.completion.chunk",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

impl ToChat {
    /// One event's `data` (its `type` names it, as the `event:` line does).
    pub fn event(&mut self, v: &Value) -> Told {
        let mut told = Told::default();
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        match v.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                self.tokens.read(v.pointer("/message/usage"));
                // The prompt's count, for the client's own `message_start` (`api/messages`).
                let mut first = chunk(json!({"role": "assistant"}), None);
                first["usage"] = self.tokens.chat();
                told.chunks.push(first);
            }
            Some("content_block_start") => {
                let block = &v["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            told.chunks.push(chunk(json!({"content": t}), None));
                        }
                    }
                    Some("thinking") => {
                        let t = block["thinking"].as_str().unwrap_or_default();
                        told.chunks
                            .push(chunk(json!({"reasoning_content": t}), None));
                    }
                    Some("tool_use") => {
                        let n = self.tools.len() as u64;
                        self.tools.push((index, n));
                        // Some servers put the whole input in the start and send no deltas.
                        let args = match block.get("input") {
                            Some(Value::Object(o)) if !o.is_empty() => {
                                Value::Object(o.clone()).to_string()
                            }
                            _ => String::new(),
                        };
                        told.chunks.push(chunk(
                            json!({"tool_calls": [{"index": n, "id": block["id"], "type": "function",
                                                   "function": {"name": block["name"], "arguments": args}}]}),
                            None,
                        ));
                    }
                    _ => {}
                }
            }
            Some("content_block_delta") => {
                let d = &v["delta"];
                let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or_default();
                let delta = match d.get("type").and_then(Value::as_str) {
                    Some("text_delta") => json!({"content": s("text")}),
                    Some("thinking_delta") => json!({"reasoning_content": s("thinking")}),
                    Some("signature_delta") => json!({"reasoning_signature": s("signature")}),
                    Some("input_json_delta") => {
                        let n = self
                            .tools
                            .iter()
                            .find(|(b, _)| *b == index)
                            .map_or(0, |(_, n)| *n);
                        json!({"tool_calls": [{"index": n, "function": {"arguments": s("partial_json")}}]})
                    }
                    _ => return told,
                };
                told.chunks.push(chunk(delta, None));
            }
            Some("message_delta") => {
                self.tokens.read(v.get("usage"));
                let stop = v.pointer("/delta/stop_reason").and_then(Value::as_str);
                if let Some(f) = finish_reason(stop) {
                    let mut c = chunk(json!({}), Some(f));
                    if let Some(s) = v.pointer("/delta/stop_sequence").filter(|s| s.is_string()) {
                        c["choices"][0]["stop_reason"] = s.clone();
                    }
                    told.chunks.push(c);
                }
            }
            Some("message_stop") => {
                told.chunks
                    .push(json!({"object": "chat.completion.chunk", "choices": [],
                                        "usage": self.tokens.chat()}));
                told.done = true;
            }
            Some("error") => {
                let e = &v["error"];
                told.chunks.push(json!({"error": {
                    "message": e.get("message").cloned().unwrap_or(json!("the upstream failed")),
                    "type": e.get("type").cloned().unwrap_or(json!("api_error")),
                    "code": null,
                }}));
            }
            _ => {} // ping, and events this gateway does not know yet
        }
        told
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_message_reads_as_a_chat_completion() {
        let chat = whole_to_chat(&json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90,
                      "cache_creation_input_tokens": 3},
        }));
        let m = &chat["choices"][0]["message"];
        assert_eq!(m["reasoning_content"], "hmm");
        assert_eq!(m["reasoning_signature"], "sig-1");
        assert_eq!(m["content"], "Let me check.");
        assert_eq!(
            m["tool_calls"][0]["function"]["arguments"],
            "{\"path\":\"a\"}"
        );
        assert_eq!(chat["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chat["usage"]["prompt_tokens"], 103);
        assert_eq!(chat["usage"]["prompt_tokens_details"]["cached_tokens"], 90);
        assert_eq!(chat["usage"]["completion_tokens"], 5);
    }

    #[test]
    fn a_stream_reads_as_chat_chunks_with_fragmented_input_and_the_usage_at_the_end() {
        let mut c = ToChat::default();
        let events = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 12, "output_tokens": 1}}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "S"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
            json!({"type": "message_stop"}),
        ];
        let told: Vec<Told> = events.iter().map(|e| c.event(e)).collect();
        assert!(told[..11].iter().all(|t| !t.done) && told[11].done);
        assert_eq!(
            told[4].chunks[0]["choices"][0]["delta"]["reasoning_signature"],
            "S"
        );
        let args: String = told[6..9]
            .iter()
            .flat_map(|t| &t.chunks)
            .map(|c| {
                c.pointer("/choices/0/delta/tool_calls/0/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(args, "{\"a\":1}");
        assert_eq!(
            told[10].chunks[0]["choices"][0]["finish_reason"],
            "tool_calls"
        );
        assert_eq!(told[11].chunks[0]["usage"]["prompt_tokens"], 12);
        assert_eq!(told[11].chunks[0]["usage"]["completion_tokens"], 7);
        assert!(told[1].chunks.is_empty());
    }
}

//! The simulator's Anthropic Messages door (`POST /v1/messages`), as vLLM, Ollama and llama.cpp
//! serve it: the same deterministic answer as chat, as a `message` or its named SSE events —
//! `message_start` with the real input usage, a `thinking` block (when the request asks for
//! thinking or the model's behaviour says `reasoning`) with its signature, a `text` block or a
//! `tool_use` block (the first tool offered; its input streamed in fragments when the behaviour
//! says so), `message_delta` with the stop reason and usage, `message_stop`. A replayed thinking
//! block whose signature is not the simulator's is refused (400), as the Messages API does, so a
//! test sees that a gateway passed it back unmodified.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::{FailMode, Sim, answer, stream_response};

/// The text of a Messages `content` (a string, or its text blocks; a `tool_result`'s content).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("tool_result") => text_of(&b["content"]),
                _ => b
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
            })
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// A replayed thinking block with a signature the simulator did not give.
fn forged_thinking(messages: &[Value]) -> bool {
    messages
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("thinking"))
        .any(|b| {
            let thinking = b["thinking"].as_str().unwrap_or_default();
            b["signature"].as_str() != Some(answer::signature(thinking).as_str())
        })
}

pub(super) async fn create(State(sim): State<Sim>, headers: HeaderMap, bytes: Bytes) -> Response {
    let (body, model, behaviour) = match sim.receive("/v1/messages", &headers, &bytes).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if forged_thinking(&messages) {
        let e = json!({"type": "error", "error": {"type": "invalid_request_error",
                       "message": "Invalid `signature` in `thinking` block"}});
        return (StatusCode::BAD_REQUEST, Json(e)).into_response();
    }
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let answering_a_tool = last["content"]
        .as_array()
        .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"));
    // The question as chat would see it: the tool's result, else the last user text.
    let role = if answering_a_tool { "tool" } else { "user" };
    let question = json!({"role": role, "content": text_of(&last["content"])});
    let mut tokens = match sim.reply(model.id) {
        Some(text) => answer::split(&text),
        None => answer::answer_tokens(&model, std::slice::from_ref(&question)),
    };
    let mut stop_reason = "end_turn";
    let mut stop_sequence = Value::Null;
    if let Some(max) = body.get("max_tokens").and_then(Value::as_u64)
        && let Ok(max) = usize::try_from(max)
        && max < tokens.len()
    {
        tokens.truncate(max);
        stop_reason = "max_tokens";
    }
    let sequences = body.get("stop_sequences").and_then(Value::as_array);
    for s in sequences.into_iter().flatten().filter_map(Value::as_str) {
        let text = tokens.concat();
        if let Some(at) = text.find(s).filter(|_| !s.is_empty()) {
            tokens = answer::split(&text[..at]);
            (stop_reason, stop_sequence) = ("stop_sequence", json!(s));
        }
    }
    let text = tokens.concat();
    let thinks = behaviour.reasoning
        || matches!(
            body.pointer("/thinking/type").and_then(Value::as_str),
            Some("enabled" | "adaptive")
        );
    let thinking = if thinks {
        answer::reasoning_tokens(
            &model,
            &text_of(&last["content"]),
            sim.reply(model.id).as_deref(),
        )
    } else {
        Vec::new()
    };
    let tool = answer::tool_call(&body, answering_a_tool, &text);
    if tool.is_some() {
        stop_reason = "tool_use";
    }
    let system = json!({"content": text_of(body.get("system").unwrap_or(&Value::Null))});
    let input_tokens = answer::prompt_tokens(&messages) + answer::prompt_tokens(&[system]);
    let output_tokens = (tokens.len() + thinking.len()) as u64;
    let usage = json!({"input_tokens": input_tokens, "output_tokens": output_tokens,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let id = format!(
        "msg_sim_{}",
        sim.0
            .total_requests
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    let tool_id = "toolu_sim_1";

    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        let mut content = Vec::new();
        if thinks {
            let t = thinking.concat();
            content.push(
                json!({"type": "thinking", "signature": answer::signature(&t), "thinking": t}),
            );
        }
        match &tool {
            Some((name, input)) => {
                content
                    .push(json!({"type": "tool_use", "id": tool_id, "name": name, "input": input}));
            }
            None => content.push(json!({"type": "text", "text": text})),
        }
        return Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model.id,
            "content": content, "stop_reason": stop_reason, "stop_sequence": stop_sequence,
            "usage": usage,
        }))
        .into_response();
    }

    let mut events = vec![
        (
            "message_start",
            json!({"message": {
            "id": id, "type": "message", "role": "assistant", "model": model.id, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
        ),
        ("ping", json!({})),
    ];
    let mut index = 0;
    let mut block = |events: &mut Vec<(&'static str, Value)>, start: Value, deltas: Vec<Value>| {
        events.push((
            "content_block_start",
            json!({"index": index, "content_block": start}),
        ));
        for d in deltas {
            events.push(("content_block_delta", json!({"index": index, "delta": d})));
        }
        events.push(("content_block_stop", json!({"index": index})));
        index += 1;
    };
    if thinks {
        let mut deltas: Vec<Value> = thinking
            .iter()
            .map(|t| json!({"type": "thinking_delta", "thinking": t}))
            .collect();
        deltas.push(
            json!({"type": "signature_delta", "signature": answer::signature(&thinking.concat())}),
        );
        block(
            &mut events,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    match &tool {
        Some((name, input)) => {
            let deltas = answer::fragments(&input.to_string(), behaviour.fragment_tool_arguments)
                .into_iter()
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect();
            let start = json!({"type": "tool_use", "id": tool_id, "name": name, "input": {}});
            block(&mut events, start, deltas);
        }
        None => {
            let deltas = tokens
                .iter()
                .map(|t| json!({"type": "text_delta", "text": t}))
                .collect();
            block(&mut events, json!({"type": "text", "text": ""}), deltas);
        }
    }
    events.push((
        "message_delta",
        json!({
            "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
            "usage": {"output_tokens": output_tokens},
        }),
    ));
    events.push(("message_stop", json!({})));
    let frames: Vec<Bytes> = events
        .into_iter()
        .map(|(name, mut data)| {
            data["type"] = json!(name);
            Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
        })
        .collect();
    let cut_at = (behaviour.fail == FailMode::DropMidStream).then_some(frames.len() / 2);
    stream_response(sim, frames, behaviour.token_interval_ms, cut_at)
}

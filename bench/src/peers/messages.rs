//! The peers bench's Messages row (issue 45): the all-policies load through `POST /v1/messages`
//! (the Anthropic SDKs' shape: `x-api-key`, `max_tokens`, a `message` back) on the same gateway
//! process that was just measured on `/v1/chat/completions`, so the ratio of the two rows is the
//! cost of the Messages dialect alone; and the translation's own cost per request, timed here
//! in-process over the gateway's own code (`sovereign::api::messages`): the request converted to
//! a chat body, the chat answer re-told as a `message`, and a chat stream re-told as the Messages
//! events.

use std::hint::black_box;
use std::time::Instant;

use anyhow::Context as _;
use bytes::Bytes;
use serde_json::{Map, Value, json};
use sovereign::api::messages::{reply, request, stream};

use crate::load::Target;
use crate::round3;

/// The goal: Messages within 10% of chat completions on the same gateway.
pub(super) const GOAL_OVERHEAD: f64 = 0.10;

/// The path the row's requests go to.
pub(super) const PATH: &str = "/v1/messages";

/// The row's request: the peers' `"hi"` as a Messages body.
pub(super) fn body(model: &str, max_tokens: u32) -> anyhow::Result<Bytes> {
    Ok(Bytes::from(serde_json::to_vec(&json!({
        "model": model,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": "hi"}],
    }))?))
}

/// The Messages target on a gateway at `url`: the key as `x-api-key`, as the Anthropic SDKs send it.
pub(super) fn target(
    name: &'static str,
    url: &str,
    secret: &str,
    model: &str,
    max_tokens: u32,
) -> anyhow::Result<Target> {
    Ok(Target {
        name,
        uri: format!("{url}{PATH}").parse()?,
        authorization: None,
        headers: vec![
            ("x-api-key", secret.to_string()),
            ("anthropic-version", "2023-06-01".to_string()),
        ],
        body: body(model, max_tokens)?,
        stream: false,
    })
}

/// The answer's model, if `json` is a Messages `message` with some text.
pub(super) fn message(json: &Value) -> Result<String, String> {
    let text = json
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    if json["type"] != "message" || text.is_empty() {
        return Err(format!("200 but not a message: {json}"));
    }
    Ok(json["model"].as_str().unwrap_or("?").to_string())
}

/// The guardrail's refusal in the Messages shape: a 400 `invalid_request_error` naming the entity.
pub(super) fn refused(json: &Value) -> bool {
    json["type"] == "error"
        && json.pointer("/error/type") == Some(&json!("invalid_request_error"))
        && json
            .pointer("/error/message")
            .and_then(Value::as_str)
            .is_some_and(|m| m.contains("credit_card"))
}

/// What the Messages row costs next to the chat row of the same gateway.
pub(super) fn versus_chat(chat: (f64, f64), messages: (f64, f64)) -> Value {
    let ((chat_rps, chat_p50), (rps, p50)) = (chat, messages);
    let overhead = if rps > 0.0 {
        chat_rps / rps - 1.0
    } else {
        f64::NAN
    };
    json!({
        "chat_rps": round3(chat_rps),
        "messages_rps": round3(rps),
        "chat_over_messages": round3(chat_rps / rps),
        "p50_ms_added": round3(p50 - chat_p50),
        "goal_overhead": GOAL_OVERHEAD,
        "within_goal": overhead <= GOAL_OVERHEAD,
    })
}

/// A request as a coding agent sends it each turn: a long system prompt, a dozen tools with
/// their schemas, a tool round trip in the history.
fn agent_turn() -> Value {
    let tools: Vec<Value> = (0..12)
        .map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "description": "Runs one step of the agent's work. ".repeat(12),
                "input_schema": {"type": "object", "properties": {
                    "path": {"type": "string", "description": "A file path."},
                    "content": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["path"]},
            })
        })
        .collect();
    json!({
        "model": "auto-router", "max_tokens": 32000, "stream": false,
        "system": [{"type": "text", "text": "You are a coding agent. ".repeat(350),
                    "cache_control": {"type": "ephemeral"}}],
        "tools": tools,
        "metadata": {"user_id": "bench"},
        "context_management": {"edits": []}, "output_config": {"effort": "high"},
        "thinking": {"type": "adaptive"},
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nBe careful.\n</system-reminder>\n"},
                {"type": "text", "text": "Read the README and fix the typo."}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "tool_0", "input": {"path": "README.md"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": "# Sovereign Gateway\n".repeat(40)}]},
        ],
    })
}

/// A chat answer (whole) and the same answer streamed as chat chunks: `tokens` words, and a tool
/// call with `tool` when given.
fn chat_answer(tokens: usize, tool: bool) -> (Value, Vec<Value>) {
    let words: Vec<String> = (0..tokens)
        .map(|i| {
            if i == 0 {
                "Hello".into()
            } else {
                format!(" w{i}")
            }
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": words.concat()});
    let mut chunks: Vec<Value> = words
        .iter()
        .map(|w| json!({"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": null}]}))
        .collect();
    let finish = if tool {
        let args = json!({"path": "README.md", "content": "fixed"}).to_string();
        message["tool_calls"] = json!([{"id": "call_1", "type": "function",
                                        "function": {"name": "tool_1", "arguments": args}}]);
        chunks.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
            "id": "call_1", "type": "function", "function": {"name": "tool_1", "arguments": ""}}]}}]}));
        for part in args.as_bytes().chunks(8) {
            chunks.push(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0,
                "function": {"arguments": String::from_utf8_lossy(part)}}]}}]}),
            );
        }
        "tool_calls"
    } else {
        "stop"
    };
    let usage =
        json!({"prompt_tokens": 4000, "completion_tokens": tokens, "total_tokens": 4000 + tokens});
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    chunks.push(json!({"choices": [], "usage": usage}));
    let answer = json!({"id": "c1", "object": "chat.completion", "model": "m",
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage});
    (answer, chunks)
}

/// Mean time per call of `f` over `iterations` calls (after a tenth as many unmeasured).
fn per_call(iterations: u32, mut f: impl FnMut() -> anyhow::Result<usize>) -> anyhow::Result<f64> {
    for _ in 0..iterations / 10 {
        black_box(f()?);
    }
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(f()?);
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / f64::from(iterations.max(1)))
}

/// The translation's own cost, in µs per request, timed on this thread: for the bench's `"hi"`
/// and for a coding agent's turn, the request converted (`MessagesRequest::parse`, from the
/// parsed body, as the gateway has it), the whole answer re-told (`reply::message`, then
/// serialised) and the streamed answer re-told (`stream::Teller` over parsed chat chunks, each
/// event written out). Parsing the client's JSON and the upstream's is not counted: chat
/// completions parse them too.
pub fn translation_cost(iterations: u32) -> anyhow::Result<Value> {
    let hi: Map<String, Value> = serde_json::from_slice(&body("auto-router", 16)?)?;
    let Value::Object(agent) = agent_turn() else {
        unreachable!("agent_turn is an object")
    };
    let convert = |b: &Map<String, Value>| -> anyhow::Result<usize> {
        let r = request::MessagesRequest::parse(b, request::Endpoint::Create)
            .map_err(|e| anyhow::anyhow!("{e:?}"))
            .context("the bench's Messages body was refused")?;
        Ok(r.chat.len())
    };
    let whole = |answer: &Value| -> anyhow::Result<usize> {
        let m = reply::message(answer, &reply::message_id(), "llama-3.2-3b-instruct", &[]);
        Ok(serde_json::to_vec(&m)?.len())
    };
    let streamed = |chunks: &[Value]| -> anyhow::Result<usize> {
        let mut teller = stream::Teller::new(
            reply::message_id(),
            "llama-3.2-3b-instruct".into(),
            Vec::new(),
            4000,
        );
        let mut bytes = teller
            .start()
            .iter()
            .map(|f| f.bytes().len())
            .sum::<usize>();
        for c in chunks {
            let frames = teller
                .chunk(c)
                .map_err(|_| anyhow::anyhow!("interleaved tool calls"))?;
            bytes += frames.iter().map(|f| f.bytes().len()).sum::<usize>();
        }
        bytes += teller
            .finish()
            .iter()
            .map(|f| f.bytes().len())
            .sum::<usize>();
        Ok(bytes)
    };
    let (short, short_chunks) = chat_answer(8, false);
    let (long, long_chunks) = chat_answer(200, true);
    let row = |convert_us: f64, whole_us: f64, stream_us: f64, chunks: usize| {
        json!({"convert_request_us": round3(convert_us), "reply_us": round3(whole_us),
               "stream_us": round3(stream_us), "stream_chunks": chunks,
               "plain_total_us": round3(convert_us + whole_us),
               "streamed_total_us": round3(convert_us + stream_us)})
    };
    let hi_row = row(
        per_call(iterations, || convert(&hi))?,
        per_call(iterations, || whole(&short))?,
        per_call(iterations, || streamed(&short_chunks))?,
        short_chunks.len(),
    );
    let agent_row = row(
        per_call(iterations / 4, || convert(&agent))?,
        per_call(iterations / 4, || whole(&long))?,
        per_call(iterations / 4, || streamed(&long_chunks))?,
        long_chunks.len(),
    );
    Ok(json!({"iterations": iterations, "hi": hi_row, "agent_turn": agent_row}))
}

/// Prints the translation's cost (and returns it for the JSON line).
pub fn print_translation_cost(iterations: u32) -> anyhow::Result<Value> {
    let started = Instant::now();
    let cost = translation_cost(iterations)?;
    let line = |name: &str, r: &Value| {
        println!(
            "  {name:<44} convert {:>7.2} µs, reply {:>7.2} µs (plain total {:>7.2}), stream of {} chunks {:>8.2} µs (total {:>8.2})",
            r["convert_request_us"].as_f64().unwrap_or(f64::NAN),
            r["reply_us"].as_f64().unwrap_or(f64::NAN),
            r["plain_total_us"].as_f64().unwrap_or(f64::NAN),
            r["stream_chunks"],
            r["stream_us"].as_f64().unwrap_or(f64::NAN),
            r["streamed_total_us"].as_f64().unwrap_or(f64::NAN),
        );
    };
    println!(
        "Messages translation's own cost per request (this process, one thread, {} iterations, {:.1} s):",
        iterations,
        started.elapsed().as_secs_f64()
    );
    line("\"hi\" (the bench's request), 8-token answer", &cost["hi"]);
    line(
        "a coding agent's turn (12 tools, 8 KB system)",
        &cost["agent_turn"],
    );
    Ok(cost)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A short smoke of [`translation_cost`] takes well under this, even in a debug build.
    const SMOKE: Duration = Duration::from_secs(30);

    #[test]
    fn the_translation_loop_runs_the_gateways_code_and_reports_each_part() {
        let start = Instant::now();
        let cost = translation_cost(20).unwrap();
        assert!(start.elapsed() < SMOKE);
        for row in ["hi", "agent_turn"] {
            for part in ["convert_request_us", "reply_us", "stream_us"] {
                assert!(
                    cost[row][part].as_f64().unwrap() > 0.0,
                    "{row} {part}: {cost}"
                );
            }
        }
    }

    #[test]
    fn a_message_is_recognised_and_an_error_is_not() {
        let ok =
            json!({"type": "message", "model": "m", "content": [{"type": "text", "text": "hi"}]});
        assert_eq!(message(&ok).as_deref(), Ok("m"));
        assert!(message(&json!({"type": "error", "error": {"type": "api_error"}})).is_err());
        let card = json!({"type": "error", "error": {"type": "invalid_request_error",
                          "message": "blocked: credit_card"}});
        assert!(refused(&card));
    }

    #[test]
    fn the_comparison_says_whether_the_goal_is_met() {
        assert_eq!(
            versus_chat((1000.0, 1.0), (950.0, 1.05))["within_goal"],
            true
        );
        assert_eq!(
            versus_chat((1000.0, 1.0), (800.0, 1.3))["within_goal"],
            false
        );
    }
}

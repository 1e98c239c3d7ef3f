//! A streamed message: the relayed chat stream (already through the guardrail's output stage,
//! settled when it ends) re-told as the Messages API's named events. [`Teller`] is the state
//! machine, fed one chat chunk at a time, and keeps the rules clients depend on (the bugs peers
//! shipped, `../shared` notes §5):
//!
//! - exactly one `message_start`, first, with the prompt's token count (never all zeros: a native
//!   upstream's own, else the gateway's), then a `ping`;
//! - blocks in index order, one open at a time: `content_block_start` → deltas →
//!   `content_block_stop`; every delta targets the open block, none is started empty ahead of
//!   its content;
//! - reasoning (`reasoning_content`) in its own `thinking` block, with a `signature_delta` before
//!   its stop (a native upstream's own, `reasoning_signature`, when it sent one), closed before
//!   text or tools start;
//! - a tool call's argument fragments as `input_json_delta`s whose concatenation is the input
//!   (a tool call whose fragments come back after another block started is an error event, never
//!   a silently truncated input);
//! - `message_delta` (stop reason, cumulative usage) before `message_stop`; an upstream failure
//!   after the 200 is an `event: error` and ends the stream.

use axum::body::Body;
use bytes::Bytes;
use serde_json::{Value, json};

use super::reply;
use crate::pipeline::answer::chunks::{ChatChunks, ChatEvent};
use crate::pipeline::call::Call;

/// Events buffered between the teller and the client.
const CHANNEL: usize = 32;

/// The Messages stream of a relayed chat stream. A task reads the chat stream and writes the
/// events into a small channel the body drains; when the client goes, the channel closes, the
/// task stops and dropping the chat stream tells the relay (which settles and journals).
pub fn events(call: Call, mut teller: Teller, chat: Body) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(CHANNEL);
    tokio::spawn(async move {
        // The frames one chat chunk makes go out as one write: a stream of many small writes
        // costs the client a read (and the kernel a segment) each.
        let send = |frames: Vec<Frame>| {
            let tx = tx.clone();
            async move {
                if frames.is_empty() {
                    return Ok(());
                }
                let mut out = Vec::new();
                for frame in &frames {
                    frame.write_to(&mut out);
                }
                tx.send(Ok(Bytes::from(out))).await.map_err(|_| ())
            }
        };
        let told = async {
            let mut chunks = ChatChunks::new(chat);
            // `message_start` waits for the first chunk: a native upstream's carries its own
            // count of the prompt (`upstream::messages`).
            let mut first = Some(tokio::select! {
                e = chunks.next() => e,
                () = tx.closed() => return Err(()),
            });
            if let Some(ChatEvent::Chunk(v)) = &first {
                teller.prompt_usage(v);
            }
            send(teller.start()).await?;
            loop {
                // A client that left is noticed at once, so the upstream stops while the
                // guardrail still holds text back.
                let event = match first.take() {
                    Some(e) => e,
                    None => tokio::select! {
                        e = chunks.next() => e,
                        () = tx.closed() => return Err(()),
                    },
                };
                match event {
                    ChatEvent::Chunk(v) => match teller.chunk(&v) {
                        Ok(frames) => send(frames).await?,
                        Err(Interleaved) => {
                            let message = "the upstream interleaved two tool calls' arguments";
                            return send(vec![Frame::error("api_error", message)]).await;
                        }
                    },
                    ChatEvent::Failed(e) => {
                        let message = e["message"].as_str().unwrap_or("the upstream failed");
                        return send(vec![Frame::error("api_error", message)]).await;
                    }
                    ChatEvent::Done => return send(teller.finish()).await,
                }
            }
        };
        if told.await.is_err() {
            tracing::debug!(request_id = %call.ctx.id, "messages stream: the client left");
        }
    });
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// One named SSE event.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub event: &'static str,
    pub data: Value,
}

impl Frame {
    fn new(event: &'static str, mut data: Value) -> Frame {
        data["type"] = json!(event);
        Frame { event, data }
    }

    /// The frame on the wire: `event: …`, `data: …`, a blank line.
    pub fn bytes(&self) -> Bytes {
        let mut out = Vec::new();
        self.write_to(&mut out);
        Bytes::from(out)
    }

    /// [`Frame::bytes`], appended to `out`.
    fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(self.event.as_bytes());
        out.extend_from_slice(b"\ndata: ");
        // A `Value` always serializes.
        let _ = serde_json::to_writer(&mut *out, &self.data);
        out.extend_from_slice(b"\n\n");
    }

    /// An `error` event: the Messages error type and message.
    pub fn error(kind: &str, message: &str) -> Frame {
        Frame::new(
            "error",
            json!({"error": {"type": kind, "message": message}}),
        )
    }
}

/// The block open now.
#[derive(Debug)]
enum Open {
    Text,
    /// The reasoning so far, and the native upstream's signature when it sent one.
    Thinking(String, Option<String>),
    Tool(u64),
}

/// The chat stream's tool call came back after its block closed (an upstream interleaving its
/// tool calls' arguments): the stream ends with an error event rather than a truncated input.
#[derive(Debug, PartialEq, Eq)]
pub struct Interleaved;

#[derive(Debug)]
pub struct Teller {
    id: String,
    model: String,
    stop_sequences: Vec<String>,
    input_estimate: u64,
    /// The upstream's own prompt usage, when its first chunk carried it (a native upstream).
    start_usage: Option<Value>,
    /// The index the next block gets; the open block is `next - 1`.
    next: u64,
    open: Option<Open>,
    /// Chat tool-call indexes whose block was started (and possibly closed).
    calls: Vec<u64>,
    finish_reason: Option<String>,
    matched: Option<Value>,
    usage: Option<Value>,
}

impl Teller {
    /// `input_estimate`: the prompt's tokens as the gateway counted them (the facts phase), for
    /// `message_start`; the upstream's own count comes in `message_delta`.
    pub fn new(
        id: String,
        model: String,
        stop_sequences: Vec<String>,
        input_estimate: u64,
    ) -> Self {
        Teller {
            id,
            model,
            stop_sequences,
            input_estimate,
            start_usage: None,
            next: 0,
            open: None,
            calls: Vec::new(),
            finish_reason: None,
            matched: None,
            usage: None,
        }
    }

    /// Takes the upstream's prompt usage from the stream's first chunk, when it has one that is
    /// not all zeros (a native upstream's `message_start`).
    pub fn prompt_usage(&mut self, first: &Value) {
        let Some(u) = first.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let mut usage = reply::usage(Some(u));
        if usage["input_tokens"].as_u64().unwrap_or(0)
            + usage["cache_read_input_tokens"].as_u64().unwrap_or(0)
            > 0
        {
            usage["output_tokens"] = json!(1);
            self.start_usage = Some(usage);
        }
    }

    /// `message_start` and a first `ping`.
    pub fn start(&self) -> Vec<Frame> {
        let usage = self.start_usage.clone().unwrap_or_else(|| {
            json!({"input_tokens": self.input_estimate, "output_tokens": 1,
                   "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
        });
        vec![
            Frame::new(
                "message_start",
                json!({"message": {
                    "id": self.id, "type": "message", "role": "assistant", "model": self.model,
                    "content": [], "stop_reason": null, "stop_sequence": null,
                    "usage": usage,
                }}),
            ),
            Frame::new("ping", json!({})),
        ]
    }

    /// One chat chunk's events.
    pub fn chunk(&mut self, v: &Value) -> Result<Vec<Frame>, Interleaved> {
        let mut out = Vec::new();
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(u.clone());
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(out);
        };
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(r.to_owned());
        }
        if let Some(s) = choice.get("stop_reason").filter(|s| !s.is_null()) {
            self.matched = Some(s.clone());
        }
        let delta = &choice["delta"];
        let signature = delta
            .get("reasoning_signature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let reasoning = reply::reasoning(delta);
        if (reasoning.is_some() || signature.is_some())
            && !matches!(self.open, Some(Open::Thinking(..)))
        {
            self.open_block(
                Open::Thinking(String::new(), None),
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                &mut out,
            );
        }
        if let Some(r) = reasoning {
            if let Some(Open::Thinking(all, _)) = &mut self.open {
                all.push_str(r);
            }
            out.push(self.delta(json!({"type": "thinking_delta", "thinking": r})));
        }
        if let (Some(s), Some(Open::Thinking(_, kept))) = (signature, &mut self.open) {
            *kept = Some(s.to_owned());
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            if !matches!(self.open, Some(Open::Text)) {
                self.open_block(Open::Text, json!({"type": "text", "text": ""}), &mut out);
            }
            out.push(self.delta(json!({"type": "text_delta", "text": text})));
        }
        for tc in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let chat_index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
            let is_open = matches!(self.open, Some(Open::Tool(i)) if i == chat_index);
            if !is_open {
                if self.calls.contains(&chat_index) {
                    return Err(Interleaved);
                }
                self.calls.push(chat_index);
                let block = json!({
                    "type": "tool_use",
                    "id": tc["id"].as_str().map_or_else(|| format!("toolu_{}", uuid::Uuid::now_v7().simple()), str::to_owned),
                    "name": tc.pointer("/function/name").and_then(Value::as_str).unwrap_or_default(),
                    "input": {},
                });
                self.open_block(Open::Tool(chat_index), block, &mut out);
            }
            if let Some(args) = tc.pointer("/function/arguments").and_then(Value::as_str)
                && !args.is_empty()
            {
                out.push(self.delta(json!({"type": "input_json_delta", "partial_json": args})));
            }
        }
        Ok(out)
    }

    /// The end of a complete stream: the open block closed (an empty text block when the answer
    /// had none, as a whole answer has), `message_delta`, `message_stop`.
    pub fn finish(&mut self) -> Vec<Frame> {
        let mut out = Vec::new();
        if self.next == 0 {
            self.open_block(Open::Text, json!({"type": "text", "text": ""}), &mut out);
        }
        self.close_block(&mut out);
        let (reason, sequence) = reply::stop_reason(
            self.finish_reason.as_deref(),
            self.matched.as_ref(),
            &self.stop_sequences,
        );
        let mut usage = reply::usage(self.usage.as_ref());
        if self.usage.is_none() {
            usage["input_tokens"] = json!(self.input_estimate);
        }
        out.push(Frame::new(
            "message_delta",
            json!({"delta": {"stop_reason": reason, "stop_sequence": sequence}, "usage": usage}),
        ));
        out.push(Frame::new("message_stop", json!({})));
        out
    }

    fn delta(&self, delta: Value) -> Frame {
        Frame::new(
            "content_block_delta",
            json!({"index": self.next - 1, "delta": delta}),
        )
    }

    fn open_block(&mut self, open: Open, block: Value, out: &mut Vec<Frame>) {
        self.close_block(out);
        out.push(Frame::new(
            "content_block_start",
            json!({"index": self.next, "content_block": block}),
        ));
        self.next += 1;
        self.open = Some(open);
    }

    fn close_block(&mut self, out: &mut Vec<Frame>) {
        let Some(open) = self.open.take() else {
            return;
        };
        if let Open::Thinking(text, signature) = open {
            let signature = signature.unwrap_or_else(|| reply::thinking_signature(&text));
            out.push(self.delta(json!({"type": "signature_delta", "signature": signature})));
        }
        out.push(Frame::new(
            "content_block_stop",
            json!({"index": self.next - 1}),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(delta: Value) -> Value {
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
    }

    fn tell(chunks: &[Value]) -> Vec<Frame> {
        let mut t = Teller::new("msg_1".into(), "m".into(), Vec::new(), 42);
        let mut frames = t.start();
        for c in chunks {
            frames.extend(t.chunk(c).unwrap());
        }
        frames.extend(t.finish());
        frames
    }

    /// The invariants every streamed test checks (the Python suite has the same parser).
    fn check_invariants(frames: &[Frame]) {
        let names: Vec<&str> = frames.iter().map(|f| f.event).collect();
        assert_eq!(names.iter().filter(|n| **n == "message_start").count(), 1);
        assert_eq!(names[0], "message_start");
        let mut open: Option<u64> = None;
        let mut next = 0;
        for f in frames {
            let index = f.data["index"].as_u64();
            match f.event {
                "content_block_start" => {
                    assert!(open.is_none(), "a block started inside another");
                    assert_eq!(index, Some(next));
                    open = index;
                    next += 1;
                }
                "content_block_delta" => assert_eq!(index, open, "a delta outside its block"),
                "content_block_stop" => {
                    assert_eq!(index, open);
                    open = None;
                }
                _ => {}
            }
        }
        let delta = names.iter().position(|n| *n == "message_delta").unwrap();
        assert_eq!(names[delta + 1..], ["message_stop"]);
    }

    #[test]
    fn reasoning_text_and_two_tool_calls_make_four_blocks_in_order() {
        let frames = tell(&[
            chunk(json!({"role": "assistant", "reasoning_content": "Two "})),
            chunk(json!({"reasoning_content": "cities."})),
            chunk(json!({"content": "Checking"})),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "c0", "type": "function",
                                         "function": {"name": "weather", "arguments": ""}}]}),
            ),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Riyadh\"}"}}]})),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "c1", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
            ),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 12}}),
        ]);
        check_invariants(&frames);
        let starts: Vec<&Value> = frames
            .iter()
            .filter(|f| f.event == "content_block_start")
            .map(|f| &f.data["content_block"])
            .collect();
        assert_eq!(starts.len(), 4);
        assert_eq!(starts[0]["type"], "thinking");
        assert_eq!(starts[2]["id"], "c0");
        // The signature comes before the thinking block stops.
        let sig = frames
            .iter()
            .position(|f| f.data["delta"]["type"] == "signature_delta")
            .unwrap();
        assert_eq!(frames[sig + 1].event, "content_block_stop");
        assert_eq!(frames[sig + 1].data["index"], 0);
        // The input deltas of the first call concatenate to its input.
        let input: String = frames
            .iter()
            .filter(|f| f.data["index"] == 2 && f.data["delta"]["type"] == "input_json_delta")
            .map(|f| f.data["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&input).unwrap(),
            json!({"city": "Riyadh"})
        );
        let end = &frames[frames.len() - 2].data;
        assert_eq!(end["delta"]["stop_reason"], "tool_use");
        assert_eq!(end["usage"]["input_tokens"], 50);
        assert_eq!(end["usage"]["output_tokens"], 12);
        assert_eq!(frames[0].data["message"]["usage"]["input_tokens"], 42);
    }

    #[test]
    fn a_native_upstreams_signature_is_kept_and_closes_its_thinking_block() {
        let frames = tell(&[
            chunk(json!({"reasoning_content": "weigh it"})),
            chunk(json!({"reasoning_signature": "upstream-sig"})),
            chunk(json!({"content": "Done."})),
        ]);
        check_invariants(&frames);
        let sig = frames
            .iter()
            .position(|f| f.data["delta"]["type"] == "signature_delta")
            .unwrap();
        assert_eq!(frames[sig].data["delta"]["signature"], "upstream-sig");
        assert_eq!(frames[sig + 1].event, "content_block_stop");
        // A signature with no reasoning text still makes a (signed) thinking block.
        let only = tell(&[chunk(json!({"reasoning_signature": "s"}))]);
        check_invariants(&only);
        assert_eq!(only[2].data["content_block"]["type"], "thinking");
    }

    #[test]
    fn an_empty_stream_still_has_one_text_block_and_interleaving_is_refused() {
        let frames = tell(&[]);
        check_invariants(&frames);
        assert_eq!(
            frames
                .iter()
                .filter(|f| f.event == "content_block_start")
                .count(),
            1
        );
        let mut t = Teller::new("m".into(), "m".into(), Vec::new(), 1);
        t.chunk(&chunk(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{"}}]})))
            .unwrap();
        t.chunk(&chunk(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]})))
            .unwrap();
        let late = chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}));
        assert_eq!(t.chunk(&late), Err(Interleaved));
    }
}

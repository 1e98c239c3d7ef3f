//! Relays an upstream's server-sent-event stream to the client event by event, as it arrives.
//! Each `data:` event is re-addressed (`id` → the request id, `model` → the gateway's model id),
//! the usage chunk the gateway asked for is recorded and shown only to clients that asked for it,
//! and upstream failures mid-stream (error, silence past the idle timeout, deadline, a stream cut
//! before `[DONE]`) end the stream with an error event in the convention's shape. When the stream
//! ends — completed, failed, or dropped because the client went away — `on_finish` runs once.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{BoxStream, Stream, StreamExt};
use http_body::Body;
use http_body_util::BodyDataStream;
use serde_json::Value;
use tokio::time::Instant;

use super::messages::ToChat;
use super::{UpstreamError, Usage, classify};
use crate::domain::ModelId;

/// Longest line the relay buffers while waiting for its end; an upstream sending more is broken.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Most completion text kept for counting tokens when the upstream reports no usage.
const MAX_TEXT_BYTES: usize = 1024 * 1024;

pub struct RelayOptions {
    pub request_id: String,
    pub model: ModelId,
    /// The client set `stream_options.include_usage`.
    pub client_wants_usage: bool,
    pub idle_timeout: Duration,
    pub deadline: Instant,
    /// Renders an error as the JSON body of an SSE error event.
    pub error_body: fn(UpstreamError) -> Value,
    /// How to count the usage the client asked for when the upstream reports none.
    pub count_usage: Option<CountUsage>,
    /// The upstream streams Messages events, read as chat chunks (`messages::ToChat`).
    pub messages: bool,
}

/// The gateway's own count of a stream's tokens: the prompt's, and a counter for the text.
pub struct CountUsage {
    pub prompt_tokens: u64,
    pub count: Box<dyn Fn(&str) -> u64 + Send + Sync>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamOutcome {
    Completed,
    /// The client disconnected; the upstream request was dropped with it.
    ClientGone,
    UpstreamFailed(String),
}

#[derive(Debug, Clone)]
pub struct StreamSummary {
    pub outcome: StreamOutcome,
    pub usage: Option<Usage>,
    /// Content events relayed to the client.
    pub events: u64,
    /// The completion text relayed (first MiB), to count tokens by when `usage` is `None`.
    pub text: String,
}

type OnFinish = Box<dyn FnOnce(StreamSummary) + Send>;

struct Relay {
    upstream: BoxStream<'static, Result<Bytes, UpstreamError>>,
    opts: RelayOptions,
    buf: Vec<u8>,
    data: String,
    usage: Option<Usage>,
    events: u64,
    text: String,
    saw_done: bool,
    saw_finish_reason: bool,
    finished: bool,
    on_finish: Option<OnFinish>,
    messages: Option<ToChat>,
}

pub fn relay_sse<B>(
    body: B,
    opts: RelayOptions,
    on_finish: impl FnOnce(StreamSummary) + Send + 'static,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let model = opts.model.clone();
    let messages = opts.messages.then(ToChat::default);
    let relay = Relay {
        upstream: BodyDataStream::new(body)
            .map(move |chunk| chunk.map_err(|e| classify(&model, &e)))
            .boxed(),
        opts,
        buf: Vec::new(),
        data: String::new(),
        usage: None,
        events: 0,
        text: String::new(),
        saw_done: false,
        saw_finish_reason: false,
        finished: false,
        on_finish: Some(Box::new(on_finish)),
        messages,
    };
    futures_util::stream::unfold(relay, |mut relay| async move {
        let frame = relay.next_frame().await?;
        Some((Ok(frame), relay))
    })
}

impl Relay {
    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if self.finished {
                return None;
            }
            let mut out = Vec::new();
            self.drain_lines(&mut out);
            if self.saw_done {
                self.finish(StreamOutcome::Completed);
            }
            if !out.is_empty() {
                return Some(out.into());
            }
            if self.finished {
                return None;
            }
            if self.buf.len() > MAX_LINE_BYTES {
                return Some(self.fail(UpstreamError::Protocol {
                    model: self.opts.model.clone(),
                    detail: "an event line is longer than 4 MiB".into(),
                }));
            }
            let idle = Instant::now() + self.opts.idle_timeout;
            let wait_until = idle.min(self.opts.deadline);
            match tokio::time::timeout_at(wait_until, self.upstream.next()).await {
                Err(_) => {
                    let what = if idle < self.opts.deadline {
                        format!("nothing streamed for {:?}", self.opts.idle_timeout)
                    } else {
                        "the stream was not complete by the total timeout".into()
                    };
                    return Some(self.fail(UpstreamError::Timeout {
                        model: self.opts.model.clone(),
                        what,
                    }));
                }
                Ok(Some(Ok(bytes))) => self.buf.extend_from_slice(&bytes),
                Ok(Some(Err(e))) => return Some(self.fail(e)),
                Ok(None) => return self.upstream_ended(),
            }
        }
    }

    /// The upstream closed the stream: flush a last event without its blank line, then decide
    /// whether the answer was whole.
    fn upstream_ended(&mut self) -> Option<Bytes> {
        let mut out = Vec::new();
        self.buf.push(b'\n');
        self.drain_lines(&mut out);
        if !self.data.is_empty() {
            self.dispatch(&mut out);
        }
        if self.saw_done {
            self.finish(StreamOutcome::Completed);
        } else if self.saw_finish_reason {
            // Some servers end with a finish_reason but no `[DONE]`; clients expect it.
            self.counted_usage(&mut out);
            out.extend_from_slice(b"data: [DONE]\n\n");
            self.finish(StreamOutcome::Completed);
        } else {
            let e = UpstreamError::Protocol {
                model: self.opts.model.clone(),
                detail: "the stream ended before the answer was complete".into(),
            };
            out.extend_from_slice(&self.fail(e));
        }
        (!out.is_empty()).then(|| out.into())
    }

    fn drain_lines(&mut self, out: &mut Vec<u8>) {
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            if self.finished {
                break;
            }
            let end = start + pos;
            let line = &self.buf[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.is_empty() {
                if !self.data.is_empty() {
                    self.dispatch(out);
                }
            } else if let Some(d) = line.strip_prefix(b"data:") {
                let d = d.strip_prefix(b" ").unwrap_or(d);
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(d));
            }
            // Comments (`:`), `event:`, `id:` and `retry:` lines carry nothing clients of the
            // convention use; they are not relayed.
            start = end + 1;
        }
        self.buf.drain(..start);
    }

    /// One complete event's data.
    fn dispatch(&mut self, out: &mut Vec<u8>) {
        let data = std::mem::take(&mut self.data);
        if let Some(to_chat) = &mut self.messages {
            // A Messages event, read as the chat chunks it comes to.
            let Ok(event) = serde_json::from_str::<Value>(&data) else {
                return;
            };
            let told = to_chat.event(&event);
            for c in told.chunks {
                if let Value::Object(c) = c
                    && !self.finished
                {
                    self.chunk(c, out);
                }
            }
            if told.done && !self.finished {
                self.done(out);
            }
            return;
        }
        if data == "[DONE]" {
            self.done(out);
            return;
        }
        let Ok(Value::Object(chunk)) = serde_json::from_str::<Value>(&data) else {
            // Not an object we understand: pass it on untouched rather than lose it.
            write_event(out, &data);
            return;
        };
        self.chunk(chunk, out);
    }

    /// The end of a complete stream: the usage counted when none came, `[DONE]`.
    fn done(&mut self, out: &mut Vec<u8>) {
        self.saw_done = true;
        self.counted_usage(out);
        out.extend_from_slice(b"data: [DONE]\n\n");
    }

    /// One chat chunk: an error ends the stream; usage recorded (and shown only when asked
    /// for); re-addressed and relayed.
    fn chunk(&mut self, mut chunk: serde_json::Map<String, Value>, out: &mut Vec<u8>) {
        if chunk.contains_key("error") {
            write_event(out, &Value::Object(chunk).to_string());
            self.finish(StreamOutcome::UpstreamFailed(
                "the upstream sent an error event".into(),
            ));
            return;
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Usage::from_json(&serde_json::json!({ "usage": usage }));
        }
        let no_choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .is_none_or(|c| c.is_empty());
        if !self.opts.client_wants_usage {
            if no_choices && chunk.contains_key("usage") {
                return; // the usage chunk the gateway asked for on its own behalf
            }
            chunk.remove("usage");
        }
        if let Some(choices) = chunk.get("choices").and_then(Value::as_array) {
            for c in choices {
                if c.get("finish_reason").is_some_and(|f| !f.is_null()) {
                    self.saw_finish_reason = true;
                }
                // Chat chunks carry `delta.content`; legacy completion chunks `text`.
                let content = c
                    .pointer("/delta/content")
                    .or_else(|| c.get("text"))
                    .and_then(Value::as_str);
                if let Some(t) = content
                    && self.text.len() + t.len() <= MAX_TEXT_BYTES
                {
                    self.text.push_str(t);
                }
            }
        }
        chunk.insert("id".into(), Value::String(self.opts.request_id.clone()));
        chunk.insert("model".into(), Value::String(self.opts.model.0.clone()));
        self.events += 1;
        out.extend_from_slice(b"data: ");
        // Serializing a Value to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, &chunk);
        out.extend_from_slice(b"\n\n");
    }

    /// The usage chunk the client asked for (`stream_options.include_usage`), counted by the
    /// gateway, when the upstream sent none: the convention's last chunk before `[DONE]`.
    fn counted_usage(&self, out: &mut Vec<u8>) {
        let Some(counter) = &self.opts.count_usage else {
            return;
        };
        if !self.opts.client_wants_usage || self.usage.is_some() {
            return;
        }
        let completion = (counter.count)(&self.text);
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let chunk = serde_json::json!({
            "id": self.opts.request_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": self.opts.model.0,
            "choices": [],
            "usage": {
                "prompt_tokens": counter.prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": counter.prompt_tokens + completion,
            },
        });
        out.extend_from_slice(b"data: ");
        let _ = serde_json::to_writer(&mut *out, &chunk);
        out.extend_from_slice(b"\n\n");
    }

    fn fail(&mut self, e: UpstreamError) -> Bytes {
        let reason = e.to_string();
        let body = (self.opts.error_body)(e);
        let mut out = Vec::new();
        write_event(&mut out, &body.to_string());
        self.finish(StreamOutcome::UpstreamFailed(reason));
        out.into()
    }

    fn finish(&mut self, outcome: StreamOutcome) {
        self.finished = true;
        if let Some(f) = self.on_finish.take() {
            f(StreamSummary {
                outcome,
                usage: self.usage,
                events: self.events,
                text: std::mem::take(&mut self.text),
            });
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // Dropped before the end: hyper dropped the body because the client went away. The
        // upstream response (and its connection) is dropped with `self`, which cancels it.
        self.finish(StreamOutcome::ClientGone);
    }
}

fn write_event(out: &mut Vec<u8>, data: &str) {
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// An upstream body made of `chunks`.
    fn response(chunks: Vec<&'static str>) -> impl Body<Data = Bytes, Error = std::io::Error> {
        body(futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok(Bytes::from_static(c.as_bytes()))),
        ))
    }

    fn body(
        chunks: impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> impl Body<Data = Bytes, Error = std::io::Error> {
        http_body_util::StreamBody::new(chunks.map(|c| c.map(http_body::Frame::data)))
    }

    fn opts(wants_usage: bool) -> RelayOptions {
        RelayOptions {
            request_id: "req-1".into(),
            model: ModelId("gw-model".into()),
            client_wants_usage: wants_usage,
            messages: false,
            count_usage: Some(CountUsage {
                prompt_tokens: 3,
                count: Box::new(|t| t.split_whitespace().count() as u64),
            }),
            idle_timeout: Duration::from_secs(5),
            deadline: Instant::now() + Duration::from_secs(5),
            error_body: |e| serde_json::json!({"error": {"message": e.to_string()}}),
        }
    }

    async fn relay(chunks: Vec<&'static str>, wants_usage: bool) -> (String, StreamSummary) {
        let summary = Arc::new(Mutex::new(None));
        let s2 = summary.clone();
        let out: Vec<_> = relay_sse(response(chunks), opts(wants_usage), move |s| {
            *s2.lock().unwrap() = Some(s);
        })
        .collect()
        .await;
        let text: String = out
            .into_iter()
            .map(|b| String::from_utf8(b.unwrap().to_vec()).unwrap())
            .collect();
        let summary = summary.lock().unwrap().take().expect("on_finish ran");
        (text, summary)
    }

    const CHUNK: &str = "data: {\"id\":\"up-1\",\"model\":\"upstream-name\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n";
    const LAST: &str = "data: {\"id\":\"up-1\",\"model\":\"upstream-name\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    const USAGE: &str = "data: {\"id\":\"up-1\",\"model\":\"upstream-name\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2,\"total_tokens\":9}}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    #[tokio::test]
    async fn a_native_messages_stream_is_relayed_as_chat_chunks_with_its_usage() {
        let summary = Arc::new(Mutex::new(None));
        let s2 = summary.clone();
        let upstream = response(vec![
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi there\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ]);
        let opts = RelayOptions {
            messages: true,
            ..opts(true)
        };
        let out: Vec<_> = relay_sse(upstream, opts, move |s| {
            *s2.lock().unwrap() = Some(s);
        })
        .collect()
        .await;
        let text: String = out
            .into_iter()
            .map(|b| String::from_utf8(b.unwrap().to_vec()).unwrap())
            .collect();
        let chunks: Vec<Value> = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .collect();
        assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "hi there");
        assert_eq!(chunks[1]["model"], "gw-model");
        assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
        assert_eq!(chunks[3]["usage"]["prompt_tokens"], 11);
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        let s = summary.lock().unwrap().take().expect("on_finish ran");
        assert_eq!(s.outcome, StreamOutcome::Completed);
        assert_eq!(
            s.usage,
            Some(Usage {
                prompt_tokens: 11,
                completion_tokens: 2
            })
        );
        assert_eq!(s.text, "hi there");
    }

    #[tokio::test]
    async fn counts_the_usage_asked_for_when_the_upstream_sends_none() {
        let (text, s) = relay(vec![CHUNK, CHUNK, LAST, DONE], true).await;
        let usage_at = text.find("\"usage\"").expect("a usage chunk");
        assert!(usage_at < text.find("[DONE]").unwrap_or(0), "{text}");
        // Counted: the prompt as given, the relayed text "hihi" by the test's word counter.
        let chunk: Value = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|c| c.get("usage").is_some())
            .expect("the usage chunk parses");
        assert_eq!(
            chunk["usage"],
            serde_json::json!({"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4})
        );
        assert_eq!(chunk["choices"], serde_json::json!([]));
        assert_eq!(
            s.usage, None,
            "the summary still says the upstream reported none"
        );
        // Not asked for: none is added; reported by the upstream: not added twice.
        let (text, _) = relay(vec![CHUNK, LAST, DONE], false).await;
        assert!(!text.contains("usage"), "{text}");
        let (text, _) = relay(vec![CHUNK, LAST, USAGE, DONE], true).await;
        assert_eq!(text.matches("\"usage\"").count(), 1, "{text}");
    }

    #[tokio::test]
    async fn readdresses_events_and_hides_usage_not_asked_for() {
        let (text, s) = relay(vec![CHUNK, LAST, USAGE, DONE], false).await;
        assert!(text.contains("\"id\":\"req-1\"") && text.contains("\"model\":\"gw-model\""));
        assert!(
            !text.contains("upstream-name") && !text.contains("usage"),
            "{text}"
        );
        assert!(text.ends_with("data: [DONE]\n\n"));
        assert_eq!(s.outcome, StreamOutcome::Completed);
        assert_eq!(
            s.usage,
            Some(Usage {
                prompt_tokens: 7,
                completion_tokens: 2
            })
        );
        assert_eq!(s.events, 2);
    }

    #[tokio::test]
    async fn shows_usage_to_clients_that_asked() {
        let (text, _) = relay(vec![CHUNK, LAST, USAGE, DONE], true).await;
        assert!(text.contains("\"prompt_tokens\":7"), "{text}");
    }

    #[tokio::test]
    async fn events_split_across_reads_and_crlf_are_reassembled() {
        let (text, s) = relay(
            vec![
                "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},",
                "\"finish_reason\":\"stop\"}]}\r\n",
                "\r\n: keep-alive comment\n\ndata: [DO",
                "NE]\n\n",
            ],
            false,
        )
        .await;
        assert_eq!(s.outcome, StreamOutcome::Completed);
        assert_eq!(text.matches("data: ").count(), 2, "{text}");
        assert!(!text.contains("keep-alive"));
    }

    #[tokio::test]
    async fn a_stream_cut_before_the_end_ends_with_an_error_event() {
        let (text, s) = relay(vec![CHUNK], false).await;
        assert!(matches!(s.outcome, StreamOutcome::UpstreamFailed(_)));
        assert!(text.contains("\"error\""), "{text}");
        assert!(!text.contains("[DONE]"));
    }

    #[tokio::test]
    async fn a_finish_reason_without_done_still_completes() {
        let (text, s) = relay(vec![CHUNK, LAST], false).await;
        assert_eq!(s.outcome, StreamOutcome::Completed);
        assert!(text.ends_with("data: [DONE]\n\n"));
    }

    #[tokio::test]
    async fn dropping_the_stream_reports_the_client_gone() {
        let summary = Arc::new(Mutex::new(None));
        let s2 = summary.clone();
        let stream = relay_sse(
            response(vec![CHUNK, CHUNK, LAST, DONE]),
            opts(false),
            move |s| {
                *s2.lock().unwrap() = Some(s);
            },
        );
        let mut stream = Box::pin(stream);
        stream.next().await;
        drop(stream);
        let s = summary.lock().unwrap().take().unwrap();
        assert_eq!(s.outcome, StreamOutcome::ClientGone);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_upstream_hits_the_idle_timeout() {
        let stream = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from_static(
            CHUNK.as_bytes(),
        ))])
        .chain(futures_util::stream::pending());
        let resp = body(stream);
        let mut o = opts(false);
        o.idle_timeout = Duration::from_secs(1);
        let out: Vec<_> = relay_sse(resp, o, |_| {}).collect().await;
        let last = String::from_utf8(out.last().unwrap().as_ref().unwrap().to_vec()).unwrap();
        assert!(last.contains("nothing streamed for 1s"), "{last}");
    }
}

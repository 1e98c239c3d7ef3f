//! Reading a relayed chat stream back as chunks, for the endpoints that re-tell it in another
//! protocol's events (the Responses API, the Messages API): SSE events split at their blank
//! line, each `data:` line parsed, `[DONE]` and an in-band error recognised, a broken body
//! reported. Nothing is buffered beyond one event.

use axum::body::{Body, BodyDataStream};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

/// What the relayed stream said next.
#[derive(Debug)]
pub enum ChatEvent {
    /// One chat completion chunk.
    Chunk(Value),
    /// The stream failed: the error object of its error event (`code`, `message`), or one made
    /// for a body that broke off.
    Failed(Value),
    /// `[DONE]`, or the end of the body.
    Done,
}

/// The chunks of a relayed chat stream, in order.
pub struct ChatChunks {
    body: BodyDataStream,
    buf: Vec<u8>,
    /// Chunks of an event already read, not yet returned (an event may carry several `data:`
    /// lines).
    ready: std::collections::VecDeque<ChatEvent>,
    done: bool,
}

impl ChatChunks {
    pub fn new(body: Body) -> ChatChunks {
        ChatChunks {
            body: body.into_data_stream(),
            buf: Vec::new(),
            ready: std::collections::VecDeque::new(),
            done: false,
        }
    }

    /// The next event; after `Failed` or `Done`, `Done` again.
    pub async fn next(&mut self) -> ChatEvent {
        loop {
            if let Some(event) = self.ready.pop_front() {
                if !matches!(event, ChatEvent::Chunk(_)) {
                    self.done = true;
                    self.ready.clear();
                }
                return event;
            }
            if self.done {
                return ChatEvent::Done;
            }
            if let Some(end) = find_event_end(&self.buf) {
                let event: Vec<u8> = self.buf.drain(..end).collect();
                self.read_event(&event);
                continue;
            }
            match self.body.next().await {
                Some(Ok(bytes)) => self.buf.extend_from_slice(&bytes),
                Some(Err(_)) => {
                    self.ready.push_back(ChatEvent::Failed(
                        json!({"code": "server_error", "message": "the upstream stream broke off"}),
                    ));
                }
                None => self.ready.push_back(ChatEvent::Done),
            }
        }
    }

    fn read_event(&mut self, event: &[u8]) {
        for line in event.split(|b| *b == b'\n') {
            let Some(data) = line.strip_prefix(b"data:") else {
                continue;
            };
            let data = data.trim_ascii();
            if data == b"[DONE]" {
                self.ready.push_back(ChatEvent::Done);
                return;
            }
            let Ok(v) = serde_json::from_slice::<Value>(data) else {
                continue;
            };
            match v.get("error") {
                Some(e) => {
                    self.ready.push_back(ChatEvent::Failed(json!({
                        "code": e.get("code").cloned().unwrap_or(json!("server_error")),
                        "message": e.get("message").cloned().unwrap_or(json!("the upstream failed")),
                    })));
                    return;
                }
                None => self.ready.push_back(ChatEvent::Chunk(v)),
            }
        }
    }
}

/// The end of the first complete SSE event in `buf` (after its blank line).
fn find_event_end(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\n\n").map(|p| p + 2)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    async fn all(frames: &[&'static str]) -> Vec<String> {
        let frames: Vec<Result<bytes::Bytes, std::io::Error>> = frames
            .iter()
            .map(|f| Ok(bytes::Bytes::from_static(f.as_bytes())))
            .collect();
        let stream = futures_util::stream::iter(frames);
        let mut chunks = ChatChunks::new(Body::from_stream(stream));
        let mut seen = Vec::new();
        loop {
            match chunks.next().await {
                ChatEvent::Chunk(v) => seen.push(v["n"].to_string()),
                ChatEvent::Failed(e) => seen.push(format!("failed {}", e["message"])),
                ChatEvent::Done => {
                    seen.push("done".into());
                    break;
                }
            }
        }
        seen
    }

    #[tokio::test]
    async fn events_split_across_reads_errors_and_done() {
        assert_eq!(
            all(&[
                "data: {\"n\":1}\n",
                "\ndata: {\"n\":2}\n\nda",
                "ta: [DONE]\n\n"
            ])
            .await,
            ["1", "2", "done"]
        );
        assert_eq!(
            all(&[
                "data: {\"n\":1}\n\ndata: {\"error\":{\"message\":\"x\"}}\n\ndata: {\"n\":3}\n\n"
            ])
            .await,
            ["1", "failed \"x\"", "done"]
        );
        assert_eq!(all(&[": ping\n\ndata: {\"n\":1}\n\n"]).await, ["1", "done"]);
    }
}

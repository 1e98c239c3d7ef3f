//! A streamed response: the relayed chat stream (already through the guardrail's output stage,
//! settled when it ends) read event by event and re-told as the Responses API's typed events,
//! each with its `sequence_number`: `response.created`, `response.in_progress`, per output item
//! `response.output_item.added` → (`response.content_part.added`, `response.output_text.delta`…,
//! `.done`, `response.content_part.done`) or (`response.function_call_arguments.delta`…, `.done`)
//! → `response.output_item.done`, then `response.completed` — sent only after the response is
//! committed to the store — or `response.failed` when the upstream broke off.
//!
//! A task reads the chat stream and writes events into a small channel the body drains; when the
//! client goes, the channel closes, the task stops and dropping the chat stream tells the relay.

use axum::body::Body;
use bytes::Bytes;
use serde_json::{Value, json};

use super::Draft;
use super::items::{self, ItemIds};
use crate::pipeline::answer::chunks::{ChatChunks, ChatEvent};
use crate::pipeline::call::Call;

/// Events buffered between the converter and the client.
const CHANNEL: usize = 32;

pub(super) fn events(call: Call, draft: Draft, chat: Body) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(CHANNEL);
    tokio::spawn(async move {
        let mut t = Teller::new(draft, tx);
        if t.run(&call, chat).await.is_err() {
            tracing::debug!(request_id = %call.ctx.id, "responses stream: the client left");
        }
    });
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// The client went away (the channel closed).
struct Gone;

/// One output item being streamed.
enum Item {
    Message {
        id: String,
        text: String,
    },
    Call {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

struct Teller {
    draft: Draft,
    tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    seq: u64,
    ids: ItemIds,
    /// Items in output order; the open message (if any) and tool calls by their chat index.
    items: Vec<Item>,
    message: Option<usize>,
    calls: Vec<(u64, usize)>,
    finish_reason: Option<String>,
    usage: Value,
}

impl Teller {
    fn new(draft: Draft, tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>) -> Teller {
        let ids = ItemIds::new(&draft.id);
        Teller {
            draft,
            tx,
            seq: 0,
            ids,
            items: Vec::new(),
            message: None,
            calls: Vec::new(),
            finish_reason: None,
            usage: Value::Null,
        }
    }

    async fn send(&mut self, kind: &str, mut payload: Value) -> Result<(), Gone> {
        payload["type"] = json!(kind);
        payload["sequence_number"] = json!(self.seq);
        self.seq += 1;
        let frame = format!("event: {kind}\ndata: {payload}\n\n");
        self.tx.send(Ok(Bytes::from(frame))).await.map_err(|_| Gone)
    }

    async fn run(&mut self, call: &Call, chat: Body) -> Result<(), Gone> {
        let start = self.draft.object("in_progress", Vec::new(), Value::Null);
        self.send("response.created", json!({"response": start}))
            .await?;
        self.send("response.in_progress", json!({"response": start}))
            .await?;
        let mut chunks = ChatChunks::new(chat);
        let failure = loop {
            // A client that left is noticed at once (not at the next event sent), so the
            // upstream stops while the guardrail still holds text back.
            let event = tokio::select! {
                e = chunks.next() => e,
                () = self.tx.closed() => return Err(Gone),
            };
            match event {
                ChatEvent::Chunk(v) => self.chunk(&v).await?,
                ChatEvent::Failed(error) => break Some(error),
                ChatEvent::Done => break None,
            }
        };
        drop(chunks);
        let output = self.close_items().await?;
        if let Some(error) = failure {
            let mut failed = self.draft.object("failed", output, self.usage.clone());
            failed["error"] = error;
            return self
                .send("response.failed", json!({"response": failed}))
                .await;
        }
        let status = if self.finish_reason.as_deref() == Some("length") {
            "incomplete"
        } else {
            "completed"
        };
        let done = self.draft.object(status, output, self.usage.clone());
        // Committed before the client hears it is complete: a continuation finds it.
        self.draft.store(call, &done).await;
        let kind = if status == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        self.send(kind, json!({"response": done})).await
    }

    /// One chat chunk: text deltas, tool-call deltas, the finish reason, usage.
    async fn chunk(&mut self, v: &Value) -> Result<(), Gone> {
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = items::usage(u);
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(r.to_string());
        }
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            let index = match self.message {
                Some(i) => i,
                None => self.open_message().await?,
            };
            let Item::Message { id, text: all } = &mut self.items[index] else {
                return Ok(());
            };
            all.push_str(text);
            let id = id.clone();
            self.send(
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []}),
            )
            .await?;
        }
        for tc in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let chat_index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
            let index = match self.calls.iter().find(|(c, _)| *c == chat_index) {
                Some((_, i)) => *i,
                None => {
                    let id = self.ids.next("fc");
                    let call_id = tc["id"].as_str().unwrap_or_default().to_string();
                    let name = tc
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let index = self.items.len();
                    let item = items::function_call_item(&id, &call_id, &name, "", "in_progress");
                    self.items.push(Item::Call {
                        id,
                        call_id,
                        name,
                        arguments: String::new(),
                    });
                    self.calls.push((chat_index, index));
                    self.send(
                        "response.output_item.added",
                        json!({"output_index": index, "item": item}),
                    )
                    .await?;
                    index
                }
            };
            if let Some(args) = tc.pointer("/function/arguments").and_then(Value::as_str)
                && !args.is_empty()
            {
                let Item::Call { id, arguments, .. } = &mut self.items[index] else {
                    continue;
                };
                arguments.push_str(args);
                let id = id.clone();
                self.send(
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": index, "delta": args}),
                )
                .await?;
            }
        }
        Ok(())
    }

    async fn open_message(&mut self) -> Result<usize, Gone> {
        let id = self.ids.next("msg");
        let index = self.items.len();
        let mut item = items::message_item(&id, "", "in_progress");
        item["content"] = json!([]);
        self.items.push(Item::Message {
            id: id.clone(),
            text: String::new(),
        });
        self.message = Some(index);
        self.send(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        )
        .await?;
        self.send(
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0,
                   "part": {"type": "output_text", "text": "", "annotations": []}}),
        )
        .await?;
        Ok(index)
    }

    /// The `.done` events of every item, in output order; the finished items.
    async fn close_items(&mut self) -> Result<Vec<Value>, Gone> {
        // A stream that produced nothing still answers one (empty) message, as a whole answer does.
        if self.items.is_empty() {
            self.open_message().await?;
        }
        let items = std::mem::take(&mut self.items);
        let mut output = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let done = match item {
                Item::Message { id, text } => {
                    self.send(
                        "response.output_text.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
                    )
                    .await?;
                    self.send(
                        "response.content_part.done",
                        json!({"item_id": id, "output_index": index, "content_index": 0,
                               "part": {"type": "output_text", "text": text, "annotations": []}}),
                    )
                    .await?;
                    items::message_item(id, text, "completed")
                }
                Item::Call {
                    id,
                    call_id,
                    name,
                    arguments,
                } => {
                    self.send(
                        "response.function_call_arguments.done",
                        json!({"item_id": id, "output_index": index, "name": name, "arguments": arguments}),
                    )
                    .await?;
                    items::function_call_item(id, call_id, name, arguments, "completed")
                }
            };
            self.send(
                "response.output_item.done",
                json!({"output_index": index, "item": done}),
            )
            .await?;
            output.push(done);
        }
        self.items = items;
        Ok(output)
    }
}

//! The output stage on a streamed answer: content held back in a window and checked with the
//! text already sent; tool-call chunks held until the calls end and checked whole; reasoning
//! (`reasoning_content`, the thinking a Messages client is shown) held until it ends and checked
//! whole.

use serde_json::Value;

use super::{Call, Shape, Subject};
use crate::policy::guardrail::{self, Stage};
use crate::server::error::ApiError;

/// Log-probabilities name the tokens of the text they came with: a redacted chunk's would give
/// the redacted value away, so they are dropped (`null`).
fn drop_logprobs(chunk: &mut Value) {
    if let Some(lp) = chunk.pointer_mut("/choices/0/logprobs") {
        *lp = Value::Null;
    }
}

/// A chunk whose text moved into an earlier one still matters when it ends the choice, carries
/// other delta fields (tool calls, role) or the usage.
fn carries_more_than_text(chunk: &Value) -> bool {
    let choice = chunk.pointer("/choices/0");
    choice
        .and_then(|c| c.get("finish_reason"))
        .is_some_and(|f| !f.is_null())
        || choice
            .and_then(|c| c.get("delta"))
            .and_then(Value::as_object)
            .is_some_and(|d| !d.is_empty())
        || chunk.get("usage").is_some_and(|u| !u.is_null())
}

/// Where a chat chunk's reasoning text is (`reasoning_content`, or `reasoning` as some servers
/// name it), when it carries some.
fn reasoning_place(chunk: &Value) -> Option<&'static str> {
    [
        "/choices/0/delta/reasoning_content",
        "/choices/0/delta/reasoning",
    ]
    .into_iter()
    .find(|p| {
        chunk
            .pointer(p)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty())
    })
}

/// Whether a chat chunk belongs to the reasoning: its text, or the signature a native Messages
/// upstream gives it (`reasoning_signature`, `upstream::messages`).
fn is_reasoning(chunk: &Value) -> bool {
    reasoning_place(chunk).is_some()
        || chunk
            .pointer("/choices/0/delta/reasoning_signature")
            .is_some_and(|s| !s.is_null())
}

const REASONING_KEYS: [&str; 3] = ["reasoning_content", "reasoning", "reasoning_signature"];

/// A reasoning chunk's rest: its reasoning (text and signature) and its role removed (they are
/// held, [`reasoning_part`]).
fn without_reasoning(chunk: &mut Value) {
    if let Some(delta) = chunk
        .pointer_mut("/choices/0/delta")
        .and_then(Value::as_object_mut)
    {
        delta.retain(|k, _| k != "role" && !REASONING_KEYS.contains(&k.as_str()));
    }
}

/// A reasoning chunk's held part: its role and reasoning, no finish, no usage.
fn reasoning_part(chunk: &Value) -> Value {
    let mut part = chunk.clone();
    if let Some(delta) = part
        .pointer_mut("/choices/0/delta")
        .and_then(Value::as_object_mut)
    {
        delta.retain(|k, _| k == "role" || REASONING_KEYS.contains(&k.as_str()));
    }
    if let Some(choice) = part
        .pointer_mut("/choices/0")
        .and_then(Value::as_object_mut)
    {
        choice.insert("finish_reason".into(), Value::Null);
    }
    if let Some(o) = part.as_object_mut() {
        o.remove("usage");
    }
    part
}

/// Bytes of a streamed answer's text held back from the client, so that an entity split across
/// chunks is still whole in the window the guardrail checks before any of it is released. Covers
/// phone, card, IBAN, IP and id numbers and most e-mail addresses; an entity longer than this
/// that began in text already sent cannot be redacted any more, and ends the stream instead.
pub const STREAM_HOLD_BACK_BYTES: usize = 128;
/// Released text kept as context for the next check.
const STREAM_CONTEXT_BYTES: usize = 256;

/// The output stage on a streamed answer: content chunks are held back until
/// [`STREAM_HOLD_BACK_BYTES`] of text follow them; each new chunk is checked with the held text
/// and the recently released text as context. A `block` ends the stream with an error event in
/// the convention's shape; redactions are applied to held text (the held chunks are merged into
/// one); a redaction reaching into text already sent ends the stream too. Other events (role,
/// finish, usage, `[DONE]`, errors) release everything held first, then pass.
pub fn output_stream(
    call: Call,
    shape: Shape,
    upstream: impl futures_util::Stream<Item = Result<bytes::Bytes, std::convert::Infallible>>
    + Send
    + 'static,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::convert::Infallible>> + Send + 'static
{
    use futures_util::StreamExt as _;
    let state = StreamGuard {
        call,
        shape,
        calls: Vec::new(),
        thinking: Vec::new(),
        held: Vec::new(),
        context: String::new(),
        out: std::collections::VecDeque::new(),
        done: false,
    };
    futures_util::stream::unfold((upstream.boxed(), state), |(mut up, mut st)| async move {
        loop {
            if let Some(b) = st.out.pop_front() {
                return Some((Ok(b), (up, st)));
            }
            if st.done {
                return None;
            }
            match up.next().await {
                None => {
                    st.flush_thinking().await;
                    st.release(usize::MAX);
                    st.flush_calls().await;
                    st.done = true;
                }
                Some(Ok(bytes)) => st.feed(&bytes).await,
                Some(Err(never)) => match never {},
            }
        }
    })
}

struct StreamGuard {
    call: Call,
    shape: Shape,
    /// Tool-call chunks not yet sent: their arguments arrive in fragments and are checked whole,
    /// when the calls end (the next other event).
    calls: Vec<Value>,
    /// Reasoning chunks not yet sent: checked whole when the reasoning ends (the next other
    /// event). A thinking block reaches the client when it is complete, not token by token.
    thinking: Vec<Value>,
    /// Content chunks not yet sent, with their text.
    held: Vec<(Value, String)>,
    /// The end of the text already sent.
    context: String,
    out: std::collections::VecDeque<bytes::Bytes>,
    done: bool,
}

impl StreamGuard {
    async fn feed(&mut self, frame: &[u8]) {
        for event in frame
            .split(|b| *b == b'\n')
            .collect::<Vec<_>>()
            .split(|l| l.is_empty())
        {
            if event.is_empty() || self.done {
                continue;
            }
            let data: Vec<u8> = event
                .iter()
                .filter_map(|l| l.strip_prefix(b"data: "))
                .flat_map(|d| d.iter().copied())
                .collect();
            let mut chunk = serde_json::from_slice::<Value>(&data).ok();
            // A reasoning chunk is held (its role and reasoning); what else it carries (text,
            // tool calls, the finish, usage) goes on below as a chunk of its own.
            let mut split = false;
            if self.shape == Shape::Chat
                && let Some(c) = chunk.as_mut().filter(|c| is_reasoning(c))
            {
                self.thinking.push(reasoning_part(c));
                without_reasoning(c);
                if !carries_more_than_text(c) {
                    continue;
                }
                split = true;
            }
            if !self.thinking.is_empty() {
                self.flush_thinking().await;
                if self.done {
                    continue;
                }
            }
            let content = chunk
                .as_ref()
                .and_then(|c| c.pointer(self.shape.chunk_text()))
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let is_call = chunk.as_ref().is_some_and(|c| {
                c.pointer("/choices/0/delta/tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|t| !t.is_empty())
            });
            if let Some(chunk) = chunk.as_ref().filter(|_| is_call) {
                self.release(usize::MAX);
                let finished = chunk
                    .pointer("/choices/0/finish_reason")
                    .is_some_and(|f| !f.is_null());
                self.calls.push(chunk.clone());
                if finished {
                    self.flush_calls().await;
                }
                continue;
            }
            self.flush_calls().await;
            if self.done {
                continue;
            }
            match (chunk, content) {
                (Some(chunk), Some(text)) => {
                    self.held.push((chunk, text));
                    self.check().await;
                    if !self.done {
                        self.release(STREAM_HOLD_BACK_BYTES);
                    }
                }
                (chunk, _) => {
                    // Not a content chunk: everything held goes first, in order.
                    self.release(usize::MAX);
                    if split && let Some(c) = chunk {
                        // The rest of a reasoning chunk, as it now is.
                        self.send_all(vec![c]);
                        continue;
                    }
                    let mut raw = Vec::with_capacity(data.len() + 8);
                    for line in event {
                        raw.extend_from_slice(line);
                        raw.push(b'\n');
                    }
                    raw.push(b'\n');
                    self.out.push_back(raw.into());
                }
            }
        }
    }

    /// Checks context + held text; blocks, or redacts the held part.
    async fn check(&mut self) {
        let held: String = self.held.iter().map(|(_, t)| t.as_str()).collect();
        let mut texts = [format!("{}{held}", self.context)];
        let who = Subject(&self.call);
        let verdict = match who.check(Stage::Output, &texts).await {
            Ok(Some(v)) => v,
            Ok(None) => return,
            Err(e) => return self.end(e),
        };
        let released = self.context.len();
        if !verdict.blocked.is_empty() || verdict.redactions.iter().any(|r| r.start < released) {
            let mut kinds = verdict.blocked.clone();
            kinds.extend(verdict.redacted_entities());
            let refusal = who.refuse(&kinds, Stage::Output);
            return self.end(refusal);
        }
        if verdict.redactions.is_empty() {
            return;
        }
        who.violation(&verdict.redacted_entities(), "redacted");
        guardrail::apply(&mut texts, &verdict.redactions);
        let [redacted] = texts;
        let new_held = redacted.get(released..).unwrap_or_default().to_string();
        // The redacted text goes in the first held chunk; the later ones keep everything else
        // they carried (`finish_reason`, tool calls, usage), without their text.
        let mut held = std::mem::take(&mut self.held).into_iter();
        let Some((mut first, _)) = held.next() else {
            return;
        };
        if let Some(c) = first.pointer_mut(self.shape.chunk_text()) {
            *c = Value::String(new_held.clone());
        }
        drop_logprobs(&mut first);
        self.held.push((first, new_held));
        for (mut chunk, _) in held {
            match self.shape {
                Shape::Chat => {
                    if let Some(delta) = chunk
                        .pointer_mut("/choices/0/delta")
                        .and_then(Value::as_object_mut)
                    {
                        delta.remove("content");
                    }
                }
                Shape::Completion => {
                    if let Some(t) = chunk.pointer_mut("/choices/0/text") {
                        *t = Value::String(String::new());
                    }
                }
            }
            drop_logprobs(&mut chunk);
            if carries_more_than_text(&chunk) {
                self.held.push((chunk, String::new()));
            }
        }
    }

    /// Checks the held reasoning whole: a block ends the stream; redactions send it as one
    /// chunk carrying the redacted text, without the upstream's signature (it signed other
    /// text); otherwise the chunks go as they came.
    async fn flush_thinking(&mut self) {
        if self.thinking.is_empty() {
            return;
        }
        let chunks = std::mem::take(&mut self.thinking);
        let mut texts = [chunks
            .iter()
            .filter_map(|c| reasoning_place(c).and_then(|p| c.pointer(p)?.as_str()))
            .collect::<String>()];
        let Some(chunks) = self.check_whole(&mut texts, chunks).await else {
            return;
        };
        let [redacted] = texts;
        let mut out = Vec::new();
        for (i, mut chunk) in chunks.into_iter().enumerate() {
            if let Some(delta) = chunk
                .pointer_mut("/choices/0/delta")
                .and_then(Value::as_object_mut)
            {
                delta.retain(|k, _| !REASONING_KEYS.contains(&k.as_str()));
                if i == 0 {
                    delta.insert("reasoning_content".into(), Value::String(redacted.clone()));
                }
            }
            drop_logprobs(&mut chunk);
            if i == 0 || carries_more_than_text(&chunk) {
                out.push(chunk);
            }
        }
        self.send_all(out);
    }

    /// Checks the held tool calls' arguments, each whole: a block ends the stream; redactions
    /// send each call as one chunk carrying its redacted arguments (clients concatenate argument
    /// fragments, so one fragment is as good as many); otherwise the chunks go as they came.
    async fn flush_calls(&mut self) {
        if self.calls.is_empty() {
            return;
        }
        let chunks = std::mem::take(&mut self.calls);
        // Arguments per call index, in the order the calls began.
        let mut order: Vec<u64> = Vec::new();
        let mut args: std::collections::HashMap<u64, String> = std::collections::HashMap::new();
        for c in &chunks {
            let calls = c
                .pointer("/choices/0/delta/tool_calls")
                .and_then(Value::as_array);
            for tc in calls.into_iter().flatten() {
                let i = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
                if !order.contains(&i) {
                    order.push(i);
                }
                if let Some(a) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                    args.entry(i).or_default().push_str(a);
                }
            }
        }
        let mut texts: Vec<String> = order
            .iter()
            .map(|i| args.get(i).cloned().unwrap_or_default())
            .collect();
        let Some(chunks) = self.check_whole(&mut texts, chunks).await else {
            return;
        };
        // One chunk per call: its first fragment (id, type, name) with the whole arguments;
        // whatever else the chunks carried (a finish reason) goes on the last one.
        let mut out: Vec<Value> = Vec::new();
        for (i, redacted) in order.iter().zip(texts) {
            let first = chunks.iter().find_map(|c| {
                let calls = c.pointer("/choices/0/delta/tool_calls")?.as_array()?;
                let tc = calls
                    .iter()
                    .find(|tc| tc.get("index").and_then(Value::as_u64).unwrap_or(0) == *i)?;
                Some((c.clone(), tc.clone()))
            });
            if let Some((mut chunk, mut tc)) = first {
                if let Some(a) = tc.pointer_mut("/function/arguments") {
                    *a = Value::String(redacted);
                } else if let Some(f) = tc.get_mut("function").and_then(Value::as_object_mut) {
                    f.insert("arguments".into(), Value::String(redacted));
                }
                chunk["choices"][0]["delta"] = serde_json::json!({"tool_calls": [tc]});
                chunk["choices"][0]["finish_reason"] = Value::Null;
                drop_logprobs(&mut chunk);
                out.push(chunk);
            }
        }
        let finish = chunks.iter().rev().find_map(|c| {
            c.pointer("/choices/0/finish_reason")
                .filter(|f| !f.is_null())
                .cloned()
        });
        if let (Some(f), Some(last)) = (finish, out.last_mut()) {
            last["choices"][0]["finish_reason"] = f;
        }
        self.send_all(out);
    }

    /// The output stage over held chunks' texts, each whole: nothing found sends the chunks as
    /// they came, a block ends the stream (both answer `None`); a redaction redacts `texts` in
    /// place and hands the chunks back to be rebuilt around them.
    async fn check_whole(
        &mut self,
        texts: &mut [String],
        chunks: Vec<Value>,
    ) -> Option<Vec<Value>> {
        let who = Subject(&self.call);
        let verdict = match who.check(Stage::Output, texts).await {
            Ok(Some(v)) => v,
            Ok(None) => {
                self.send_all(chunks);
                return None;
            }
            Err(e) => {
                self.end(e);
                return None;
            }
        };
        if !verdict.blocked.is_empty() {
            let refusal = who.refuse(&verdict.blocked, Stage::Output);
            self.end(refusal);
            return None;
        }
        if verdict.redactions.is_empty() {
            self.send_all(chunks);
            return None;
        }
        who.violation(&verdict.redacted_entities(), "redacted");
        guardrail::apply(texts, &verdict.redactions);
        Some(chunks)
    }

    fn send_all(&mut self, chunks: Vec<Value>) {
        for chunk in chunks {
            let mut frame = b"data: ".to_vec();
            let _ = serde_json::to_writer(&mut frame, &chunk);
            frame.extend_from_slice(b"\n\n");
            self.out.push_back(frame.into());
        }
    }

    /// Sends the oldest held chunks while at least `keep` bytes of text stay held (chunks without
    /// text go with the text before them).
    fn release(&mut self, keep: usize) {
        let mut total: usize = self.held.iter().map(|(_, t)| t.len()).sum();
        while let Some((_, first)) = self.held.first() {
            if keep != usize::MAX && total - first.len() < keep {
                break;
            }
            let (chunk, text) = self.held.remove(0);
            total -= text.len();
            self.context.push_str(&text);
            if self.context.len() > STREAM_CONTEXT_BYTES {
                let mut cut = self.context.len() - STREAM_CONTEXT_BYTES;
                while !self.context.is_char_boundary(cut) {
                    cut += 1;
                }
                self.context.drain(..cut);
            }
            let mut frame = b"data: ".to_vec();
            let _ = serde_json::to_writer(&mut frame, &chunk);
            frame.extend_from_slice(b"\n\n");
            self.out.push_back(frame.into());
        }
    }

    /// Ends the stream with an error event; held text is dropped.
    fn end(&mut self, e: ApiError) {
        self.held.clear();
        let mut frame = b"data: ".to_vec();
        let _ = serde_json::to_writer(&mut frame, &e.body());
        frame.extend_from_slice(b"\n\n");
        self.out.push_back(frame.into());
        self.done = true;
    }
}

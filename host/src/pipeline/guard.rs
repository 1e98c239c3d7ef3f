//! The guardrail stages of a chat request (the policy is `policy::GuardrailPolicy`; the built-in
//! one finds personal data, docs/GUARDRAIL.md):
//!
//! - **input**, before routing: `block` → 400 `guardrail_violation` / `pii_detected` naming the
//!   entity kinds (never the values); `redact` → the spans replaced in the body before anything
//!   else reads it; `flag` → the request is sensitive (local models only). Blocks and redactions
//!   emit a `guardrail.violation` event.
//! - **output**, on a whole (non-streamed) answer before it is returned (its text and the
//!   arguments of the tool calls the model wrote): `block` → 400 with code `pii_in_output` (the
//!   answer is withheld), `redact` → the answer's text and arguments redacted.
//!
//! - **texts**: the input stage on plain texts (document chunks at upload, retrieval queries).
//!
//! A guardrail that fails (trap, deadline, bad answer) refuses the request: fail-closed.

use serde_json::{Map, Value, json};

use super::call::Call;
use crate::events::Event;
use crate::policy::guardrail::{self, Stage, Verdict};
use crate::policy::{PolicyError, RouteFacts};
use crate::server::error::ApiError;

/// Where a checked text lives in a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// `messages[i].content`, a string (any role: `tool` results included).
    Content(usize),
    /// `messages[i].content[j].text`.
    Part(usize, usize),
    /// `messages[i].tool_calls[k].function.arguments` (an assistant's tool call, a JSON string;
    /// the redaction markers keep it JSON).
    ToolArguments(usize, usize),
}

/// Runs the input stage on a chat body (every message's text, tool-call arguments and tool
/// results included); returns whether the request was flagged (sensitive).
pub async fn input(call: &Call, body: &mut Map<String, Value>) -> Result<bool, ApiError> {
    let (slots, mut texts) = message_texts(body);
    if texts.is_empty() {
        return Ok(false);
    }
    let who = Subject(call);
    let Some(verdict) = who.check(Stage::Input, &texts).await? else {
        return Ok(false);
    };
    if !verdict.blocked.is_empty() {
        return Err(who.refuse(&verdict.blocked, Stage::Input));
    }
    if !verdict.redactions.is_empty() {
        guardrail::apply(&mut texts, &verdict.redactions);
        write_back(body, &slots, texts);
        who.violation(&verdict.redacted_entities(), "redacted");
    }
    Ok(!verdict.flagged.is_empty())
}

/// Runs the output stage on a whole answer.
/// Where an answer's text is: chat (`message.content`, streamed as `delta.content`) or legacy
/// completions (`text` in both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Chat,
    Completion,
}

impl Shape {
    /// The text of choice `i` of a whole answer, relative to `choices`.
    fn whole_text(self, i: usize) -> String {
        match self {
            Shape::Chat => format!("/{i}/message/content"),
            Shape::Completion => format!("/{i}/text"),
        }
    }

    /// The text of a stream chunk's first choice.
    fn chunk_text(self) -> &'static str {
        match self {
            Shape::Chat => "/choices/0/delta/content",
            Shape::Completion => "/choices/0/text",
        }
    }
}

pub async fn output(call: &Call, answer: &mut Value, shape: Shape) -> Result<(), ApiError> {
    if call.app.0.guardrail.is_none() {
        return Ok(());
    }
    let Some(choices) = answer.get_mut("choices").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    // Every choice's text and the arguments of the tool calls the model wrote.
    let mut places = Vec::new();
    let mut texts = Vec::new();
    let all = Value::Array(choices.clone());
    for (i, c) in choices.iter().enumerate() {
        let at = shape.whole_text(i);
        if let Some(t) = all.pointer(&at).and_then(Value::as_str) {
            places.push(at);
            texts.push(t.to_string());
        }
        let calls = c.pointer("/message/tool_calls").and_then(Value::as_array);
        for (k, tc) in calls.into_iter().flatten().enumerate() {
            if let Some(a) = tc.pointer("/function/arguments").and_then(Value::as_str) {
                places.push(format!("/{i}/message/tool_calls/{k}/function/arguments"));
                texts.push(a.to_string());
            }
        }
    }
    if texts.is_empty() {
        return Ok(());
    }
    let who = Subject(call);
    let Some(verdict) = who.check(Stage::Output, &texts).await? else {
        return Ok(());
    };
    if !verdict.blocked.is_empty() {
        return Err(who.refuse(&verdict.blocked, Stage::Output));
    }
    if !verdict.redactions.is_empty() {
        guardrail::apply(&mut texts, &verdict.redactions);
        let mut choices = Value::Array(std::mem::take(choices));
        for (place, t) in places.iter().zip(texts) {
            if let Some(v) = choices.pointer_mut(place) {
                *v = Value::String(t);
            }
        }
        if let Some(obj) = answer.as_object_mut() {
            obj.insert("choices".into(), choices);
        }
        who.violation(&verdict.redacted_entities(), "redacted");
    }
    Ok(())
}

/// Texts checked per guardrail call on documents: each call runs under the policy's deadline and
/// memory cap, so a long document is checked in slices.
const TEXTS_PER_CHECK: usize = 32;

/// The input stage on plain texts (a document's chunks, a retrieval query): block (400, nothing
/// is kept), redact in place, or flag; returns whether any text was flagged (sensitive).
pub async fn texts(call: &Call, texts: &mut [String]) -> Result<bool, ApiError> {
    let who = Subject(call);
    let mut flagged = false;
    let mut redacted = Vec::new();
    for slice in texts.chunks_mut(TEXTS_PER_CHECK) {
        let Some(verdict) = who.check(Stage::Input, slice).await? else {
            return Ok(false);
        };
        if !verdict.blocked.is_empty() {
            return Err(who.refuse(&verdict.blocked, Stage::Input));
        }
        if !verdict.redactions.is_empty() {
            guardrail::apply(slice, &verdict.redactions);
            for e in verdict.redacted_entities() {
                if !redacted.contains(&e) {
                    redacted.push(e);
                }
            }
        }
        flagged |= !verdict.flagged.is_empty();
    }
    if !redacted.is_empty() {
        who.violation(&redacted, "redacted");
    }
    Ok(flagged)
}

/// The input stage on a body field that holds text or tokens (`/v1/embeddings` `input`, legacy
/// completions `prompt`): text is checked and redacted in place; token arrays are decoded
/// (`TokenCounter::decodings`) and checked, and since tokens cannot be redacted faithfully, one
/// that holds anything to block *or redact* is refused (400, asking for text). Returns whether
/// the input was flagged (sensitive).
pub async fn text_field(
    call: &Call,
    body: &mut Map<String, Value>,
    field: &str,
) -> Result<bool, ApiError> {
    if call.app.0.guardrail.is_none() {
        return Ok(false);
    }
    let strings: Option<Vec<String>> = match body.get(field) {
        Some(Value::String(s)) => Some(vec![s.clone()]),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => Some(
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => None,
    };
    if let Some(mut found) = strings {
        let flagged = texts(call, &mut found).await?;
        let input = match body.get(field) {
            Some(Value::String(_)) => found.pop().map(Value::String).unwrap_or_default(),
            _ => Value::Array(found.into_iter().map(Value::String).collect()),
        };
        body.insert(field.into(), input);
        return Ok(flagged);
    }
    // Token arrays: one array, or an array of them.
    let arrays: Vec<Vec<u32>> = match body.get(field) {
        Some(Value::Array(items)) if items.iter().all(Value::is_u64) => vec![token_ids(items)],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_array)
            .map(|a| token_ids(a))
            .collect(),
        _ => Vec::new(),
    };
    let tokens = call.app.0.facts.tokens();
    let decoded: Vec<String> = arrays.iter().flat_map(|a| tokens.decodings(a)).collect();
    let mut checked = decoded.clone();
    let flagged = texts(call, &mut checked).await?;
    if checked != decoded {
        call.audit.blocked();
        return Err(ApiError::invalid(
            field,
            "The token input holds personal data this gateway redacts, and tokens cannot be \
             redacted: send the input as text.",
        )
        .with_code("pii_detected"));
    }
    Ok(flagged)
}

fn token_ids(items: &[Value]) -> Vec<u32> {
    items
        .iter()
        .filter_map(|t| t.as_u64().and_then(|t| u32::try_from(t).ok()))
        .collect()
}

/// Who a check is for: what the guardrail's facts, the events and the refusals name.
/// The call a guardrail stage checks: what the policy is told and who its events name.
struct Subject<'a>(&'a Call);

impl Subject<'_> {
    /// Runs the active guardrail on `texts`; `None` when none is configured. A guardrail that
    /// fails refuses the request (fail-closed); its own 4xx rejection is passed on.
    async fn check(&self, stage: Stage, texts: &[String]) -> Result<Option<Verdict>, ApiError> {
        let call = self.0;
        let Some(slot) = &call.app.0.guardrail else {
            return Ok(None);
        };
        let facts = RouteFacts {
            request_id: call.ctx.id.to_string(),
            team_id: call.principal.team_id.clone(),
            key_id: call.principal.key_id.clone(),
            actor_id: call.actor.clone(),
            ..RouteFacts::default()
        };
        let active = slot.active();
        active.policy.check(stage, &facts, texts).await.map(Some).map_err(|e| {
            tracing::error!(request_id = %call.ctx.id, error = %e, "guardrail failed; refusing the request");
            match e {
                PolicyError::Rejected {
                    status,
                    code,
                    message,
                    ..
                } if (400..500).contains(&status) => ApiError::new(
                    http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_REQUEST),
                    "guardrail_violation",
                    message,
                )
                .with_code(code),
                _ => ApiError::new(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    "server_error",
                    "The guardrail could not check this request, so it was not processed.",
                )
                .with_code("guardrail_unavailable"),
            }
        })
    }

    /// A block: the event, the journal's `blocked` status, and the 400 naming the entity kinds.
    fn refuse(&self, entities: &[String], stage: Stage) -> ApiError {
        let (action, code, what) = match stage {
            Stage::Input => ("request_blocked", "pii_detected", "The request"),
            Stage::Output => ("response_blocked", "pii_in_output", "The model's answer"),
        };
        self.violation(entities, action);
        self.0.audit.blocked();
        ApiError::new(
            http::StatusCode::BAD_REQUEST,
            "guardrail_violation",
            format!(
                "{what} contains personal data that this gateway does not allow: {}.",
                entities.join(", ")
            ),
        )
        .with_code(code)
    }

    /// The seed's `guardrail.violation` event.
    fn violation(&self, entities: &[String], action: &str) {
        let call = self.0;
        call.app.0.events.emit(|| {
            Event::now(
                "guardrail.violation",
                &call.ctx.id,
                json!({"violation_type": "pii_detected", "entities": entities, "action_taken": action}),
                &call.principal.team_id,
                &call.actor,
            )
        });
    }
}

/// The texts of a chat body's messages — every role's `content` (a string, or its parts'
/// `text`) and the `arguments` of an assistant's tool calls — and where each came from.
fn message_texts(body: &Map<String, Value>) -> (Vec<Slot>, Vec<String>) {
    let mut slots = Vec::new();
    let mut texts = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array);
    for (i, m) in messages.into_iter().flatten().enumerate() {
        match m.get("content") {
            Some(Value::String(s)) => {
                slots.push(Slot::Content(i));
                texts.push(s.clone());
            }
            Some(Value::Array(parts)) => {
                for (j, p) in parts.iter().enumerate() {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        slots.push(Slot::Part(i, j));
                        texts.push(t.to_string());
                    }
                }
            }
            _ => {}
        }
        let calls = m.get("tool_calls").and_then(Value::as_array);
        for (k, call) in calls.into_iter().flatten().enumerate() {
            if let Some(a) = call.pointer("/function/arguments").and_then(Value::as_str) {
                slots.push(Slot::ToolArguments(i, k));
                texts.push(a.to_string());
            }
        }
    }
    (slots, texts)
}

fn write_back(body: &mut Map<String, Value>, slots: &[Slot], texts: Vec<String>) {
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    for (slot, text) in slots.iter().zip(texts) {
        let target = match *slot {
            Slot::Content(i) => messages.get_mut(i).and_then(|m| m.get_mut("content")),
            Slot::Part(i, j) => messages
                .get_mut(i)
                .and_then(|m| m.pointer_mut(&format!("/content/{j}/text"))),
            Slot::ToolArguments(i, k) => messages
                .get_mut(i)
                .and_then(|m| m.pointer_mut(&format!("/tool_calls/{k}/function/arguments"))),
        };
        if let Some(t) = target {
            *t = Value::String(text);
        }
    }
}

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
            let chunk = serde_json::from_slice::<Value>(&data).ok();
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
                _ => {
                    // Not a content chunk: everything held goes first, in order.
                    self.release(usize::MAX);
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
        let who = Subject(&self.call);
        let verdict = match who.check(Stage::Output, &texts).await {
            Ok(Some(v)) => v,
            Ok(None) => return self.send_all(chunks),
            Err(e) => return self.end(e),
        };
        if !verdict.blocked.is_empty() {
            let refusal = who.refuse(&verdict.blocked, Stage::Output);
            return self.end(refusal);
        }
        if verdict.redactions.is_empty() {
            return self.send_all(chunks);
        }
        who.violation(&verdict.redacted_entities(), "redacted");
        guardrail::apply(&mut texts, &verdict.redactions);
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

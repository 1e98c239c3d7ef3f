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
//! - **streams**: the output stage on a streamed answer (`stream.rs`: the hold-back window, tool
//!   calls checked whole).
//!
//! A guardrail that fails (trap, deadline, bad answer) refuses the request: fail-closed.

mod stream;

use serde_json::{Map, Value, json};

pub use stream::{STREAM_HOLD_BACK_BYTES, output_stream};

use super::call::Call;
use crate::events::Event;
use crate::metrics::Metrics;
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

/// Where an answer's text is: chat (`message.content`, streamed as `delta.content`) or legacy
/// completions (`text` in both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Chat,
    Completion,
}

impl Shape {
    /// The text of a whole answer's choice, relative to the choice.
    pub(in crate::pipeline) fn whole_text(self) -> &'static str {
        match self {
            Shape::Chat => "/message/content",
            Shape::Completion => "/text",
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

/// Runs the output stage on a whole answer.
pub async fn output(call: &Call, answer: &mut Value, shape: Shape) -> Result<(), ApiError> {
    if call.app.guardrail().is_none() {
        return Ok(());
    }
    let Some(choices) = answer.get_mut("choices").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    // Every choice's text and the arguments of the tool calls the model wrote.
    let mut places = Vec::new();
    let mut texts = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        if let Some(t) = c.pointer(shape.whole_text()).and_then(Value::as_str) {
            places.push(format!("/{i}{}", shape.whole_text()));
            texts.push(t.to_string());
        }
        // The reasoning the client is shown (a Messages client's thinking block).
        if shape == Shape::Chat {
            for key in ["reasoning_content", "reasoning"] {
                if let Some(t) = c
                    .pointer(&format!("/message/{key}"))
                    .and_then(Value::as_str)
                {
                    places.push(format!("/{i}/message/{key}"));
                    texts.push(t.to_string());
                }
            }
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
    texts_at(call, Stage::Input, texts).await
}

/// The guardrail on the texts of an MCP tool call: its arguments (`output == false`: the input
/// stage, as a prompt) or its result (the output stage, as an answer). Block, redact in place
/// or flag, as [`texts`].
pub async fn tool_texts(call: &Call, output: bool, texts: &mut [String]) -> Result<bool, ApiError> {
    let stage = if output { Stage::Output } else { Stage::Input };
    texts_at(call, stage, texts).await
}

async fn texts_at(call: &Call, stage: Stage, texts: &mut [String]) -> Result<bool, ApiError> {
    let who = Subject(call);
    let mut flagged = false;
    let mut redacted = Vec::new();
    for slice in texts.chunks_mut(TEXTS_PER_CHECK) {
        let Some(verdict) = who.check(stage, slice).await? else {
            return Ok(false);
        };
        if !verdict.blocked.is_empty() {
            return Err(who.refuse(&verdict.blocked, stage));
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
    if call.app.guardrail().is_none() {
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
    let tokens = call.app.facts().tokens();
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

/// A guardrail call in the metrics: its time, and what it decided (blocked wins over redacted;
/// flagged is counted besides).
fn count(metrics: &Metrics, stage: Stage, took: std::time::Duration, verdict: Option<&Verdict>) {
    let (kind, stage) = match stage {
        Stage::Input => ("guardrail_input", "input"),
        Stage::Output => ("guardrail_output", "output"),
    };
    metrics.by.policy_call(kind, took);
    let Some(v) = verdict else { return };
    if !v.blocked.is_empty() {
        metrics.by.guardrail_action(stage, "blocked");
    } else if !v.redactions.is_empty() {
        metrics.by.guardrail_action(stage, "redacted");
    }
    if !v.flagged.is_empty() {
        metrics.by.guardrail_action(stage, "flagged");
    }
}

/// More text than `[guardrail] max_scanned_mib`: a prompt is refused as too large (413), a
/// model's answer as one the gateway could not check (502); neither is passed on unchecked.
fn too_large_to_scan(stage: Stage, bytes: usize, max: usize) -> ApiError {
    match stage {
        Stage::Input => ApiError::new(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!(
                "The messages hold {bytes} bytes of text; the guardrail checks at most {max} \
                 bytes per request ([guardrail] max_scanned_mib), so this request was not processed."
            ),
        )
        .with_code("too_large_to_scan"),
        Stage::Output => ApiError::new(
            http::StatusCode::BAD_GATEWAY,
            "server_error",
            format!(
                "The model's answer holds {bytes} bytes of text; the guardrail checks at most \
                 {max} bytes ([guardrail] max_scanned_mib), so it was not passed on."
            ),
        )
        .with_code("answer_too_large_to_scan"),
    }
}

fn token_ids(items: &[Value]) -> Vec<u32> {
    items
        .iter()
        .filter_map(|t| t.as_u64().and_then(|t| u32::try_from(t).ok()))
        .collect()
}

/// The call a guardrail stage checks: what the policy is told and who its events name.
struct Subject<'a>(&'a Call);

impl Subject<'_> {
    /// Runs the active guardrail on `texts`; `None` when none is configured. A guardrail that
    /// fails refuses the request (fail-closed); its own 4xx rejection is passed on.
    async fn check(&self, stage: Stage, texts: &[String]) -> Result<Option<Verdict>, ApiError> {
        let call = self.0;
        let Some(slot) = call.app.guardrail() else {
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
        let span = call.ctx.trace.as_ref().map(|t| t.child("guardrail"));
        if let Some(s) = &span {
            s.set(
                "sovereign.stage",
                if stage == Stage::Input {
                    "input"
                } else {
                    "output"
                },
            );
        }
        let started = std::time::Instant::now();
        let checked = active.policy.check(stage, &facts, texts).await;
        count(
            call.app.metrics(),
            stage,
            started.elapsed(),
            checked.as_ref().ok(),
        );
        if let (Some(s), Err(e)) = (span, &checked) {
            s.fail(e.to_string());
        }
        checked.map(Some).map_err(|e| {
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
                PolicyError::TooLarge { bytes, max, .. } => too_large_to_scan(stage, bytes, max),
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
        call.app.events().emit(|| {
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

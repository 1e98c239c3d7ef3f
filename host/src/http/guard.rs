//! The guardrail stages of a chat request (the policy is `policy::GuardrailPolicy`; the built-in
//! one finds personal data, docs/GUARDRAIL.md):
//!
//! - **input**, before routing: `block` → 400 `guardrail_violation` / `pii_detected` naming the
//!   entity kinds (never the values); `redact` → the spans replaced in the body before anything
//!   else reads it; `flag` → the request is sensitive (local models only). Blocks and redactions
//!   emit a `guardrail.violation` event.
//! - **output**, on a whole (non-streamed) answer before it is returned: `block` → 400 with code
//!   `pii_in_output` (the answer is withheld), `redact` → the answer's text redacted.
//!
//! A guardrail that fails (trap, deadline, bad answer) refuses the request: fail-closed.

use serde_json::{Map, Value, json};

use super::audit::Audit;
use super::error::ApiError;
use super::{AppState, RequestCtx};
use crate::auth::Principal;
use crate::events::Event;
use crate::policy::guardrail::{self, Stage, Verdict};
use crate::policy::{GuardrailPolicy, PolicyError, RouteFacts};

/// Where a checked text lives in a body: `messages[i].content` (a string) or its part `j`'s
/// `text`; for answers, `choices[i].message.content`.
type Slot = (usize, Option<usize>);

/// Runs the input stage; returns whether the request was flagged (sensitive).
pub async fn input(
    app: &AppState,
    ctx: &RequestCtx,
    principal: &Principal,
    actor: &str,
    audit: &Audit,
    body: &mut Map<String, Value>,
) -> Result<bool, ApiError> {
    let Some(slot) = &app.0.guardrail else {
        return Ok(false);
    };
    let active = slot.active();
    let policy = &active.policy;
    let (slots, mut texts) = message_texts(body);
    if texts.is_empty() {
        return Ok(false);
    }
    let verdict = check(policy, Stage::Input, ctx, principal, actor, &texts).await?;
    if !verdict.blocked.is_empty() {
        violation(
            app,
            ctx,
            principal,
            actor,
            &verdict.blocked,
            "request_blocked",
        );
        audit.blocked();
        return Err(blocked_error(
            &verdict.blocked,
            "pii_detected",
            "The request",
        ));
    }
    if !verdict.redactions.is_empty() {
        guardrail::apply(&mut texts, &verdict.redactions);
        write_back(body, &slots, texts);
        violation(
            app,
            ctx,
            principal,
            actor,
            &verdict.redacted_entities(),
            "redacted",
        );
    }
    Ok(!verdict.flagged.is_empty())
}

/// Runs the output stage on a whole answer.
pub async fn output(
    app: &AppState,
    ctx: &RequestCtx,
    principal: &Principal,
    actor: &str,
    audit: &Audit,
    answer: &mut Value,
) -> Result<(), ApiError> {
    let Some(slot) = &app.0.guardrail else {
        return Ok(());
    };
    let active = slot.active();
    let policy = &active.policy;
    let Some(choices) = answer.get_mut("choices").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    let mut slots = Vec::new();
    let mut texts = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        if let Some(t) = c.pointer("/message/content").and_then(Value::as_str) {
            slots.push(i);
            texts.push(t.to_string());
        }
    }
    if texts.is_empty() {
        return Ok(());
    }
    let verdict = check(policy, Stage::Output, ctx, principal, actor, &texts).await?;
    if !verdict.blocked.is_empty() {
        violation(
            app,
            ctx,
            principal,
            actor,
            &verdict.blocked,
            "response_blocked",
        );
        audit.blocked();
        return Err(blocked_error(
            &verdict.blocked,
            "pii_in_output",
            "The model's answer",
        ));
    }
    if !verdict.redactions.is_empty() {
        guardrail::apply(&mut texts, &verdict.redactions);
        for (i, t) in slots.into_iter().zip(texts) {
            if let Some(c) = choices.get_mut(i).and_then(|c| c.get_mut("message")) {
                c["content"] = Value::String(t);
            }
        }
        violation(
            app,
            ctx,
            principal,
            actor,
            &verdict.redacted_entities(),
            "redacted",
        );
    }
    Ok(())
}

async fn check(
    policy: &GuardrailPolicy,
    stage: Stage,
    ctx: &RequestCtx,
    principal: &Principal,
    actor: &str,
    texts: &[String],
) -> Result<Verdict, ApiError> {
    let facts = RouteFacts {
        request_id: ctx.id.to_string(),
        team_id: principal.team_id.clone(),
        key_id: principal.key_id.clone(),
        actor_id: actor.to_string(),
        ..RouteFacts::default()
    };
    policy.check(stage, &facts, texts).await.map_err(|e| {
        tracing::error!(request_id = %ctx.id, error = %e, "guardrail failed; refusing the request");
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

fn blocked_error(entities: &[String], code: &'static str, what: &str) -> ApiError {
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
fn violation(
    app: &AppState,
    ctx: &RequestCtx,
    principal: &Principal,
    actor: &str,
    entities: &[String],
    action: &str,
) {
    app.0.events.emit(Event::now(
        "guardrail.violation",
        &ctx.id,
        json!({"violation_type": "pii_detected", "entities": entities, "action_taken": action}),
        &principal.team_id,
        actor,
    ));
}

/// The texts of a chat body's messages, and where each came from.
fn message_texts(body: &Map<String, Value>) -> (Vec<Slot>, Vec<String>) {
    let mut slots = Vec::new();
    let mut texts = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array);
    for (i, m) in messages.into_iter().flatten().enumerate() {
        match m.get("content") {
            Some(Value::String(s)) => {
                slots.push((i, None));
                texts.push(s.clone());
            }
            Some(Value::Array(parts)) => {
                for (j, p) in parts.iter().enumerate() {
                    if let Some(t) = p.get("text").and_then(Value::as_str) {
                        slots.push((i, Some(j)));
                        texts.push(t.to_string());
                    }
                }
            }
            _ => {}
        }
    }
    (slots, texts)
}

fn write_back(body: &mut Map<String, Value>, slots: &[Slot], texts: Vec<String>) {
    let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    for (&(i, part), text) in slots.iter().zip(texts) {
        let Some(m) = messages.get_mut(i) else {
            continue;
        };
        match part {
            None => m["content"] = Value::String(text),
            Some(j) => {
                if let Some(p) = m.get_mut("content").and_then(|c| c.get_mut(j)) {
                    p["text"] = Value::String(text);
                }
            }
        }
    }
}

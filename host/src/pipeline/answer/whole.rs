//! The answer phase on a whole answer: read within the model's deadline, re-addressed (the
//! gateway's request id and model id), the reservation settled at the upstream's usage (or the
//! gateway's own count), the guardrail's output stage, `request.completed`. Embeddings take the
//! same step without the output stage and the event.

use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::{Kind, Settle};
use crate::pipeline::call::Call;
use crate::pipeline::events::completed;
use crate::pipeline::fallback::Served;
use crate::pipeline::guard::{self, Shape};
use crate::server::error::ApiError;
use crate::upstream::Usage;

/// Reads the serving model's whole answer within its deadline, re-addresses it, settles the
/// reservation (as `settle` says: durably before the answer leaves, or queued) and, for a
/// generation, runs the guardrail's output stage and sends `request.completed`.
pub(super) async fn read(
    call: &Call,
    served: Served,
    kind: Kind,
    settle: Settle,
) -> Result<Value, Response> {
    let Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    let app = &call.app;
    let started = std::time::Instant::now();
    let read = app.upstreams().read_json(&model, exchange).await;
    call.audit.upstream_time(started.elapsed());
    let mut answer = match read {
        Ok(a) => a,
        Err(e) => {
            ticket.failure(std::time::Instant::now());
            reservation.release();
            return Err(ApiError::from(e).into_response());
        }
    };
    let Some(obj) = answer.as_object_mut() else {
        ticket.failure(std::time::Instant::now());
        reservation.release();
        return Err(ApiError::from(crate::upstream::UpstreamError::Protocol {
            model: model.id.clone(),
            detail: "the answer is not a JSON object".into(),
        })
        .into_response());
    };
    ticket.success();
    let generated = kind.generated();
    if generated.is_some() {
        obj.insert("id".into(), Value::String(call.ctx.id.to_string()));
    }
    obj.insert("model".into(), Value::String(model.id.0.clone()));
    let usage = Usage::from_json(&answer);
    call.learn_ratio(&model.id, usage);
    // Embeddings are charged at their input only: the upstream's prompt tokens, else the
    // counted input the reservation was made for.
    let (tokens_in, tokens_out) = match (usage, generated) {
        (Some(u), Some(_)) => (u.prompt_tokens, u.completion_tokens),
        (Some(u), None) => (u.prompt_tokens, 0),
        (None, Some(shape)) => (
            reservation.prompt_tokens(),
            call.count_tokens(&completion_text(&answer, shape)),
        ),
        (None, None) => (reservation.prompt_tokens(), 0),
    };
    if usage.is_none()
        && generated.is_some()
        && let Some(obj) = answer.as_object_mut()
    {
        // The upstream reported none: the gateway's own count, as the convention shapes it.
        obj.insert(
            "usage".into(),
            serde_json::json!({"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                               "total_tokens": tokens_in + tokens_out}),
        );
    }
    // Durable (group commit) before the answer leaves — the journal layer waits for it beside
    // the entry's append —, or queued for the caller to wait on.
    settle.charge(call, reservation, tokens_in, tokens_out);
    let Some(shape) = generated else {
        call.audit.usage(usage, false);
        return Ok(answer);
    };
    // The guardrail's output stage on the whole answer.
    guard::output(call, &mut answer, shape)
        .await
        .map_err(IntoResponse::into_response)?;
    call.audit.usage(usage, true);
    completed(call, &model.id, 200, Some((tokens_in, tokens_out)));
    tracing::debug!(request_id = %call.ctx.id, ?usage, "answered");
    Ok(answer)
}

/// The text of every choice of a non-streamed answer (to count when usage is missing).
fn completion_text(answer: &Value, shape: Shape) -> String {
    let mut text = String::new();
    for c in answer
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = c.pointer(shape.whole_text()).and_then(Value::as_str) {
            text.push_str(t);
        }
    }
    text
}

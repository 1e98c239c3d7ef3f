//! The answer phases of an inference request, in [`answer`]: read the whole answer or relay the
//! stream (`whole`, `stream`), the guardrail's output stage, settle the reservation at the real
//! usage, label the response with the route and the model that served, `request.completed`.
//! Chat, legacy completions, embeddings, the Responses API and retrieval's `generate` answer
//! through it; an upstream that failed is counted and journaled here.

pub mod chunks;
mod stream;
mod whole;

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::header;
use serde_json::Value;

use super::call::Call;
use super::events::completed;
use super::fallback::{NotServed, Served};
use super::guard::Shape;
use super::route::{self, Routed};
use super::spend;
use crate::budget::Reservation;
use crate::domain::ModelConfig;
use crate::metrics::Metrics;

/// What is being answered: a generation (chat or legacy completion, whose text the guardrail's
/// output stage reads and which ends in `request.completed`), or embeddings (a whole answer
/// charged at its input, no output stage, no event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Chat,
    Completion,
    Embeddings,
}

impl Kind {
    /// Where a generation's text is; `None` for embeddings.
    fn generated(self) -> Option<Shape> {
        match self {
            Kind::Chat => Some(Shape::Chat),
            Kind::Completion => Some(Shape::Completion),
            Kind::Embeddings => None,
        }
    }
}

/// How an answer's charge is made durable: before the answer (or a stream's last frame) leaves
/// (`Durable`), or queued for the caller to wait on with what it commits next on the same queue
/// (`Queued`: the Responses API stores its response right behind it, one transaction for both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    Durable,
    Queued,
}

impl Settle {
    /// Settles `reservation` at the real usage, as this says.
    fn charge(self, call: &Call, reservation: Reservation, tokens_in: u64, tokens_out: u64) {
        match self {
            Settle::Durable => spend::settle_durable(call, reservation, tokens_in, tokens_out),
            Settle::Queued => {
                reservation.settle_now(tokens_in, tokens_out);
            }
        }
    }
}

/// What an answer came to: the whole answer, checked, re-addressed and settled; or the relayed
/// stream of chat chunks (SSE), settled when it ends.
pub enum Answer {
    Whole(Value),
    Stream(Body),
}

/// The answer of an inference request: the stream relayed, or the whole answer read and
/// checked; an upstream that failed counted and journaled; labelled with the route and the
/// model that served (or failed last).
pub async fn answer(
    call: &Call,
    routed: &Routed,
    served: Result<Served, NotServed>,
    stream: bool,
    wants_usage: bool,
    kind: Kind,
) -> Response {
    let (model, answered) =
        answer_parts(call, served, stream, wants_usage, kind, Settle::Durable).await;
    let response = match answered {
        Ok(Answer::Whole(answer)) => axum::Json(answer).into_response(),
        Ok(Answer::Stream(body)) => sse_response(body),
        Err(failed) => failed,
    };
    route::label(response, routed, &model)
}

/// [`answer`] before it becomes a response (the Responses API reshapes it, retrieval quotes it):
/// the model that served (or failed last) and the answer, or the error response when the
/// upstream failed (then counted, journaled and, for a generation, `request.completed`).
/// Embeddings are never streamed.
pub async fn answer_parts(
    call: &Call,
    served: Result<Served, NotServed>,
    stream: bool,
    wants_usage: bool,
    kind: Kind,
    settle: Settle,
) -> (Arc<ModelConfig>, Result<Answer, Response>) {
    let (model, answered) = match (served, kind.generated()) {
        (Ok(served), Some(shape)) if stream => (
            served.model.clone(),
            Ok(Answer::Stream(stream::relay(
                call,
                served,
                wants_usage,
                shape,
                settle,
            ))),
        ),
        (Ok(served), _) => (
            served.model.clone(),
            whole::read(call, served, kind, settle)
                .await
                .map(Answer::Whole),
        ),
        (Err(not_served), _) => (not_served.model().clone(), Err(not_served.into_response())),
    };
    let answered = answered.inspect_err(|failed| {
        Metrics::inc(&call.app.metrics().upstream_errors_total);
        call.audit.upstream_failed();
        if kind.generated().is_some() {
            completed(call, &model.id, failed.status().as_u16(), None);
        }
    });
    tracing::debug!(request_id = %call.ctx.id, key = %call.principal.key_id, model = %model.id, ?kind, "answered");
    (model, answered)
}

/// An SSE body as the response the convention expects (no caching, no proxy buffering).
pub fn sse_response(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (http::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        body,
    )
        .into_response()
}

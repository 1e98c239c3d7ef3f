//! `POST /v1/chat/completions` — the gateway's main request path, read top to bottom in
//! [`chat_completions`]; each step is a phase of `crate::pipeline`:
//!
//! 1. read and validate the body (`Call::read_body`, `validate`), name the actor;
//! 2. guardrail, input stage: block, redact in place, or flag sensitive (`guard::input`);
//! 3. facts: language, prompt tokens, routing hints (`facts`);
//! 4. route: an explicit model, or the router policy's choice, then the residency guard
//!    (`route::route`);
//! 5. budget: reserve the worst case on the team and the key (`spend::reserve`, 429 when it
//!    cannot);
//! 6. call the upstream, asking for usage in streams: the routed model, else its fallbacks when it
//!    cannot answer (`fallback::serve`);
//! 7. answer: relay the stream event by event ([`stream_answer`]) or check and re-address the
//!    JSON answer ([`whole_answer`]), so the client sees the gateway's request id and the id of
//!    the model that served; settle the reservation at the real usage (counted with the tokenizer
//!    when the upstream reports none), abandoned streams included; `request.completed`.
//!
//! Authentication, the key's address allow-list, rate and token limits ran before this
//! (middleware), and the journal layer around them gets its facts from the call's audit slot as
//! the phases learn them.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use http::header;
use serde_json::Value;

use super::validate::ChatRequest;
use crate::config::ModelKind;
use crate::facts;
use crate::metrics::Metrics;
use crate::pipeline::call::Call;
use crate::pipeline::events::completed;
use crate::pipeline::fallback::{self, NotServed, Served, encode_body};
use crate::pipeline::guard::Shape;
use crate::pipeline::route::Routed;
use crate::pipeline::{guard, route, spend};
use crate::server::error::ApiError;
use crate::upstream::{
    CountUsage, Endpoint, RelayOptions, StreamOutcome, StreamSummary, Usage, relay_sse,
};

pub async fn chat_completions(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request as the client sent it, checked against the convention.
    let mut request = ChatRequest::parse(call.read_body(body).await?)?;
    call.identify(&request.body, request.body.get("messages"));

    // 2–6. Guardrail, facts, routing, budget, the upstream call.
    let (routed, served) = serve(&call, &mut request).await?;

    // 7. The answer, with the headers of the model that served (or failed last).
    Ok(answer(
        &call,
        &routed,
        served,
        request.stream,
        request.wants_usage,
        Shape::Chat,
    )
    .await)
}

/// Phases 2–6 of a checked chat request (the Responses API runs them too): the guardrail's input
/// stage (`request.body` redacted in place), facts, routing, the budget, the upstream call with
/// fallback. `request.body` is left as last sent upstream.
pub(super) async fn serve(
    call: &Call,
    request: &mut ChatRequest,
) -> Result<(Routed, Result<Served, NotServed>), ApiError> {
    // 2. The guardrail's input stage: block (400), redact (in place), or flag (sensitive).
    let flagged = guard::input(call, &mut request.body).await?;

    // 3. Facts: language, prompt tokens, routing hints (never the prompt itself).
    let classification = call
        .headers
        .get(facts::CLASSIFICATION_HEADER)
        .map(|v| v.as_bytes());
    let facts = call.app.0.facts.extract(&request.body, classification)?;
    facts::strip_gateway_fields(&mut request.body);
    let (route_facts, sensitive) = route::facts_for(call, &facts, flagged);

    // 4. Routing: an explicit model, or the router policy's choice; the residency guard.
    let routed = route::route(call, ModelKind::Chat, &route_facts, sensitive).await?;

    // 5. Budget: the worst case is held until the answer settles it.
    let max_out =
        spend::max_completion_tokens(&request.body, call.app.0.budgets.default_max_tokens());
    let reservation = spend::reserve(
        call,
        &routed.route.model,
        u64::from(facts.prompt_tokens),
        max_out,
    )
    .await?;

    // 6. The upstream call: the routed model, else its fallbacks (inside the boundary, not out
    //    of rotation), until one answers; the reservation follows the model.
    let upstream = &mut request.body;
    request_usage(upstream, request.stream);
    let served = fallback::serve(
        call,
        &routed,
        Endpoint::ChatCompletions,
        max_out,
        reservation,
        |m| {
            upstream.insert("model".into(), Value::String(m.upstream_model.clone()));
            encode_body(upstream)
        },
    )
    .await;
    Ok((routed, served))
}

/// The answer of a chat or text-completion request: the stream relayed, or the whole answer read
/// and checked; an upstream that failed counted and journaled; labelled with the route and the
/// model that served (or failed last).
pub(super) async fn answer(
    call: &Call,
    routed: &Routed,
    served: Result<Served, NotServed>,
    stream: bool,
    wants_usage: bool,
    shape: Shape,
) -> Response {
    let (model, answered) =
        answer_parts(call, served, stream, wants_usage, shape, Settle::Durable).await;
    let response = match answered {
        Ok(Answer::Whole(answer)) => axum::Json(answer).into_response(),
        Ok(Answer::Stream(body)) => sse_response(body),
        Err(failed) => failed,
    };
    route::label(response, routed, &model)
}

/// How an answer's charge is made durable: before the answer (or a stream's last frame) leaves
/// (`Durable`), or queued for the caller to wait on with what it commits next on the same queue
/// (`Queued`: the Responses API stores its response right behind it, one transaction for both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settle {
    Durable,
    Queued,
}

/// What an answer came to: the whole answer, checked, re-addressed and settled; or the relayed
/// stream of chat chunks (SSE), settled when it ends.
pub(super) enum Answer {
    Whole(Value),
    Stream(Body),
}

/// [`answer`] before it becomes a response (the Responses API reshapes it): the model that
/// served (or failed last) and the answer, or the error response when the upstream failed (then
/// counted, journaled and `request.completed`).
pub(super) async fn answer_parts(
    call: &Call,
    served: Result<Served, NotServed>,
    stream: bool,
    wants_usage: bool,
    shape: Shape,
    settle: Settle,
) -> (
    std::sync::Arc<crate::config::ModelConfig>,
    Result<Answer, Response>,
) {
    let (model, answered) = match served {
        Ok(served) if stream => (
            served.model.clone(),
            Ok(Answer::Stream(stream_answer(
                call,
                served,
                wants_usage,
                shape,
                settle,
            ))),
        ),
        Ok(served) => (
            served.model.clone(),
            whole_answer(call, served, shape, settle)
                .await
                .map(Answer::Whole),
        ),
        Err(not_served) => (not_served.model().clone(), Err(not_served.into_response())),
    };
    let answered = answered.inspect_err(|failed| {
        Metrics::inc(&call.app.0.metrics.upstream_errors_total);
        call.audit.upstream_failed();
        completed(call, &model.id, failed.status().as_u16(), None);
    });
    tracing::debug!(request_id = %call.ctx.id, key = %call.principal.key_id, model = %model.id, ?shape, "answered");
    (model, answered)
}

/// An SSE body as the response the convention expects (no caching, no proxy buffering).
pub(super) fn sse_response(body: Body) -> Response {
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

/// Relays the serving model's stream event by event (through the guardrail's output stage when
/// one is configured); when it ends, however it ended, the reservation settles, the breaker
/// hears the outcome and `request.completed` goes out. Its charge is settled as `settle` says,
/// as a whole answer's is: durable before the last frame leaves, or queued for a stored
/// response to wait on.
fn stream_answer(
    call: &Call,
    served: Served,
    wants_usage: bool,
    shape: Shape,
    settle: Settle,
) -> Body {
    let Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    let metrics = call.app.0.metrics.clone();
    Metrics::inc(&metrics.streams_active);
    let opts = RelayOptions {
        request_id: call.ctx.id.to_string(),
        model: model.id.clone(),
        client_wants_usage: wants_usage,
        idle_timeout: model.timeouts.stream_idle,
        deadline: exchange.deadline,
        error_body: |e| ApiError::from(e).body(),
        count_usage: Some(CountUsage {
            prompt_tokens: reservation.prompt_tokens(),
            count: {
                let tokens = call.app.0.facts.shared_tokens();
                Box::new(move |text: &str| u64::from(tokens.count(text)))
            },
        }),
    };
    call.audit.stream_opened();
    // Time to first token: the first frame that reaches the client (after the guardrail).
    let mut first = Some((metrics.clone(), call.ctx.started, model.id.0.clone()));
    let first_frame = move |_: &_| {
        if let Some((metrics, started, model)) = first.take() {
            metrics.by.first_token(&model, started.elapsed());
        }
    };
    let at_end = call.clone();
    let upstream = exchange.response.into_body();
    let stream = relay_sse(upstream, opts, move |summary: StreamSummary| {
        let call = at_end;
        call.audit.stream_finished(&summary);
        // Charged however the stream ended: the upstream's usage, else counted.
        let (tokens_in, tokens_out) = match summary.usage {
            Some(u) => (u.prompt_tokens, u.completion_tokens),
            None => (
                reservation.prompt_tokens(),
                call.count_tokens(&summary.text),
            ),
        };
        match settle {
            Settle::Durable => spend::settle_durable(&call, reservation, tokens_in, tokens_out),
            Settle::Queued => {
                reservation.settle_now(tokens_in, tokens_out);
            }
        }
        let status = match summary.outcome {
            StreamOutcome::Completed => 200,
            StreamOutcome::ClientGone => 499,
            StreamOutcome::UpstreamFailed(_) => 502,
        };
        completed(&call, &model.id, status, Some((tokens_in, tokens_out)));
        // A stream the upstream broke counts against the model; one it finished (or the client
        // left) for it.
        if matches!(summary.outcome, StreamOutcome::UpstreamFailed(_)) {
            ticket.failure(std::time::Instant::now());
        } else {
            ticket.success();
        }
        Metrics::dec(&metrics.streams_active);
        let counter = match &summary.outcome {
            StreamOutcome::Completed => &metrics.streams_completed,
            StreamOutcome::ClientGone => &metrics.streams_client_gone,
            StreamOutcome::UpstreamFailed(_) => &metrics.streams_upstream_failed,
        };
        Metrics::inc(counter);
        tracing::debug!(request_id = %call.ctx.id, outcome = ?summary.outcome, usage = ?summary.usage, events = summary.events, "stream ended");
    });
    // The guardrail's output stage on the stream (hold-back window), when one is configured.
    if call.app.0.guardrail.is_some() {
        Body::from_stream(guard::output_stream(call.clone(), shape, stream).inspect(first_frame))
    } else {
        Body::from_stream(stream.inspect(first_frame))
    }
}

/// Reads the serving model's whole answer within its deadline, re-addresses it, settles the
/// reservation (durably, before the answer leaves) and runs the guardrail's output stage.
async fn whole_answer(
    call: &Call,
    served: Served,
    shape: Shape,
    settle: Settle,
) -> Result<Value, Response> {
    let Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    let app = &call.app.0;
    let started = std::time::Instant::now();
    let read = app.upstreams.read_json(&model, exchange).await;
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
    obj.insert("id".into(), Value::String(call.ctx.id.to_string()));
    obj.insert("model".into(), Value::String(model.id.0.clone()));
    let usage = Usage::from_json(&answer);
    let (tokens_in, tokens_out) = match usage {
        Some(u) => (u.prompt_tokens, u.completion_tokens),
        None => (
            reservation.prompt_tokens(),
            call.count_tokens(&completion_text(&answer, shape)),
        ),
    };
    if usage.is_none() {
        // The upstream reported none: the gateway's own count, as the convention shapes it.
        if let Some(obj) = answer.as_object_mut() {
            obj.insert(
                "usage".into(),
                serde_json::json!({"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                                   "total_tokens": tokens_in + tokens_out}),
            );
        }
    }
    // Durable (group commit) before the answer leaves — the journal layer waits for it beside
    // the entry's append —, or queued for the caller to wait on.
    match settle {
        Settle::Durable => spend::settle_durable(call, reservation, tokens_in, tokens_out),
        Settle::Queued => {
            reservation.settle_now(tokens_in, tokens_out);
        }
    }
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
        let at = match shape {
            Shape::Chat => "/message/content",
            Shape::Completion => "/text",
        };
        if let Some(t) = c.pointer(at).and_then(Value::as_str) {
            text.push_str(t);
        }
    }
    text
}

/// When streaming, usage requested from the upstream so the gateway always learns the tokens
/// spent (the model name is set per candidate).
pub(super) fn request_usage(body: &mut serde_json::Map<String, Value>, stream: bool) {
    if stream {
        let opts = body
            .entry("stream_options")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(o) = opts {
            o.insert("include_usage".into(), Value::Bool(true));
        } else {
            *opts = serde_json::json!({"include_usage": true});
        }
    }
}

//! `POST /v1/chat/completions` — the gateway's main request path, read top to bottom:
//!
//! 1. read and validate the body (`body`, `validate`);
//! 2. facts: language, prompt tokens, routing hints (`facts`);
//! 3. route: an explicit model, or the router policy's choice (`routing`);
//! 4. budget: reserve the worst case on the team and the key (`budget`, 429 when it cannot);
//! 5. call the upstream (`upstream`), asking for usage in streams: the routed model, else its
//!    fallbacks when it cannot answer (`fallback`);
//! 6. answer: relay the stream event by event, or rewrite the JSON answer, so the client sees the
//!    gateway's request id and the id of the model that served; settle the reservation at the
//!    real usage (counted with the tokenizer when the upstream reports none), abandoned streams
//!    included.
//!
//! Authentication, the key's address allow-list, rate and token limits ran before this
//! (middleware), and the journal layer around them gets its facts from the request's [`Audit`]
//! slot as the phases learn them. Later phases (guardrails) slot in between these steps in the
//! order ARCHITECTURE.md gives.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header};
use serde_json::Value;

use super::audit::Audit;
use super::error::ApiError;
use super::validate::ChatRequest;
use super::{AppState, RequestCtx, X_DATA_RESIDENCY, X_ROUTE_POLICY, body, fallback, guard, spend};
use crate::auth::Principal;
use crate::config::{ModelConfig, ModelKind};
use crate::events::Event;
use crate::facts;
use crate::metrics::Metrics;
use crate::policy::RouteFacts;
use crate::residency::{self, Boundary};
use crate::upstream::{Endpoint, RelayOptions, StreamOutcome, StreamSummary, Usage, relay_sse};

pub async fn chat_completions(
    State(app): State<AppState>,
    Extension(ctx): Extension<RequestCtx>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(audit): Extension<Audit>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    // 1. The request as the client sent it, checked against the convention.
    let raw = body::read_json_object(&headers, body, &app.0.config.server).await?;
    let mut request = ChatRequest::parse(raw)?;
    audit.prompt(request.body.get("messages"));
    let actor = spend::actor(&request.body, &headers, &principal);
    audit.actor(&actor);

    // 1b. The guardrail's input stage: block (400), redact (in place), or flag (sensitive).
    let flagged = guard::input(&app, &ctx, &principal, &actor, &audit, &mut request.body).await?;

    // 2. Facts: language, prompt tokens, routing hints (never the prompt itself).
    let classification = headers
        .get(facts::CLASSIFICATION_HEADER)
        .map(|v| v.as_bytes());
    let facts = app.0.facts.extract(&request.body, classification)?;
    facts::strip_gateway_fields(&mut request.body);
    let mut route_facts = facts.route_facts(RouteFacts {
        request_id: ctx.id.to_string(),
        team_id: principal.team_id.clone(),
        key_id: principal.key_id.clone(),
        actor_id: actor.clone(),
        allowed_regions: principal.allowed_regions.clone(),
        ..RouteFacts::default()
    });
    if flagged {
        // The router sees what the guardrail found.
        route_facts.classification = Some("sensitive".into());
    }
    let boundary = Boundary {
        allowed_regions: &principal.allowed_regions,
        allowed_models: &principal.allowed_models,
        sensitive: flagged
            || principal.sensitive_only
            || facts
                .classification
                .as_deref()
                .is_some_and(residency::is_sensitive_label),
    };

    // 3. Routing: an explicit model, or the router policy's choice.
    let route = app
        .0
        .router
        .route(
            &app.0.config,
            &route_facts,
            ModelKind::Chat,
            &boundary,
            &app.0.health,
        )
        .await?;
    // 3b. The residency guard: no policy overrides it (451 when nothing complies).
    let route = residency::guard(route, &boundary, &app.0.config, ModelKind::Chat)?;
    audit.route(&route);

    if route.decided_by_policy() {
        app.0.events.emit(|| {
            Event::now(
            "routing.rule",
            &ctx.id,
            serde_json::json!({"policy": &*route.policy, "rule": &*route.rule, "model": route.model.id.0}),
            &principal.team_id,
            &actor,
            )
        });
    }

    // 4. Budget: the worst case is held until the answer settles it.
    let max_out = spend::max_completion_tokens(&request.body, app.0.budgets.default_max_tokens());
    let reservation = spend::reserve(
        &app,
        &ctx,
        &principal,
        actor.clone(),
        &route.model,
        u64::from(facts.prompt_tokens),
        max_out,
    )
    .await?;

    // 5. The upstream call: the routed model, else its fallbacks (inside the boundary, not out of
    //    rotation), until one answers; the reservation follows the model.
    let ChatRequest {
        body: mut upstream,
        stream,
        wants_usage,
        ..
    } = request;
    request_usage(&mut upstream, stream);
    let candidates = fallback::candidates(&route, &app.0.config, &boundary);
    let attempt = fallback::Attempt {
        app: &app,
        ctx: &ctx,
        principal: &principal,
        actor: &actor,
        endpoint: Endpoint::ChatCompletions,
        max_out,
    };
    let served = fallback::serve(&attempt, candidates, reservation, |m| {
        upstream.insert("model".into(), Value::String(m.upstream_model.clone()));
        encode_body(&upstream)
    })
    .await;

    // 6. The answer, with the headers of the model that served (or failed last).
    let model = match &served {
        Ok(s) => s.model.clone(),
        Err(n) => n.model.clone(),
    };
    if !Arc::ptr_eq(&model, &route.model) {
        audit.route(&fallback::served_route(&route, &model));
    }
    let answered = match served {
        Ok(served) => forward(
            &app,
            &ctx,
            &audit,
            (&principal, &actor),
            (stream, wants_usage),
            served,
        )
        .await
        .map_err(IntoResponse::into_response),
        Err(not_served) => Err(not_served.into_response()),
    };
    let mut response = answered.unwrap_or_else(|failed| {
        Metrics::inc(&app.0.metrics.upstream_errors_total);
        audit.upstream_failed();
        completed(
            &app,
            &ctx,
            (&principal, &actor),
            &model.id,
            failed.status().as_u16(),
            None,
        );
        failed
    });
    set_route_headers(response.headers_mut(), &route.policy, &model);
    tracing::debug!(request_id = %ctx.id, key = %principal.key_id, model = %model.id, "chat completion");
    Ok(response)
}

/// Relays (stream) or reads, checks and re-addresses (whole answer) what the serving model sends,
/// settles the reservation and reports the rest of the exchange to the model's breaker.
async fn forward(
    app: &AppState,
    ctx: &RequestCtx,
    audit: &Audit,
    (principal, actor): (&Arc<Principal>, &str),
    (stream, wants_usage): (bool, bool),
    served: fallback::Served,
) -> Result<Response, ApiError> {
    let fallback::Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    let model = &model;

    if stream {
        let metrics = app.0.metrics.clone();
        Metrics::inc(&metrics.streams_active);
        let opts = RelayOptions {
            request_id: ctx.id.to_string(),
            model: model.id.clone(),
            client_wants_usage: wants_usage,
            idle_timeout: model.timeouts.stream_idle,
            deadline: exchange.deadline,
            error_body: |e| ApiError::from(e).body(),
        };
        let request_id = ctx.id.clone();
        audit.stream_opened();
        let guard_audit = audit.clone();
        let audit = audit.clone();
        let app_for_guard = app.clone();
        let app = app.clone();
        let ctx_for_event = ctx.clone();
        let principal_for_event = principal.clone();
        let actor_for_event = actor.to_string();
        let model_for_event = model.clone();
        let stream = relay_sse(exchange.response, opts, move |summary: StreamSummary| {
            audit.stream_finished(&summary);
            // Charged however the stream ended: the upstream's usage, else counted.
            let (tokens_in, tokens_out) = match summary.usage {
                Some(u) => (u.prompt_tokens, u.completion_tokens),
                None => (
                    reservation.prompt_tokens(),
                    u64::from(app.0.facts.tokens().count(&summary.text)),
                ),
            };
            reservation.settle_now(tokens_in, tokens_out);
            completed(
                &app,
                &ctx_for_event,
                (&principal_for_event, &actor_for_event),
                &model_for_event.id,
                match summary.outcome {
                    StreamOutcome::Completed => 200,
                    StreamOutcome::ClientGone => 499,
                    StreamOutcome::UpstreamFailed(_) => 502,
                },
                Some((tokens_in, tokens_out)),
            );
            // A stream the upstream broke counts against the model; one it finished (or the
            // client left) for it.
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
            tracing::debug!(%request_id, outcome = ?summary.outcome, usage = ?summary.usage, events = summary.events, "stream ended");
        });
        // The guardrail's output stage on the stream (hold-back window), when one is configured.
        let body = if app_for_guard.0.guardrail.is_some() {
            Body::from_stream(guard::output_stream(
                app_for_guard,
                ctx.clone(),
                principal.clone(),
                actor.to_string(),
                guard_audit,
                stream,
            ))
        } else {
            Body::from_stream(stream)
        };
        return Ok((
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
                (http::HeaderName::from_static("x-accel-buffering"), "no"),
            ],
            body,
        )
            .into_response());
    }

    let mut answer = match app.0.upstreams.read_json(model, exchange).await {
        Ok(a) => a,
        Err(e) => {
            ticket.failure(std::time::Instant::now());
            reservation.release();
            return Err(e.into());
        }
    };
    let Some(obj) = answer.as_object_mut() else {
        ticket.failure(std::time::Instant::now());
        reservation.release();
        return Err(ApiError::from(crate::upstream::UpstreamError::Protocol {
            model: model.id.clone(),
            detail: "the answer is not a JSON object".into(),
        }));
    };
    ticket.success();
    obj.insert("id".into(), Value::String(ctx.id.to_string()));
    obj.insert("model".into(), Value::String(model.id.0.clone()));
    let usage = Usage::from_json(&answer);
    let (tokens_in, tokens_out) = match usage {
        Some(u) => (u.prompt_tokens, u.completion_tokens),
        None => (
            reservation.prompt_tokens(),
            u64::from(app.0.facts.tokens().count(&completion_text(&answer))),
        ),
    };
    // Durable (group commit) before the answer leaves.
    reservation.settle(tokens_in, tokens_out).await;
    // The guardrail's output stage on the whole answer.
    guard::output(app, ctx, principal, actor, audit, &mut answer).await?;
    audit.usage(usage, true);
    completed(
        app,
        ctx,
        (principal, actor),
        &model.id,
        200,
        Some((tokens_in, tokens_out)),
    );
    tracing::debug!(request_id = %ctx.id, ?usage, "answered");
    Ok(axum::Json(answer).into_response())
}

/// `request.completed` for a request that reached an upstream, when it took at least
/// `[webhooks] request_completed_after_ms` (0: every request).
fn completed(
    app: &AppState,
    ctx: &RequestCtx,
    (principal, actor): (&Principal, &str),
    model: &crate::config::ModelId,
    status: u16,
    tokens: Option<(u64, u64)>,
) {
    let latency = ctx.started.elapsed();
    if latency < app.0.config.webhooks.request_completed_after {
        return;
    }
    app.0.events.emit(|| {
        let tokens = tokens.map(|(prompt, completion)| {
            serde_json::json!({
                "prompt": prompt,
                "completion": completion,
                "total": prompt + completion,
            })
        });
        Event::now(
            "request.completed",
            &ctx.id,
            serde_json::json!({
                "model": model.0,
                "status": status,
                "tokens": tokens,
                "latency_ms": u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            }),
            &principal.team_id,
            actor,
        )
    });
}

/// The text of every choice of a non-streamed answer (to count when usage is missing).
fn completion_text(answer: &Value) -> String {
    let mut text = String::new();
    for c in answer
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(t) = c.pointer("/message/content").and_then(Value::as_str) {
            text.push_str(t);
        }
    }
    text
}

/// When streaming, usage requested from the upstream so the gateway always learns the tokens
/// spent (the model name is set per candidate).
fn request_usage(body: &mut serde_json::Map<String, Value>, stream: bool) {
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

/// The JSON bytes sent upstream.
pub(super) fn encode_body(body: &serde_json::Map<String, Value>) -> Result<Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ApiError::bad_request(format!("The request could not be encoded: {e}")))
}

/// `X-Route-Policy` (the policy that routed) and `X-Data-Residency` (the region of the model that
/// served, or failed last).
pub(super) fn set_route_headers(h: &mut HeaderMap, policy: &str, model: &ModelConfig) {
    if let Ok(policy) = HeaderValue::from_str(policy) {
        h.insert(X_ROUTE_POLICY, policy);
    }
    if let Ok(region) = HeaderValue::from_str(&model.region) {
        h.insert(X_DATA_RESIDENCY, region);
    }
}

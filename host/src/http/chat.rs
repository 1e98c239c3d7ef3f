//! `POST /v1/chat/completions` — the gateway's main request path, read top to bottom:
//!
//! 1. read and validate the body (`body`, `validate`);
//! 2. facts: language, prompt tokens, routing hints (`facts`);
//! 3. route: an explicit model, or the router policy's choice (`routing`);
//! 4. call the upstream (`upstream`), asking for usage in streams;
//! 5. answer: relay the stream event by event, or rewrite the JSON answer, so the client sees the
//!    gateway's request id and the id of the model that served.
//!
//! Authentication ran before this (middleware), and the journal layer around it gets its facts
//! from the request's [`Audit`] slot as the phases learn them. Later phases (guardrails, limits,
//! budgets) slot in between these steps in the order ARCHITECTURE.md gives.

use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, header};
use serde_json::Value;

use super::audit::{Audit, X_ACTOR_ID};
use super::error::ApiError;
use super::validate::ChatRequest;
use super::{AppState, RequestCtx, X_DATA_RESIDENCY, X_ROUTE_POLICY, body};
use crate::auth::Principal;
use crate::config::ModelKind;
use crate::facts;
use crate::metrics::Metrics;
use crate::policy::RouteFacts;
use crate::routing::Route;
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
    audit.actor(request.body.get("user"));

    // 2. Facts: language, prompt tokens, routing hints (never the prompt itself).
    let classification = headers
        .get(facts::CLASSIFICATION_HEADER)
        .map(|v| v.as_bytes());
    let facts = app.0.facts.extract(&request.body, classification)?;
    facts::strip_gateway_fields(&mut request.body);
    let route_facts = facts.route_facts(RouteFacts {
        request_id: ctx.id.to_string(),
        team_id: principal.team_id.clone(),
        key_id: principal.key_id.clone(),
        actor_id: actor_id(&request, &headers, &principal),
        ..RouteFacts::default()
    });

    // 3. Routing: an explicit model, or the router policy's choice.
    let route = app
        .0
        .router
        .route(&app.0.config, &route_facts, ModelKind::Chat)
        .await?;
    audit.route(&route);

    // 4 and 5, with the route's headers on whatever comes back.
    let mut response = match forward(&app, &ctx, &audit, request, &route).await {
        Ok(r) => r,
        Err(e) => {
            Metrics::inc(&app.0.metrics.upstream_errors_total);
            audit.upstream_failed();
            e.into_response()
        }
    };
    set_route_headers(response.headers_mut(), &route);
    tracing::debug!(request_id = %ctx.id, key = %principal.key_id, model = %route.model.id, "chat completion");
    Ok(response)
}

/// Who the request is for: the body's `user`, else the `X-Actor-ID` header, else the key (the
/// journal's `actor_id` follows the same order).
fn actor_id(request: &ChatRequest, headers: &HeaderMap, principal: &Principal) -> String {
    let header = headers.get(X_ACTOR_ID).and_then(|v| v.to_str().ok());
    match request.body.get("user").and_then(Value::as_str).or(header) {
        Some(actor) if !actor.is_empty() => actor.chars().take(256).collect(),
        _ => principal.key_id.clone(),
    }
}

async fn forward(
    app: &AppState,
    ctx: &RequestCtx,
    audit: &Audit,
    request: ChatRequest,
    route: &Route,
) -> Result<Response, ApiError> {
    let model = &route.model;
    let upstream_body = upstream_body(request.body, &model.upstream_model, request.stream)?;
    let exchange = app
        .0
        .upstreams
        .post(model, Endpoint::ChatCompletions, upstream_body)
        .await?;

    if request.stream {
        let metrics = app.0.metrics.clone();
        Metrics::inc(&metrics.streams_active);
        let opts = RelayOptions {
            request_id: ctx.id.to_string(),
            model: model.id.clone(),
            client_wants_usage: request.wants_usage,
            idle_timeout: model.timeouts.stream_idle,
            deadline: exchange.deadline,
            error_body: |e| ApiError::from(e).body(),
        };
        let request_id = ctx.id.clone();
        audit.stream_opened();
        let audit = audit.clone();
        let stream = relay_sse(exchange.response, opts, move |summary: StreamSummary| {
            audit.stream_finished(&summary);
            Metrics::dec(&metrics.streams_active);
            let counter = match &summary.outcome {
                StreamOutcome::Completed => &metrics.streams_completed,
                StreamOutcome::ClientGone => &metrics.streams_client_gone,
                StreamOutcome::UpstreamFailed(_) => &metrics.streams_upstream_failed,
            };
            Metrics::inc(counter);
            tracing::debug!(%request_id, outcome = ?summary.outcome, usage = ?summary.usage, events = summary.events, "stream ended");
        });
        return Ok((
            [
                (header::CONTENT_TYPE, "text/event-stream"),
                (header::CACHE_CONTROL, "no-cache"),
                (http::HeaderName::from_static("x-accel-buffering"), "no"),
            ],
            Body::from_stream(stream),
        )
            .into_response());
    }

    let mut answer = app.0.upstreams.read_json(model, exchange).await?;
    let Some(obj) = answer.as_object_mut() else {
        return Err(ApiError::from(crate::upstream::UpstreamError::Protocol {
            model: model.id.clone(),
            detail: "the answer is not a JSON object".into(),
        }));
    };
    obj.insert("id".into(), Value::String(ctx.id.to_string()));
    obj.insert("model".into(), Value::String(model.id.0.clone()));
    let usage = Usage::from_json(&answer);
    audit.usage(usage, true);
    tracing::debug!(request_id = %ctx.id, ?usage, "answered");
    Ok(axum::Json(answer).into_response())
}

/// The client's body with the upstream's model name, and (when streaming) usage requested so the
/// gateway always learns the tokens spent.
fn upstream_body(
    mut body: serde_json::Map<String, Value>,
    upstream_model: &str,
    stream: bool,
) -> Result<Bytes, ApiError> {
    body.insert("model".into(), Value::String(upstream_model.to_string()));
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
    encode_body(&body)
}

/// The JSON bytes sent upstream.
pub(super) fn encode_body(body: &serde_json::Map<String, Value>) -> Result<Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ApiError::bad_request(format!("The request could not be encoded: {e}")))
}

pub(super) fn set_route_headers(h: &mut HeaderMap, route: &Route) {
    if let Ok(policy) = HeaderValue::from_str(&route.policy) {
        h.insert(X_ROUTE_POLICY, policy);
    }
    if let Ok(region) = HeaderValue::from_str(&route.model.region) {
        h.insert(X_DATA_RESIDENCY, region);
    }
}

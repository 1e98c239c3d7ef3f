//! `POST /v1/embeddings`: validated, routed to an embedding model, charged (the input's tokens
//! reserved, settled at the upstream's usage), proxied, and answered in the convention's shape
//! with the gateway's model id.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use http::HeaderMap;
use serde_json::Value;

use super::audit::Audit;
use super::chat::{encode_body, set_route_headers};
use super::error::ApiError;
use super::validate::EmbeddingsRequest;
use super::{AppState, RequestCtx, body, fallback, spend};
use crate::auth::Principal;
use crate::config::ModelKind;
use crate::metrics::Metrics;
use crate::policy::RouteFacts;
use crate::upstream::Endpoint;

pub async fn embeddings(
    State(app): State<AppState>,
    Extension(ctx): Extension<RequestCtx>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(audit): Extension<Audit>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let raw = body::read_json_object(&headers, body, &app.0.config.server).await?;
    let mut request = EmbeddingsRequest::parse(raw)?;
    audit.prompt(request.body.get("input"));
    let actor = spend::actor(&request.body, &headers, &principal);
    audit.actor(&actor);
    let facts = RouteFacts {
        requested_model: request.model.clone(),
        team_id: principal.team_id.clone(),
        key_id: principal.key_id.clone(),
        ..RouteFacts::default()
    };
    let sensitive = principal.sensitive_only
        || headers
            .get(crate::facts::CLASSIFICATION_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| crate::residency::is_sensitive_label(&v.trim().to_ascii_lowercase()));
    let boundary = crate::residency::Boundary {
        allowed_regions: &principal.allowed_regions,
        allowed_models: &principal.allowed_models,
        sensitive,
    };
    let route = app
        .0
        .router
        .route(
            &app.0.config,
            &facts,
            ModelKind::Embedding,
            &boundary,
            &app.0.health,
        )
        .await?;
    let route = crate::residency::guard(route, &boundary, &app.0.config, ModelKind::Embedding)?;
    audit.route(&route);
    let input_tokens = input_tokens(&app, request.body.get("input"));
    let reservation = spend::reserve(
        &app,
        &ctx,
        &principal,
        actor.clone(),
        &route.model,
        input_tokens,
        0,
    )
    .await?;
    // The routed model, else its fallbacks (inside the boundary, not out of rotation).
    let candidates = fallback::candidates(&route, &app.0.config, &boundary);
    let attempt = fallback::Attempt {
        app: &app,
        ctx: &ctx,
        principal: &principal,
        actor: &actor,
        endpoint: Endpoint::Embeddings,
        max_out: 0,
    };
    let served = match fallback::serve(&attempt, candidates, reservation, |m| {
        request
            .body
            .insert("model".into(), Value::String(m.upstream_model.clone()));
        encode_body(&request.body)
    })
    .await
    {
        Ok(s) => s,
        Err(not_served) => {
            Metrics::inc(&app.0.metrics.upstream_errors_total);
            audit.upstream_failed();
            audit.route(&fallback::served_route(&route, &not_served.model));
            let model = not_served.model.clone();
            let mut response = not_served.into_response();
            set_route_headers(response.headers_mut(), &route.policy, &model);
            return Ok(response);
        }
    };
    let fallback::Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    if !Arc::ptr_eq(&model, &route.model) {
        audit.route(&fallback::served_route(&route, &model));
    }
    let result = app.0.upstreams.read_json(&model, exchange).await;
    match &result {
        Ok(_) => ticket.success(),
        Err(_) => {
            ticket.failure(std::time::Instant::now());
        }
    }
    let mut response = match result {
        Ok(mut answer) => {
            let tokens = answer
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(input_tokens);
            audit.usage(crate::upstream::Usage::from_json(&answer), false);
            if let Some(obj) = answer.as_object_mut() {
                obj.insert("model".into(), Value::String(model.id.0.clone()));
            }
            reservation.settle(tokens, 0).await;
            Json(answer).into_response()
        }
        Err(e) => {
            reservation.release();
            Metrics::inc(&app.0.metrics.upstream_errors_total);
            audit.upstream_failed();
            ApiError::from(e).into_response()
        }
    };
    set_route_headers(response.headers_mut(), &route.policy, &model);
    tracing::debug!(key = %principal.key_id, model = %model.id, "embeddings");
    Ok(response)
}

/// Tokens of an embeddings `input`: text counted with the tokenizer, token arrays by length.
fn input_tokens(app: &AppState, input: Option<&Value>) -> u64 {
    let count = |v: &Value| -> u64 {
        match v {
            Value::String(s) => u64::from(app.0.facts.tokens().count(s)),
            Value::Array(a) => a.len() as u64,
            _ => 0,
        }
    };
    match input {
        Some(Value::Array(items)) if items.iter().any(|i| !i.is_number()) => {
            items.iter().map(count).sum()
        }
        Some(v) => count(v),
        None => 0,
    }
}

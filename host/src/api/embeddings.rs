//! `POST /v1/embeddings`, through the same phases as chat (`crate::pipeline`): validated, routed
//! to an embedding model inside the residency boundary, charged (the input's tokens reserved,
//! settled at the upstream's usage), proxied with fallback, and answered in the convention's
//! shape with the gateway's model id.

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::validate::EmbeddingsRequest;
use crate::config::ModelKind;
use crate::metrics::Metrics;
use crate::pipeline::call::Call;
use crate::pipeline::fallback::{self, Served, encode_body};
use crate::pipeline::{route, spend};
use crate::policy::RouteFacts;
use crate::residency;
use crate::server::error::ApiError;
use crate::upstream::{Endpoint, Usage};

pub async fn embeddings(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request, checked against the convention.
    let mut request = EmbeddingsRequest::parse(call.read_body(body).await?)?;
    call.identify(&request.body, request.body.get("input"));

    // 2. Route: an explicit embedding model; the residency guard.
    let facts = RouteFacts {
        requested_model: request.model.clone(),
        team_id: call.principal.team_id.clone(),
        key_id: call.principal.key_id.clone(),
        ..RouteFacts::default()
    };
    let sensitive = call
        .headers
        .get(crate::facts::CLASSIFICATION_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| residency::is_sensitive_label(&v.trim().to_ascii_lowercase()));
    let routed = route::route(&call, ModelKind::Embedding, &facts, sensitive).await?;

    // 3. Budget: the input's tokens.
    let input_tokens = input_tokens(&call, request.body.get("input"));
    let reservation = spend::reserve(&call, &routed.route.model, input_tokens, 0).await?;

    // 4. The upstream call, with fallback.
    let served = fallback::serve(&call, &routed, Endpoint::Embeddings, 0, reservation, |m| {
        request
            .body
            .insert("model".into(), Value::String(m.upstream_model.clone()));
        encode_body(&request.body)
    })
    .await;

    // 5. The answer, with the headers of the model that served (or failed last).
    let (model, answered) = match served {
        Ok(served) => (
            served.model.clone(),
            answer(&call, served, input_tokens).await,
        ),
        Err(not_served) => (not_served.model().clone(), Err(not_served.into_response())),
    };
    let response = answered.unwrap_or_else(|failed| {
        Metrics::inc(&call.app.0.metrics.upstream_errors_total);
        call.audit.upstream_failed();
        failed
    });
    tracing::debug!(key = %call.principal.key_id, model = %model.id, "embeddings");
    Ok(route::label(response, &routed, &model))
}

/// Reads the serving model's answer, names the gateway's model in it and settles the
/// reservation at the upstream's usage (else the counted input).
async fn answer(call: &Call, served: Served, input_tokens: u64) -> Result<Response, Response> {
    let Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    match call.app.0.upstreams.read_json(&model, exchange).await {
        Ok(mut answer) => {
            ticket.success();
            let tokens = answer
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(input_tokens);
            call.audit.usage(Usage::from_json(&answer), false);
            if let Some(obj) = answer.as_object_mut() {
                obj.insert("model".into(), Value::String(model.id.0.clone()));
            }
            reservation.settle(tokens, 0).await;
            Ok(Json(answer).into_response())
        }
        Err(e) => {
            ticket.failure(std::time::Instant::now());
            reservation.release();
            Err(ApiError::from(e).into_response())
        }
    }
}

/// Tokens of an embeddings `input`: text counted with the tokenizer, token arrays by length.
fn input_tokens(call: &Call, input: Option<&Value>) -> u64 {
    let count = |v: &Value| -> u64 {
        match v {
            Value::String(s) => call.count_tokens(s),
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

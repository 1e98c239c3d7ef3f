//! `POST /v1/embeddings`: validated, routed to an embedding model, proxied, and answered in the
//! convention's shape with the gateway's model id.

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
use super::{AppState, body};
use crate::auth::Principal;
use crate::config::ModelKind;
use crate::metrics::Metrics;
use crate::policy::RouteFacts;
use crate::upstream::Endpoint;

pub async fn embeddings(
    State(app): State<AppState>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(audit): Extension<Audit>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let raw = body::read_json_object(&headers, body, &app.0.config.server).await?;
    let mut request = EmbeddingsRequest::parse(raw)?;
    audit.prompt(request.body.get("input"));
    audit.actor(request.body.get("user"));
    let facts = RouteFacts {
        requested_model: request.model.clone(),
        team_id: principal.team_id.clone(),
        key_id: principal.key_id.clone(),
        ..RouteFacts::default()
    };
    let route = app
        .0
        .router
        .route(&app.0.config, &facts, ModelKind::Embedding)
        .await?;
    audit.route(&route);
    let model = &route.model;
    request
        .body
        .insert("model".into(), Value::String(model.upstream_model.clone()));
    let upstream_body = encode_body(&request.body)?;
    let result = async {
        let exchange = app
            .0
            .upstreams
            .post(model, Endpoint::Embeddings, upstream_body)
            .await?;
        app.0.upstreams.read_json(model, exchange).await
    }
    .await;
    let mut response = match result {
        Ok(mut answer) => {
            audit.usage(crate::upstream::Usage::from_json(&answer), false);
            if let Some(obj) = answer.as_object_mut() {
                obj.insert("model".into(), Value::String(model.id.0.clone()));
            }
            Json(answer).into_response()
        }
        Err(e) => {
            Metrics::inc(&app.0.metrics.upstream_errors_total);
            audit.upstream_failed();
            ApiError::from(e).into_response()
        }
    };
    set_route_headers(response.headers_mut(), &route);
    tracing::debug!(key = %principal.key_id, model = %model.id, "embeddings");
    Ok(response)
}

//! `GET /v1/models` and `GET /v1/models/{id}`: the configured models in the convention's list
//! shape, each also carrying family, kind, languages, region and local; `auto-router` included.

use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};

use crate::config::{AUTO_ROUTER, ModelConfig};
use crate::server::error::ApiError;
use crate::state::AppState;

pub async fn list_models(State(app): State<AppState>) -> Json<Value> {
    let mut data: Vec<Value> = app
        .0
        .config
        .models
        .iter()
        .map(|m| model_entry(&app, m))
        .collect();
    data.push(auto_router_entry(&app));
    Json(json!({"object": "list", "data": data}))
}

pub async fn get_model(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if id == AUTO_ROUTER {
        return Ok(Json(auto_router_entry(&app)));
    }
    app.0
        .config
        .model(&id)
        .map(|m| Json(model_entry(&app, m)))
        .ok_or_else(|| ApiError::model_not_found(&id))
}

fn model_entry(app: &AppState, m: &ModelConfig) -> Value {
    json!({
        "id": m.id.0,
        "object": "model",
        "created": app.0.started_unix,
        "owned_by": app.0.config.sovereign_id,
        "family": m.family,
        "kind": m.kind.as_str(),
        "languages": m.languages,
        "region": m.region,
        "local": m.local,
        "context_window": m.context_window,
        "input_cost_per_mtok": m.input_cost_per_mtok,
        "output_cost_per_mtok": m.output_cost_per_mtok,
    })
}

/// `auto-router` is a chat "model" whose region and locality depend on the route taken.
fn auto_router_entry(app: &AppState) -> Value {
    json!({
        "id": AUTO_ROUTER,
        "object": "model",
        "created": app.0.started_unix,
        "owned_by": app.0.config.sovereign_id,
        "family": "router",
        "kind": "chat",
        "languages": [],
        "region": null,
        "local": null,
    })
}

//! `GET /v1/models` and `GET /v1/models/{id}`: the configured models in the convention's list
//! shape, each also carrying family, kind, languages, region and local; `auto-router` and the
//! built-in embedding model included.

use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};

use crate::domain::{AUTO_ROUTER, ModelConfig};
use crate::rag::BUILTIN_MODEL;
use crate::server::error::ApiError;
use crate::state::AppState;

pub async fn list_models(State(app): State<AppState>) -> Json<Value> {
    let mut data: Vec<Value> = app
        .config()
        .models
        .iter()
        .map(|m| model_entry(&app, m))
        .collect();
    data.push(auto_router_entry(&app));
    data.extend(builtin_entry(&app));
    Json(json!({"object": "list", "data": data}))
}

pub async fn get_model(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if id == AUTO_ROUTER {
        return Ok(Json(auto_router_entry(&app)));
    }
    if id == BUILTIN_MODEL
        && let Some(entry) = builtin_entry(&app)
    {
        return Ok(Json(entry));
    }
    app.config()
        .model(&id)
        .map(|m| Json(model_entry(&app, m)))
        .ok_or_else(|| ApiError::model_not_found(&id))
}

fn model_entry(app: &AppState, m: &ModelConfig) -> Value {
    json!({
        "id": m.id.0,
        "object": "model",
        "created": app.started_unix(),
        "owned_by": app.config().sovereign_id,
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
        "created": app.started_unix(),
        "owned_by": app.config().sovereign_id,
        "family": "router",
        "kind": "chat",
        "languages": [],
        "region": null,
        "local": null,
    })
}

/// The document library's embedding model, served in process, when it is loaded and no
/// configured model takes its id.
fn builtin_entry(app: &AppState) -> Option<Value> {
    let library = app.library()?;
    if !library.builtin_ready() || app.config().model(BUILTIN_MODEL).is_some() {
        return None;
    }
    Some(json!({
        "id": BUILTIN_MODEL,
        "object": "model",
        "created": app.started_unix(),
        "owned_by": app.config().sovereign_id,
        "family": "e5",
        "kind": "embedding",
        // multilingual-e5 covers ~100 languages; these are the ones its evaluation here covers.
        "languages": ["ar", "en"],
        "region": app.config().region,
        "local": true,
        "dimensions": library.dims(),
        "context_window": 512,
        "input_cost_per_mtok": 0,
        "output_cost_per_mtok": 0,
    }))
}

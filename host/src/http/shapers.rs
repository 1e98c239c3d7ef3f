//! The admin API of webhook shapers (`/v1/admin/webhook-shapers`): upload a shaper under a name
//! (validated — compiled, world-checked, smoke-called — before it replaces anything), list them,
//! read one. Webhook subscriptions name the shaper their events go through; see
//! docs/POLICIES.md, "Webhook shapers".

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::AppState;
use super::admin::{AdminOnly, MAX_UPLOAD_BODY_BYTES, decode_component, settings_text};
use super::body::read_json_object_within;
use super::error::ApiError;
use crate::policy::PolicyError;
use crate::policy::shaper::{MAX_SHAPERS, ShaperInfo, WORLD, valid_name};
use crate::routing::registry::MAX_DOCUMENT_BYTES;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Upload {
    name: String,
    component_base64: String,
    /// What the shaper reads with `config-get("settings")`: a JSON object or any text.
    #[serde(default)]
    settings: Option<serde_json::Value>,
}

fn info(i: &ShaperInfo) -> serde_json::Value {
    json!({
        "object": "webhook_shaper",
        "name": i.name,
        "world": WORLD,
        "sha256": i.sha256,
        "size": i.size,
        "loaded_at": i.loaded_at,
    })
}

/// `POST /v1/admin/webhook-shapers`: `{name, component_base64, settings?}` → 201 with the
/// shaper's info. A component that does not load is a 400 naming why, and replaces nothing;
/// a shaper of the same name (`default` too) is replaced, calls in flight finishing on it.
pub async fn put(
    _: AdminOnly,
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let map = read_json_object_within(&headers, body, MAX_UPLOAD_BODY_BYTES, &app.0.config.server)
        .await?;
    let upload: Upload = serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid webhook shaper upload: {e}.")))?;
    if !valid_name(&upload.name) {
        return Err(ApiError::invalid(
            "name",
            "A shaper's `name` is 1 to 63 characters of a-z, 0-9, `_` and `-`, starting with a letter or digit.",
        ));
    }
    let shapers = &app.0.shapers;
    if !shapers.contains(&upload.name) && shapers.list().len() >= MAX_SHAPERS {
        return Err(ApiError::invalid(
            "name",
            format!("The gateway keeps at most {MAX_SHAPERS} webhook shapers; replace one instead."),
        )
        .with_code("too_many_shapers"));
    }
    let settings = settings_text(upload.settings)?;
    if settings.as_ref().is_some_and(|s| s.len() > MAX_DOCUMENT_BYTES) {
        return Err(ApiError::invalid(
            "settings",
            format!("`settings` is larger than {MAX_DOCUMENT_BYTES} bytes."),
        ));
    }
    let component = decode_component(&upload.component_base64)?;
    let loaded = shapers
        .put(&upload.name, component.into(), settings)
        .await
        .map_err(|e| match e {
            PolicyError::Engine(_) | PolicyError::Cancelled(_) => {
                tracing::error!(error = %e, shaper = upload.name, "loading a webhook shaper failed");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "The policy engine could not load the shaper.",
                )
            }
            e => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("The webhook shaper was not loaded: {e}"),
            )
            .with_param("component_base64")
            .with_code("invalid_policy"),
        })?;
    tracing::info!(shaper = loaded.name, sha256 = loaded.sha256, "webhook shaper loaded");
    Ok((StatusCode::CREATED, Json(info(&loaded))).into_response())
}

/// `GET /v1/admin/webhook-shapers`: every shaper, by name.
pub async fn list(_: AdminOnly, State(app): State<AppState>) -> Json<serde_json::Value> {
    let data: Vec<_> = app.0.shapers.list().iter().map(info).collect();
    Json(json!({ "object": "list", "data": data }))
}

/// `GET /v1/admin/webhook-shapers/{name}`.
pub async fn get(
    _: AdminOnly,
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    app.0
        .shapers
        .get(&name)
        .map(|p| Json(info(&p.info())))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "No webhook shaper named `{}`.",
                name.chars().take(64).collect::<String>()
            ))
        })
}

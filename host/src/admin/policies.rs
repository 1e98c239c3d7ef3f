//! The admin API of policies: router policy versions (`/v1/admin/policies`) and the guardrail
//! (`/v1/admin/guardrail`), behind [`AdminOnly`], written through `crate::services::Policies`.
//! Uploads are validated (compile, world check, smoke call) before they can become active; see
//! docs/POLICIES.md, "Hot swap".

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{MAX_UPLOAD_BODY_BYTES, decode_component, settings_text};
use crate::pipeline::admission::AdminOnly;
use crate::policy::PoolMode;
use crate::routing::registry::MAX_DOCUMENT_BYTES;
use crate::server::body::read_json_object_within;
use crate::server::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Upload {
    #[serde(default)]
    document: Option<String>,
    #[serde(default)]
    component_base64: Option<String>,
    /// `fresh` or `warm`; absent: the active version's.
    #[serde(default)]
    pool: Option<PoolMode>,
    #[serde(default = "yes")]
    activate: bool,
}

fn yes() -> bool {
    true
}

/// `POST /v1/admin/policies`: upload a router version (document and/or component).
pub async fn upload(
    _: AdminOnly,
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let router = app.policies().router()?;
    let map = read_json_object_within(&headers, body, MAX_UPLOAD_BODY_BYTES, &app.config().server)
        .await?;
    let upload: Upload = serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid policy upload: {e}.")))?;
    if upload.document.is_none() && upload.component_base64.is_none() && upload.pool.is_none() {
        return Err(ApiError::bad_request(
            "Send a `document`, a `component_base64`, a `pool`, or several of them.",
        ));
    }
    if upload
        .document
        .as_ref()
        .is_some_and(|d| d.len() > MAX_DOCUMENT_BYTES)
    {
        return Err(ApiError::invalid(
            "document",
            format!("The document is larger than {MAX_DOCUMENT_BYTES} bytes."),
        ));
    }
    let component = upload
        .component_base64
        .as_deref()
        .map(decode_component)
        .transpose()?;
    let info = router
        .upload(component, upload.document, upload.pool, upload.activate)
        .await?;
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

/// `GET /v1/admin/policies`: every kept version, oldest first.
pub async fn list(_: AdminOnly, State(app): State<AppState>) -> Result<Response, ApiError> {
    let router = app.policies().router()?;
    let data = router.list();
    let active = data.iter().find(|v| v.active).map(|v| v.id.clone());
    let breaker = router.breaker();
    Ok(
        Json(json!({ "object": "list", "active": active, "breaker": breaker, "data": data }))
            .into_response(),
    )
}

/// `POST /v1/admin/policies/{id}/activate`: make a loaded version active (also a rollback).
pub async fn activate(
    _: AdminOnly,
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let info = app.policies().router()?.activate(&id).await?;
    Ok(Json(info).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GuardrailUpload {
    #[serde(default)]
    component_base64: Option<String>,
    /// The settings document (JSON text or a JSON object).
    #[serde(default)]
    settings: Option<serde_json::Value>,
}

fn guardrail_info(l: &crate::policy::guardrail::Loaded) -> serde_json::Value {
    json!({
        "object": "guardrail",
        "world": crate::policy::guardrail::WORLD,
        "component_sha256": l.policy.sha256(),
        "settings": l.settings,
    })
}

/// `GET /v1/admin/guardrail`: the active guardrail.
pub async fn guardrail_get(State(app): State<AppState>) -> Result<Response, ApiError> {
    Ok(Json(guardrail_info(&app.policies().guardrail()?.active())).into_response())
}

/// `POST /v1/admin/guardrail`: a new component and/or settings, validated (compiled, world
/// checked, smoke-called) before it replaces the active guardrail; in-flight requests finish on
/// the one they started with. A bad upload is a 400 and changes nothing.
pub async fn guardrail_swap(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let guardrail = app.policies().guardrail()?;
    let map = read_json_object_within(&headers, body, MAX_UPLOAD_BODY_BYTES, &app.config().server)
        .await?;
    let upload: GuardrailUpload = serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid guardrail upload: {e}.")))?;
    let component = upload
        .component_base64
        .as_deref()
        .map(decode_component)
        .transpose()?;
    let settings = settings_text(upload.settings)?;
    if component.is_none() && settings.is_none() {
        return Err(ApiError::bad_request(
            "Send a `component_base64`, `settings`, or both.",
        ));
    }
    let loaded = guardrail.swap(component, settings).await?;
    Ok(Json(guardrail_info(&loaded)).into_response())
}

//! The admin API of the single-policy worlds: the tool policy (`/v1/admin/tool-policy`, MCP tool
//! calls) and the retrieval policy (`/v1/admin/retrieval-policy`, retrieved chunks). `GET`
//! shows the active one; `POST {"component_base64"?, "settings"?}` loads a new version — compiled,
//! world-checked and smoke-called before it replaces the active one; decisions in flight finish
//! on the one they started with. A bad upload is a 400 and changes nothing. docs/POLICIES.md,
//! "Tool policies" and "Retrieval policies".

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{MAX_UPLOAD_BODY_BYTES, decode_component, settings_text};
use crate::policy::{Installed, PolicyError, retrieval, tool};
use crate::routing::registry::MAX_DOCUMENT_BYTES;
use crate::server::body::read_json_object_within;
use crate::server::error::ApiError;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Upload {
    #[serde(default)]
    component_base64: Option<String>,
    /// The settings the policy reads with `config-get("settings")` (a JSON object or its text).
    #[serde(default)]
    settings: Option<Value>,
}

/// An upload's component and settings, checked; at least one of them.
async fn read_upload(
    app: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Option<Vec<u8>>, Option<String>), ApiError> {
    let map =
        read_json_object_within(headers, body, MAX_UPLOAD_BODY_BYTES, &app.config().server).await?;
    let upload: Upload = serde_json::from_value(Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid policy upload: {e}.")))?;
    let settings = settings_text(upload.settings)?;
    if settings
        .as_ref()
        .is_some_and(|s| s.len() > MAX_DOCUMENT_BYTES)
    {
        return Err(ApiError::invalid(
            "settings",
            format!("`settings` is larger than {MAX_DOCUMENT_BYTES} bytes."),
        ));
    }
    let component = upload
        .component_base64
        .as_deref()
        .map(decode_component)
        .transpose()?;
    if component.is_none() && settings.is_none() {
        return Err(ApiError::bad_request(
            "Send a `component_base64`, `settings`, or both.",
        ));
    }
    Ok((component, settings))
}

/// A version that did not load: the engine's own failure is a 500, the upload's a 400.
fn not_loaded(what: &str, e: PolicyError) -> ApiError {
    match e {
        PolicyError::Engine(_) | PolicyError::Cancelled(_) => {
            tracing::error!(error = %e, "loading a {what} failed");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                format!("The policy engine could not load the {what}."),
            )
        }
        e => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("The {what} was not loaded: {e}"),
        )
        .with_code("invalid_policy"),
    }
}

fn info<P>(object: &str, world: &str, sha256: &str, i: &Installed<P>) -> Value {
    json!({
        "object": object,
        "world": world,
        "component_sha256": sha256,
        "builtin": i.builtin,
        "settings": i.settings,
    })
}

fn tool_info(i: &Installed<tool::ToolPolicy>) -> Value {
    info("tool_policy", tool::WORLD, i.policy.sha256(), i)
}

fn retrieval_info(i: &Installed<retrieval::RetrievalPolicy>) -> Value {
    info("retrieval_policy", retrieval::WORLD, i.policy.sha256(), i)
}

/// `GET /v1/admin/tool-policy`: the active tool policy.
pub async fn tool_get(State(app): State<AppState>) -> Response {
    Json(tool_info(&app.tool_policies().active())).into_response()
}

/// `POST /v1/admin/tool-policy`: a new component and/or settings.
pub async fn tool_swap(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (component, settings) = read_upload(&app, &headers, body).await?;
    let loaded = app
        .tool_policies()
        .swap(component, settings)
        .await
        .map_err(|e| not_loaded("tool policy", e))?;
    app.metrics().by.policy_swapped("tool");
    Ok(Json(tool_info(&loaded)).into_response())
}

/// `GET /v1/admin/retrieval-policy`: the active retrieval policy.
pub async fn retrieval_get(State(app): State<AppState>) -> Response {
    Json(retrieval_info(&app.retrieval_policies().active())).into_response()
}

/// `POST /v1/admin/retrieval-policy`: a new component and/or settings.
pub async fn retrieval_swap(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (component, settings) = read_upload(&app, &headers, body).await?;
    let loaded = app
        .retrieval_policies()
        .swap(component, settings)
        .await
        .map_err(|e| not_loaded("retrieval policy", e))?;
    app.metrics().by.policy_swapped("retrieval");
    Ok(Json(retrieval_info(&loaded)).into_response())
}

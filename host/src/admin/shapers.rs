//! The admin API of webhook shapers (`/v1/admin/webhook-shapers`): upload a shaper under a name
//! (validated — compiled, world-checked, smoke-called — before it replaces anything), list them,
//! read one, and try one on an event (`…/{name}/shape`: what a target would receive, nothing
//! sent). Webhook subscriptions name the shaper their events go through; see
//! docs/POLICIES.md, "Webhook shapers".

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::{MAX_UPLOAD_BODY_BYTES, decode_component, settings_text};
use crate::pipeline::admission::AdminOnly;
use crate::policy::PolicyError;
use crate::policy::shaper::{MAX_SHAPERS, ShapeError, ShaperEvent, ShaperInfo, WORLD, valid_name};
use crate::routing::registry::MAX_DOCUMENT_BYTES;
use crate::server::body::read_json_object_within;
use crate::server::error::ApiError;
use crate::state::AppState;

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
    let map = read_json_object_within(&headers, body, MAX_UPLOAD_BODY_BYTES, &app.config().server)
        .await?;
    let upload: Upload = serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid webhook shaper upload: {e}.")))?;
    if !valid_name(&upload.name) {
        return Err(ApiError::invalid(
            "name",
            "A shaper's `name` is 1 to 63 characters of a-z, 0-9, `_` and `-`, starting with a letter or digit.",
        ));
    }
    let shapers = app.shapers();
    if !shapers.contains(&upload.name) && shapers.list().len() >= MAX_SHAPERS {
        return Err(ApiError::invalid(
            "name",
            format!(
                "The gateway keeps at most {MAX_SHAPERS} webhook shapers; replace one instead."
            ),
        )
        .with_code("too_many_shapers"));
    }
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
    app.metrics().by.policy_swapped("shaper");
    tracing::info!(
        shaper = loaded.name,
        sha256 = loaded.sha256,
        "webhook shaper loaded"
    );
    Ok((StatusCode::CREATED, Json(info(&loaded))).into_response())
}

/// `GET /v1/admin/webhook-shapers`: every shaper, by name.
pub async fn list(_: AdminOnly, State(app): State<AppState>) -> Json<serde_json::Value> {
    let data: Vec<_> = app.shapers().list().iter().map(info).collect();
    Json(json!({ "object": "list", "data": data }))
}

/// `GET /v1/admin/webhook-shapers/{name}`.
pub async fn get(
    _: AdminOnly,
    State(app): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    app.shapers()
        .get(&name)
        .map(|p| Json(info(&p.info())))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "No webhook shaper named `{}`.",
                name.chars().take(64).collect::<String>()
            ))
        })
}

/// An event in the seed's shape, as webhook receivers of the default shaper see it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TryEvent {
    #[serde(default = "try_id")]
    id: String,
    event: String,
    #[serde(default = "try_timestamp")]
    timestamp: String,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    details: serde_json::Value,
    #[serde(default)]
    metadata: TryMetadata,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TryMetadata {
    #[serde(default)]
    team_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
}

fn try_id() -> String {
    "evt-try".into()
}

fn try_timestamp() -> String {
    crate::journal::format_utc(std::time::SystemTime::now())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Try {
    event: TryEvent,
    #[serde(default)]
    target: String,
}

/// `POST /v1/admin/webhook-shapers/{name}/shape`: `{event: <seed-shaped event, plus an optional
/// id>, target?}` → what the shaper makes of it, after the host's checks and filtering:
/// `{delivered, body, content_type, headers, dropped_headers}` (`delivered: false`: the shaper
/// skips it). Nothing is sent. A shaper that fails is a 400 `shaper_failed` with the reason —
/// the event a real delivery would dead-letter.
pub async fn try_shape(
    _: AdminOnly,
    State(app): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<serde_json::Value>, ApiError> {
    let map = read_json_object_within(&headers, body, MAX_UPLOAD_BODY_BYTES, &app.config().server)
        .await?;
    let t: Try = serde_json::from_value(serde_json::Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid shaper test: {e}.")))?;
    let event = ShaperEvent {
        id: t.event.id,
        kind: t.event.event,
        timestamp: t.event.timestamp,
        request_id: t.event.request_id,
        details_json: t.event.details.to_string(),
        team_id: t.event.metadata.team_id,
        user_id: t.event.metadata.user_id,
    };
    let shaped = app
        .shapers()
        .shape(&name, &event, &t.target)
        .await
        .map_err(|e| match e {
            ShapeError::UnknownShaper(_) => ApiError::not_found(format!(
                "No webhook shaper named `{}`.",
                name.chars().take(64).collect::<String>()
            )),
            e => ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("The shaper failed; a delivery would go to the dead-letter queue: {e}"),
            )
            .with_code("shaper_failed"),
        })?;
    Ok(Json(match shaped {
        None => json!({ "object": "shaped_delivery", "delivered": false }),
        Some(d) => {
            let headers: Vec<(&str, String)> = d
                .headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.as_str(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            json!({
                "object": "shaped_delivery",
                "delivered": true,
                "body": String::from_utf8_lossy(&d.body),
                "content_type": String::from_utf8_lossy(d.content_type.as_bytes()),
                "headers": headers,
                "dropped_headers": d.dropped_headers,
            })
        }
    }))
}

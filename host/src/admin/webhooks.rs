//! `/v1/admin/webhooks` (admin): subscriptions (create — the signing secret shown once —, list,
//! read, delete), a test ping, the deliveries with their attempts and the dead-letter queue, and
//! re-driving dead letters. Subscriptions change through `crate::services::Subscriptions` (every
//! replica is told); delivery itself is `crate::webhooks`.

use crate::server::params::Query;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::server::body;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::store::UnixMillis;
use crate::store::webhooks::{Delivery, DeliveryFilter, DeliveryState, Webhook};
use crate::webhooks::{Subscribe, WebhookError};

/// Most deliveries one page lists.
const MAX_PAGE: u32 = 100;
/// Most seqs one re-drive names.
const MAX_REDRIVE_SEQS: usize = 1_000;

impl From<WebhookError> for ApiError {
    fn from(e: WebhookError) -> Self {
        match e {
            WebhookError::Invalid(m) => ApiError::bad_request(m),
            WebhookError::NotFound(_) => ApiError::not_found(e.to_string()),
            WebhookError::TooMany(_) => {
                ApiError::new(StatusCode::CONFLICT, "invalid_request_error", e.to_string())
                    .with_code("too_many_webhooks")
            }
            WebhookError::Store(s) => s.into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    url: String,
    events: Vec<String>,
    #[serde(default)]
    team_id: Option<String>,
    #[serde(default)]
    shaper_policy: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// `POST /v1/admin/webhooks`: 201 with the subscription and its `secret` (shown this once).
pub async fn create(
    State(app): State<AppState>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let c: Create = body::read_json(&headers, req, &app.config().server, "webhook").await?;
    let w = app
        .subscriptions()
        .create(Subscribe {
            url: c.url,
            events: c.events,
            team_id: c.team_id,
            shaper: c.shaper_policy,
            description: c.description,
        })
        .await?;
    let mut out = render(&w);
    out["secret"] = Value::String(w.secret.clone());
    Ok((StatusCode::CREATED, Json(out)).into_response())
}

/// `GET /v1/admin/webhooks`.
pub async fn list(State(app): State<AppState>) -> Response {
    let data: Vec<Value> = app.webhooks().list().iter().map(render).collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

/// `GET /v1/admin/webhooks/{id}`.
pub async fn get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(render(&app.webhooks().get(&id)?)).into_response())
}

/// `DELETE /v1/admin/webhooks/{id}`: the subscription and its pending deliveries.
pub async fn delete(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    app.subscriptions().delete(&id).await?;
    Ok(Json(json!({"id": id, "object": "webhook", "deleted": true})).into_response())
}

/// `POST /v1/admin/webhooks/{id}/test`: 202; a `webhook.test` event is enqueued for this
/// subscription (in order behind anything pending) and its id returned.
pub async fn test(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let event_id = app.webhooks().test(&id).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"object": "webhook.test", "webhook_id": id, "event_id": event_id})),
    )
        .into_response())
}

/// Longest grace a rotated secret may keep signing.
const MAX_GRACE_SECS: u64 = 7 * 24 * 3_600;
const DEFAULT_GRACE_SECS: u64 = 24 * 3_600;

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rotate {
    /// How long the old secret keeps signing alongside the new one (0: it stops at once).
    #[serde(default)]
    grace_seconds: Option<u64>,
}

/// `POST /v1/admin/webhooks/{id}/rotate` `{grace_seconds?}` (default a day, at most 7): a new
/// secret, in the answer once; deliveries carry both signatures until the grace ends.
pub async fn rotate(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let r: Rotate =
        body::read_json_or_default(&headers, req, &app.config().server, "rotation").await?;
    let grace = r.grace_seconds.unwrap_or(DEFAULT_GRACE_SECS);
    if grace > MAX_GRACE_SECS {
        return Err(ApiError::invalid(
            "grace_seconds",
            format!("`grace_seconds` must be at most {MAX_GRACE_SECS}."),
        ));
    }
    let w = app
        .subscriptions()
        .rotate(&id, std::time::Duration::from_secs(grace))
        .await?;
    let mut out = render(&w);
    out["secret"] = Value::String(w.secret.clone());
    out["previous_secret_valid_until"] = json!(w.previous_until.map(secs));
    Ok(Json(out).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesQuery {
    /// `pending`, `delivered`, `dead` (the dead-letter queue) or `skipped`.
    #[serde(default)]
    state: Option<String>,
    /// Page back: deliveries with a smaller seq.
    #[serde(default)]
    before: Option<i64>,
    #[serde(default)]
    limit: Option<u32>,
}

/// `GET /v1/admin/webhooks/{id}/deliveries?state=dead&limit=50&before=SEQ`: newest first, each
/// with its attempts.
pub async fn deliveries(
    State(app): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<DeliveriesQuery>,
) -> Result<Response, ApiError> {
    let state = q
        .state
        .as_deref()
        .map(|s| {
            DeliveryState::parse(s).ok_or_else(|| {
                ApiError::invalid(
                    "state",
                    "`state` must be `pending`, `delivered`, `dead` or `skipped`.",
                )
            })
        })
        .transpose()?;
    let limit = q.limit.unwrap_or(50);
    if limit == 0 || limit > MAX_PAGE {
        return Err(ApiError::invalid(
            "limit",
            format!("`limit` must be between 1 and {MAX_PAGE}."),
        ));
    }
    let page = app
        .webhooks()
        .deliveries(
            &id,
            DeliveryFilter {
                state,
                before_seq: q.before,
                limit,
            },
        )
        .await?;
    let next = (page.len() == limit as usize)
        .then(|| page.last().map(|d| d.seq))
        .flatten();
    let data: Vec<Value> = page.iter().map(render_delivery).collect();
    Ok(Json(json!({"object": "list", "data": data, "next_before": next})).into_response())
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Redrive {
    /// Only these dead letters; absent: all of the subscription's.
    #[serde(default)]
    seqs: Option<Vec<i64>>,
}

/// `POST /v1/admin/webhooks/{id}/deliveries/redrive` `{seqs?: [...]}`: dead letters back to
/// pending, sent before anything newer.
pub async fn redrive(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let r: Redrive =
        body::read_json_or_default(&headers, req, &app.config().server, "redrive").await?;
    if r.seqs.as_ref().is_some_and(|s| s.len() > MAX_REDRIVE_SEQS) {
        return Err(ApiError::invalid(
            "seqs",
            format!("`seqs` lists at most {MAX_REDRIVE_SEQS} deliveries."),
        ));
    }
    let n = app.webhooks().redrive(&id, r.seqs).await?;
    Ok(Json(json!({"object": "webhook.redrive", "webhook_id": id, "redriven": n})).into_response())
}

fn secs(ms: UnixMillis) -> i64 {
    ms.div_euclid(1_000)
}

fn render(w: &Webhook) -> Value {
    json!({
        "id": w.id,
        "object": "webhook",
        "url": w.url,
        "events": w.events,
        "team_id": w.team_id.as_ref().map(|t| &t.0),
        "shaper_policy": w.shaper,
        "description": w.description,
        "created_at": secs(w.created_at),
    })
}

fn render_delivery(d: &Delivery) -> Value {
    let attempts: Vec<Value> = d
        .log
        .iter()
        .map(|a| {
            json!({
                "at": a.at,
                "duration_ms": a.duration_ms,
                "status": a.status,
                "error": a.error,
            })
        })
        .collect();
    json!({
        "seq": d.seq,
        "object": "webhook.delivery",
        "event_id": d.event_id,
        "event": d.kind,
        "state": d.state.as_str(),
        "attempts": d.attempts,
        "created_at": d.created_at,
        "next_attempt_at": (d.state == DeliveryState::Pending).then_some(d.next_attempt_at),
        "done_at": d.done_at,
        "last_status": d.last_status,
        "last_error": d.last_error,
        "payload": serde_json::from_str::<Value>(&d.payload).unwrap_or(Value::Null),
        "attempt_log": attempts,
    })
}

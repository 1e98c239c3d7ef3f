//! This replica's recent model traffic (admin and auditor; no team's data in it), from the
//! per-minute ring of `metrics::recent`: `GET /v1/admin/traffic` (requests, error rate, latency
//! and time to first token per minute, for all models or one) and `GET /v1/admin/models` (every
//! configured model with its region, locality, circuit breaker and the last minutes' figures).
//! One replica's view; Prometheus (`/metrics`) is the fleet-wide one (docs/DECISIONS.md).

use std::time::Instant;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::metrics::recent::{MINUTES, Summary};
use crate::server::error::ApiError;
use crate::server::params::{self, Query};
use crate::state::AppState;

/// The window when the caller names none.
const DEFAULT_MINUTES: usize = 60;
/// The models page's window.
const HEALTH_MINUTES: usize = 15;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficQuery {
    /// 1…360 (default 60).
    minutes: Option<String>,
    /// One configured model's rows; all models without it.
    model: Option<String>,
}

pub async fn traffic(
    State(app): State<AppState>,
    Query(q): Query<TrafficQuery>,
) -> Result<Response, ApiError> {
    // This replica keeps MINUTES: a longer window is refused, not cut short.
    let minutes = match q.minutes.as_deref() {
        None => DEFAULT_MINUTES,
        Some(s) => params::count("minutes", s, MINUTES)?,
    };
    let recent = &app.metrics().recent;
    let series = recent.series(q.model.as_deref(), minutes).ok_or_else(|| {
        ApiError::invalid(
            "model",
            format!(
                "`model` must be a configured model ({}).",
                recent.models().join(", ")
            ),
        )
    })?;
    let mut total = Summary::default();
    let data: Vec<Value> = series
        .iter()
        .map(|(start, s)| {
            total.add(s);
            figures(json!({"minute": start}), s)
        })
        .collect();
    Ok(Json(json!({
        "object": "traffic",
        "replica": app.config().sovereign_id,
        "model": q.model,
        "minutes": minutes,
        "retained_minutes": MINUTES,
        "data": data,
        "total": figures(json!({}), &total),
    }))
    .into_response())
}

/// `GET /v1/admin/models`: the configured models as the gateway sees them now.
pub async fn models(State(app): State<AppState>) -> Result<Response, ApiError> {
    let now = Instant::now();
    let recent = &app.metrics().recent;
    let data: Vec<Value> = app
        .config()
        .models
        .iter()
        .map(|m| {
            let mut s = Summary::default();
            for (_, x) in recent
                .series(Some(&m.id.0), HEALTH_MINUTES)
                .unwrap_or_default()
            {
                s.add(&x);
            }
            let breaker = app.health().breaker(&m.id.0, now).unwrap_or("closed");
            figures(
                json!({
                    "id": m.id.0,
                    "object": "model_health",
                    "kind": m.kind.as_str(),
                    "family": m.family,
                    "region": m.region,
                    "local": m.local,
                    "fallbacks": m.fallbacks.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
                    "breaker": breaker,
                    "in_rotation": app.health().healthy(&m.id.0, now),
                }),
                &s,
            )
        })
        .collect();
    Ok(Json(json!({
        "object": "list",
        "replica": app.config().sovereign_id,
        "minutes": HEALTH_MINUTES,
        "data": data,
    }))
    .into_response())
}

/// `base` with a summary's figures: counts, error rate, latency and TTFT quantiles (ms).
fn figures(mut base: Value, s: &Summary) -> Value {
    let round = |v: Option<f64>| v.map(|x| (x * 100.0).round() / 100.0);
    base["requests"] = json!(s.requests);
    base["client_errors"] = json!(s.client_errors);
    base["server_errors"] = json!(s.server_errors);
    base["error_rate"] = json!(s.error_rate().map(|r| (r * 10_000.0).round() / 10_000.0));
    base["latency_ms"] = json!({
        "mean": round(s.mean_latency_ms()),
        "p50": round(s.latency_ms(0.5)),
        "p95": round(s.latency_ms(0.95)),
    });
    base["streams"] = json!(s.first_tokens);
    base["ttft_ms"] = json!({
        "mean": round(s.mean_first_token_ms()),
        "p50": round(s.first_token_ms(0.5)),
        "p95": round(s.first_token_ms(0.95)),
    });
    base
}

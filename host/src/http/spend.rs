//! What a request costs, for the handlers: who it is charged to (the actor), the reservation
//! made at admission (the worst case, refused with 429 `insufficient_quota` when a budget cannot
//! cover it) and the token counts it settles at when the upstream reports no usage.

use std::sync::Arc;

use http::HeaderMap;
use serde_json::{Map, Value};

use super::audit::X_ACTOR_ID;
use super::error::ApiError;
use super::{AppState, RequestCtx};
use crate::auth::Principal;
use crate::budget::{BudgetError, ChargeTo, Reservation, cost};
use crate::config::ModelConfig;
use crate::metrics::Metrics;
use crate::store::{KeyId, TeamId};

/// Who the request is for: the body's `user`, else the `X-Actor-ID` header, else the key.
pub fn actor(body: &Map<String, Value>, headers: &HeaderMap, principal: &Principal) -> String {
    let from_body = body.get("user").and_then(Value::as_str);
    let from_header = headers.get(X_ACTOR_ID).and_then(|v| v.to_str().ok());
    match from_body.or(from_header).map(str::trim) {
        Some(a) if !a.is_empty() => a.chars().take(256).collect(),
        _ => principal.key_id.clone(),
    }
}

/// Completion tokens a chat request may produce at most: its `max_completion_tokens` or
/// `max_tokens` (else the configured default), times `n`.
pub fn max_completion_tokens(body: &Map<String, Value>, default: u32) -> u64 {
    let max = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(default));
    let n = body.get("n").and_then(Value::as_u64).unwrap_or(1).max(1);
    max.saturating_mul(n)
}

/// Reserves the worst case of this request on its team's and key's budgets.
pub async fn reserve(
    app: &AppState,
    ctx: &RequestCtx,
    principal: &Principal,
    actor: String,
    model: &Arc<ModelConfig>,
    prompt_tokens: u64,
    max_out: u64,
) -> Result<Reservation, ApiError> {
    let to = ChargeTo {
        team_id: TeamId(principal.team_id.clone()),
        key_id: KeyId(principal.key_id.clone()),
        actor,
        request_id: ctx.id.to_string(),
        model: model.clone(),
    };
    let amount = cost(model, prompt_tokens, max_out);
    app.0
        .budgets
        .reserve(to, prompt_tokens, amount)
        .await
        .map_err(|e| {
            if matches!(e, BudgetError::Insufficient(_)) {
                Metrics::inc(&app.0.metrics.budget_refused_total);
            }
            ApiError::from(e)
        })
}

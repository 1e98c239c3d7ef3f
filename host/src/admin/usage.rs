//! `GET /v1/admin/usage` (admin, or an auditor for its own team): requests, tokens and spend per
//! key, model and actor (and UTC day with `group_by=day`; per key alone, spend by key, with
//! `group_by=key`), filtered by team, key, model and time. Pending charges are flushed first, so
//! a request that completed before this call is in the answer.

use std::sync::Arc;

use crate::server::params::Query;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;

use crate::access::Principal;
use crate::budget::units;
use crate::domain::Role;
use crate::server::error::ApiError;
use crate::server::params;
use crate::state::AppState;
use crate::store::{KeyId, TeamId, UsageFilter, UsageRow};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageQuery {
    team_id: Option<String>,
    key_id: Option<String>,
    model: Option<String>,
    from: Option<String>,
    to: Option<String>,
    /// `day`: each row also per UTC day (`day`, Unix seconds of its start); `key`: one row per
    /// key (models and actors summed: `model` and `actor_id` null).
    group_by: Option<String>,
}

pub async fn usage(
    State(app): State<AppState>,
    Extension(principal): Extension<Arc<Principal>>,
    Query(q): Query<UsageQuery>,
) -> Result<Response, ApiError> {
    let mut team_id = q.team_id.map(TeamId);
    if principal.role != Role::Admin {
        // An auditor reads its own team's usage only.
        match &team_id {
            Some(t) if t.0 != principal.team_id => {
                return Err(ApiError::forbidden(
                    "An auditor key reads its own team's usage only.",
                ));
            }
            _ => team_id = Some(TeamId(principal.team_id.clone())),
        }
    }
    let (by_day, by_key) = match q.group_by.as_deref() {
        None => (false, false),
        Some("day") => (true, false),
        Some("key") => (false, true),
        Some(_) => {
            return Err(ApiError::invalid(
                "group_by",
                "`group_by` must be `day` (rows per key, model and actor, each UTC day apart) or `key` (one row per key).",
            ));
        }
    };
    let filter = UsageFilter {
        by_day,
        team_id,
        key_id: q.key_id.map(KeyId),
        model: q.model,
        from: q
            .from
            .as_deref()
            .map(|t| params::instant("from", t))
            .transpose()?,
        to: q
            .to
            .as_deref()
            .map(|t| params::instant("to", t))
            .transpose()?,
    };
    app.budgets().charger().flush().await;
    let mut rows = app.usage(filter).await?;
    if by_key {
        rows = per_key(rows);
    }
    let (mut requests, mut tin, mut tout, mut spend) = (0u64, 0u64, 0u64, 0i64);
    let data: Vec<_> = rows
        .iter()
        .map(|r| {
            requests += r.requests;
            tin += r.tokens_in;
            tout += r.tokens_out;
            spend += r.spend;
            let mut row = json!({
                "team_id": r.team_id.0,
                "key_id": r.key_id.0,
                "model": (!by_key).then_some(&r.model),
                "actor_id": (!by_key).then_some(&r.actor),
                "requests": r.requests,
                "tokens_in": r.tokens_in,
                "tokens_out": r.tokens_out,
                "spend": units(r.spend),
            });
            if let Some(day) = r.day {
                row["day"] = json!(day / 1000);
            }
            row
        })
        .collect();
    Ok(Json(json!({
        "object": "list",
        "currency": app.budgets().currency(),
        "data": data,
        "total": {"requests": requests, "tokens_in": tin, "tokens_out": tout, "spend": units(spend)},
    }))
    .into_response())
}

/// One row per key: its models' and actors' rows summed, the biggest spender first.
fn per_key(rows: Vec<UsageRow>) -> Vec<UsageRow> {
    let mut out: Vec<UsageRow> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for r in rows {
        match at.get(&r.key_id.0).map(|&i| &mut out[i]) {
            Some(o) => {
                o.requests += r.requests;
                o.tokens_in += r.tokens_in;
                o.tokens_out += r.tokens_out;
                o.spend += r.spend;
            }
            None => {
                at.insert(r.key_id.0.clone(), out.len());
                out.push(UsageRow {
                    model: String::new(),
                    actor: String::new(),
                    ..r
                });
            }
        }
    }
    out.sort_by(|a, b| b.spend.cmp(&a.spend).then(b.requests.cmp(&a.requests)));
    out
}

//! `/v1/admin/keys` (admin): create (the secret is in that answer only), list (searched by name,
//! id or prefix, paged) and read (never the secret), change its limits, rotate (a successor; the old key works for a grace period) and revoke (when the
//! call returns, the key no longer authenticates: `crate::services::Keys`). Parse, call, render.

use crate::server::params::Query;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::bad_type;
use crate::access::bootstrap::CONFIG_KEY_PREFIX;
use crate::budget::units;
use crate::domain::Role;
use crate::server::error::ApiError;
use crate::server::{body, params};
use crate::state::AppState;
use crate::store::{BudgetScope, KeyInfo, KeyLimits, NewKey, TeamId};

/// Most CIDRs in one key's allow-list.
const MAX_ALLOWLIST: usize = 256;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    team_id: String,
    #[serde(default)]
    name: Option<String>,
    role: Role,
    #[serde(default)]
    expires_at: Option<Value>,
    #[serde(default)]
    ip_allowlist: Vec<String>,
    #[serde(default)]
    rpm: Option<u32>,
    #[serde(default)]
    tpd: Option<u64>,
    #[serde(default)]
    budget: Option<f64>,
}

pub async fn create(
    State(app): State<AppState>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let c: Create = body::read_json(&headers, req, &app.config().server, "key").await?;
    if c.ip_allowlist.len() > MAX_ALLOWLIST {
        return Err(ApiError::invalid(
            "ip_allowlist",
            format!("At most {MAX_ALLOWLIST} entries."),
        ));
    }
    for (i, cidr) in c.ip_allowlist.iter().enumerate() {
        if crate::config::parse_cidr(cidr).is_none() {
            return Err(ApiError::invalid(
                &format!("ip_allowlist[{i}]"),
                format!("`{cidr}` is not an IPv4/IPv6 address or CIDR such as 10.0.0.0/8."),
            ));
        }
    }
    let expires_at = c
        .expires_at
        .as_ref()
        .filter(|v| !v.is_null())
        .map(|v| params::instant_value("expires_at", v))
        .transpose()?;
    if c.rpm == Some(0) {
        return Err(ApiError::invalid(
            "rpm",
            "`rpm` must be at least 1 (omit it for the plan's).",
        ));
    }
    let new = NewKey {
        team_id: TeamId(c.team_id),
        name: c.name,
        role: c.role,
        expires_at,
        ip_allowlist: c.ip_allowlist,
        rpm: c.rpm,
        tpd: c.tpd,
        budget: c.budget.map(|b| params::money("budget", b)).transpose()?,
    };
    let created = app.keys().create(new).await?;
    let mut v = render(&app, &created.info).await?;
    v["key"] = Value::String(created.secret);
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

/// Most keys in one page.
const MAX_PAGE: usize = 1000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    team_id: Option<String>,
    /// Keys whose name, id or prefix contains this (any case).
    q: Option<String>,
    /// At most this many keys (1…1000); without it, every key that matches.
    limit: Option<String>,
    /// The page starts after this key id (the previous page's `last_id`).
    after: Option<String>,
}

/// Keys oldest first (the store's order), filtered by `q`, from `after`, at most `limit`; the
/// answer says whether more follow (`has_more`) and where the next page starts (`last_id`).
pub async fn list(
    State(app): State<AppState>,
    Query(q): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let limit = match q.limit.as_deref() {
        None => MAX_PAGE,
        Some(s) => params::count("limit", s, MAX_PAGE)?,
    };
    let needle =
        q.q.as_deref()
            .map(str::to_lowercase)
            .filter(|s| !s.is_empty());
    let keys: Vec<KeyInfo> = app
        .keys()
        .list(q.team_id.map(TeamId))
        .await?
        .into_iter()
        .filter(|k| needle.as_deref().is_none_or(|n| matches(k, n)))
        .collect();
    let start = match q.after.as_deref() {
        None => 0,
        Some(a) => match keys.iter().position(|k| k.id.0 == a) {
            Some(i) => i + 1,
            None => {
                return Err(ApiError::invalid(
                    "after",
                    format!(
                        "`after` must be a key id from an earlier page of this search; `{a}` is not in it."
                    ),
                ));
            }
        },
    };
    let page = &keys[start..keys.len().min(start.saturating_add(limit))];
    let has_more = start + page.len() < keys.len();
    let mut data = Vec::with_capacity(page.len());
    for k in page {
        data.push(render(&app, k).await?);
    }
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "first_id": page.first().map(|k| k.id.0.clone()),
        "last_id": page.last().map(|k| k.id.0.clone()),
        "has_more": has_more,
        "total": keys.len(),
    }))
    .into_response())
}

/// Whether a key's name, id or prefix holds `needle` (already lower case).
fn matches(k: &KeyInfo, needle: &str) -> bool {
    [k.name.as_deref().unwrap_or(""), &k.id.0, &k.prefix]
        .iter()
        .any(|s| s.to_lowercase().contains(needle))
}

/// `PATCH /v1/admin/keys/{id}`: the key's limits (`rpm`, `tpd`, `budget`; `null` clears one);
/// the fields given change, the others stay.
pub async fn update(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let map = body::read_json_object(&headers, req, &app.config().server).await?;
    let mut l = KeyLimits::default();
    for (k, v) in map {
        match (k.as_str(), v) {
            ("rpm" | "tpd" | "budget", Value::Null) => match k.as_str() {
                "rpm" => l.rpm = Some(None),
                "tpd" => l.tpd = Some(None),
                _ => l.budget = Some(None),
            },
            ("rpm", Value::Number(n)) => match n.as_u64().and_then(|v| u32::try_from(v).ok()) {
                Some(v) if v >= 1 => l.rpm = Some(Some(v)),
                _ => {
                    return Err(bad_type(
                        "rpm",
                        "an integer of at least 1, or null (the plan's)",
                    ));
                }
            },
            ("tpd", Value::Number(n)) => match n.as_u64() {
                Some(v) if v >= 1 => l.tpd = Some(Some(v)),
                _ => {
                    return Err(bad_type(
                        "tpd",
                        "an integer of at least 1, or null (the plan's)",
                    ));
                }
            },
            ("budget", Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(f64::NAN);
                l.budget = Some(Some(params::money("budget", v)?));
            }
            ("rpm" | "tpd", _) => return Err(bad_type(&k, "an integer or null")),
            ("budget", _) => return Err(bad_type(&k, "a number or null")),
            _ => {
                return Err(ApiError::invalid(
                    &k,
                    format!("Unknown field `{k}`: a key's limits are rpm, tpd and budget."),
                ));
            }
        }
    }
    let info = app.keys().update_limits(id, l).await?;
    Ok(Json(render(&app, &info).await?).into_response())
}

pub async fn get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let key = app.keys().get(&id).await?;
    Ok(Json(render(&app, &key).await?).into_response())
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Rotate {
    /// Seconds the old key keeps working; default `access.rotation_grace_seconds`.
    #[serde(default)]
    grace_seconds: Option<u64>,
}

pub async fn rotate(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let r: Rotate =
        body::read_json_or_default(&headers, req, &app.config().server, "rotation").await?;
    let rotated = app.keys().rotate(id, r.grace_seconds).await?;
    let mut v = render(&app, &rotated.created.info).await?;
    v["key"] = Value::String(rotated.created.secret);
    v["replaces"] = Value::String(rotated.old_id.0);
    if let Some(old) = rotated.old {
        v["replaced_key"] = render(&app, &old).await?;
    }
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

pub async fn revoke(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let info = app.keys().revoke(id).await?;
    Ok(Json(render(&app, &info).await?).into_response())
}

/// A key as the API shows it: everything but the secret and its hash.
async fn render(app: &AppState, k: &KeyInfo) -> Result<Value, ApiError> {
    let b = app.budgets().state(&BudgetScope::Key(k.id.clone())).await?;
    let secs = |ms: Option<i64>| ms.map(|m| m / 1000);
    Ok(json!({
        "id": k.id.0,
        "object": "api_key",
        "team_id": k.team_id.0,
        "name": k.name,
        "prefix": k.prefix,
        // Declared in the config file (revoked at start once the file no longer has it), or
        // made through this API.
        "source": if k.prefix == CONFIG_KEY_PREFIX { "config" } else { "api" },
        "role": k.role.as_str(),
        "state": k.state.as_str(),
        "created_at": k.created_at / 1000,
        "last_used_at": secs(k.last_used_at),
        "expires_at": secs(k.expires_at),
        "revoked_at": secs(k.revoked_at),
        "rotated_to": k.rotated_to.as_ref().map(|r| r.0.clone()),
        "grace_until": secs(k.grace_until),
        "ip_allowlist": k.ip_allowlist,
        "rpm": k.rpm,
        "tpd": k.tpd,
        "budget": k.budget.map(units),
        "spend": super::teams::budget_json(app, b),
    }))
}

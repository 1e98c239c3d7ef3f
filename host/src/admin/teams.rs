//! `/v1/admin/teams` (admin): create, list, read, change and delete teams
//! (`crate::services::Teams`). Money is in currency units in requests and answers (micros
//! inside); a team's budget counters come with it.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::bad_type;
use crate::budget::units;
use crate::server::error::ApiError;
use crate::server::{body, params};
use crate::state::AppState;
use crate::store::{BudgetScope, NewTeam, Plan, Team, TeamPatch};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    name: String,
    #[serde(default)]
    plan: Option<String>,
    #[serde(default)]
    budget: Option<f64>,
    #[serde(default)]
    token_cap_per_day: Option<u64>,
    #[serde(default)]
    allowed_regions: Vec<String>,
    #[serde(default)]
    sensitive_only: bool,
    #[serde(default)]
    allowed_models: Vec<String>,
}

fn plan(v: &str) -> Result<Plan, ApiError> {
    Plan::parse(v).ok_or_else(|| {
        ApiError::invalid(
            "plan",
            "`plan` must be `development`, `professional` or `enterprise`.",
        )
    })
}

/// At most 256 model ids, each of the shape the config's are (`config::check_model_id`).
fn models(v: Vec<String>) -> Result<Vec<String>, ApiError> {
    names(
        "allowed_models",
        v,
        256,
        "model ids",
        crate::config::check_model_id,
    )
}

/// At most 64 region names, each of the shape the config's are (`config::check_region`).
fn regions(v: Vec<String>) -> Result<Vec<String>, ApiError> {
    names(
        "allowed_regions",
        v,
        64,
        "region names",
        crate::config::check_region,
    )
}

fn names(
    param: &str,
    v: Vec<String>,
    max: usize,
    what: &str,
    check: fn(&str) -> Result<(), String>,
) -> Result<Vec<String>, ApiError> {
    if v.len() > max {
        return Err(ApiError::invalid(
            param,
            format!("`{param}` must be at most {max} {what}."),
        ));
    }
    for (i, name) in v.iter().enumerate() {
        check(name).map_err(|e| ApiError::invalid(param, format!("`{param}[{i}]` {e}.")))?;
    }
    Ok(v)
}

pub async fn create(
    State(app): State<AppState>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let c: Create = body::read_json(&headers, req, &app.config().server, "team").await?;
    let new = NewTeam {
        id: None,
        name: c.name,
        plan: c.plan.as_deref().map(plan).transpose()?.unwrap_or_default(),
        budget: c.budget.map(|b| params::money("budget", b)).transpose()?,
        token_cap_per_day: c.token_cap_per_day,
        allowed_regions: regions(c.allowed_regions)?,
        sensitive_only: c.sensitive_only,
        allowed_models: models(c.allowed_models)?,
    };
    let team = app.teams().create(new).await?;
    Ok((StatusCode::CREATED, Json(render(&app, &team).await?)).into_response())
}

pub async fn list(State(app): State<AppState>) -> Result<Response, ApiError> {
    let mut data = Vec::new();
    for t in app.teams().list().await? {
        data.push(render(&app, &t).await?);
    }
    Ok(Json(json!({"object": "list", "data": data})).into_response())
}

pub async fn get(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let team = app.teams().get(&id).await?;
    Ok(Json(render(&app, &team).await?).into_response())
}

/// `PATCH`: fields present are changed; `null` clears `budget` and `token_cap_per_day`.
pub async fn update(
    State(app): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    req: Body,
) -> Result<Response, ApiError> {
    let map = body::read_json_object(&headers, req, &app.config().server).await?;
    let team = app.teams().update(id, patch(map)?).await?;
    Ok(Json(render(&app, &team).await?).into_response())
}

pub async fn delete(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = app.teams().delete(&id).await?;
    Ok(Json(json!({"id": id.0, "object": "team", "deleted": true})).into_response())
}

fn patch(map: Map<String, Value>) -> Result<TeamPatch, ApiError> {
    let mut p = TeamPatch::default();
    for (k, v) in map {
        match (k.as_str(), v) {
            ("name", Value::String(s)) => p.name = Some(s),
            ("plan", Value::String(s)) => p.plan = Some(plan(&s)?),
            ("budget", Value::Null) => p.budget = Some(None),
            ("budget", Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(f64::NAN);
                p.budget = Some(Some(params::money("budget", v)?));
            }
            ("token_cap_per_day", Value::Null) => p.token_cap_per_day = Some(None),
            ("token_cap_per_day", Value::Number(n)) => match n.as_u64() {
                Some(v) => p.token_cap_per_day = Some(Some(v)),
                None => return Err(bad_type("token_cap_per_day", "a non-negative integer")),
            },
            ("allowed_regions", Value::Array(a)) => {
                let list = a
                    .into_iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s),
                        _ => Err(bad_type("allowed_regions", "a list of strings")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                p.allowed_regions = Some(regions(list)?);
            }
            ("sensitive_only", Value::Bool(b)) => p.sensitive_only = Some(b),
            ("allowed_models", Value::Array(a)) => {
                let list = a
                    .into_iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s),
                        _ => Err(bad_type("allowed_models", "a list of model ids")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                p.allowed_models = Some(models(list)?);
            }
            ("allowed_models", _) => return Err(bad_type(&k, "a list of model ids")),
            ("sensitive_only", _) => return Err(bad_type(&k, "true or false")),
            ("name" | "plan", _) => return Err(bad_type(&k, "a string")),
            ("budget", _) => return Err(bad_type(&k, "a number or null")),
            ("token_cap_per_day", _) => return Err(bad_type(&k, "an integer or null")),
            ("allowed_regions", _) => return Err(bad_type(&k, "a list of strings")),
            _ => {
                return Err(ApiError::invalid(
                    &k,
                    format!(
                        "Unknown field `{k}`: a team has name, plan, budget, token_cap_per_day, allowed_regions, sensitive_only, allowed_models."
                    ),
                ));
            }
        }
    }
    Ok(p)
}

/// A team as the API shows it, with its budget counters.
async fn render(app: &AppState, t: &Team) -> Result<Value, ApiError> {
    let b = app
        .budgets()
        .state(&BudgetScope::Team(t.id.clone()))
        .await?;
    Ok(json!({
        "id": t.id.0,
        "object": "team",
        "name": t.name,
        "plan": t.plan.as_str(),
        "budget": t.budget.map(units),
        "token_cap_per_day": t.token_cap_per_day,
        "allowed_regions": t.allowed_regions,
        "sensitive_only": t.sensitive_only,
        "allowed_models": t.allowed_models,
        "spend": budget_json(app, b),
        "created_at": t.created_at / 1000,
        "updated_at": t.updated_at / 1000,
    }))
}

/// Budget counters in currency units.
pub(super) fn budget_json(app: &AppState, b: Option<crate::store::BudgetState>) -> Value {
    let b = b.unwrap_or(crate::store::BudgetState {
        limit: None,
        spent: 0,
        reserved: 0,
    });
    json!({
        "currency": app.budgets().currency(),
        "limit": b.limit.map(units),
        "spent": units(b.spent),
        "reserved": units(b.reserved),
        "remaining": b.remaining().map(|r| units(r.max(0))),
    })
}

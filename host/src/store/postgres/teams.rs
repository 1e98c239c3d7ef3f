//! Teams in PostgreSQL: rows of `teams`, with the team's budget limit kept in its `budgets`
//! counter row (`team:<id>`) so the limit and the counters change in the same transaction.

use deadpool_postgres::{GenericClient, Object};
use tokio_postgres::Row;

use super::{execute, query, query_opt};
use crate::store::rules::{
    check_budget, check_name, check_team_id, from_json, new_id, opt_i64_of, to_json,
};
use crate::store::{NewTeam, Plan, StoreError, StoreResult, Team, TeamId, TeamPatch, UnixMillis};

const SELECT: &str = "SELECT t.id, t.name, t.plan, b.limit_micros, t.token_cap_per_day,
        t.allowed_regions, t.created_at, t.updated_at, t.sensitive_only, t.allowed_models
    FROM teams t LEFT JOIN budgets b ON b.scope = 'team:' || t.id";

fn row(r: &Row) -> StoreResult<Team> {
    let plan: String = r.try_get(2)?;
    let cap: Option<i64> = r.try_get(4)?;
    let regions: String = r.try_get(5)?;
    let models: String = r.try_get(9)?;
    Ok(Team {
        id: TeamId(r.try_get(0)?),
        name: r.try_get(1)?,
        plan: Plan::parse(&plan).unwrap_or_default(),
        budget: r.try_get(3)?,
        token_cap_per_day: cap.and_then(|c| u64::try_from(c).ok()),
        allowed_regions: from_json(&regions, "teams.allowed_regions")?,
        sensitive_only: r.try_get(8)?,
        allowed_models: from_json(&models, "teams.allowed_models")?,
        created_at: r.try_get(6)?,
        updated_at: r.try_get(7)?,
    })
}

pub(super) async fn get<C: GenericClient>(c: &C, id: &TeamId) -> StoreResult<Option<Team>> {
    query_opt(c, &format!("{SELECT} WHERE t.id = $1"), &[&id.0])
        .await?
        .as_ref()
        .map(row)
        .transpose()
}

pub(super) async fn list<C: GenericClient>(c: &C) -> StoreResult<Vec<Team>> {
    query(c, &format!("{SELECT} ORDER BY t.created_at, t.id"), &[])
        .await?
        .iter()
        .map(row)
        .collect()
}

/// A new team and its counter row. An id that exists already fails as SQLite's does (the
/// primary key refuses it).
pub(super) async fn create(c: &mut Object, now: UnixMillis, new: NewTeam) -> StoreResult<Team> {
    check_name(&new.name)?;
    check_budget(new.budget)?;
    let id = match new.id {
        Some(id) => {
            check_team_id(&id.0)?;
            id
        }
        None => TeamId(new_id("team_")),
    };
    let cap = opt_i64_of(new.token_cap_per_day, "token_cap_per_day")?;
    let regions = to_json(&new.allowed_regions)?;
    let models = to_json(&new.allowed_models)?;
    let tx = c.transaction().await?;
    execute(
        &tx,
        "INSERT INTO teams (id, name, plan, token_cap_per_day, allowed_regions, created_at,
             updated_at, sensitive_only, allowed_models)
         VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8)",
        &[
            &id.0,
            &new.name,
            &new.plan.as_str(),
            &cap,
            &regions,
            &now,
            &new.sensitive_only,
            &models,
        ],
    )
    .await?;
    execute(
        &tx,
        "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || $1::TEXT, $2)",
        &[&id.0, &new.budget],
    )
    .await?;
    let team = get(&tx, &id)
        .await?
        .ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(team)
}

pub(super) async fn update(
    c: &mut Object,
    now: UnixMillis,
    id: TeamId,
    patch: TeamPatch,
) -> StoreResult<Team> {
    if let Some(name) = &patch.name {
        check_name(name)?;
    }
    if let Some(budget) = patch.budget {
        check_budget(budget)?;
    }
    let tx = c.transaction().await?;
    // Locked so two updates apply one after the other (neither undoes the other's fields);
    // `NO KEY`: new keys of the team are not held up.
    let mut team = query_opt(
        &tx,
        &format!("{SELECT} WHERE t.id = $1 FOR NO KEY UPDATE OF t"),
        &[&id.0],
    )
    .await?
    .as_ref()
    .map(row)
    .transpose()?
    .ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    if let Some(name) = patch.name {
        team.name = name;
    }
    if let Some(plan) = patch.plan {
        team.plan = plan;
    }
    if let Some(cap) = patch.token_cap_per_day {
        team.token_cap_per_day = cap;
    }
    if let Some(regions) = patch.allowed_regions {
        team.allowed_regions = regions;
    }
    if let Some(sensitive_only) = patch.sensitive_only {
        team.sensitive_only = sensitive_only;
    }
    if let Some(models) = patch.allowed_models {
        team.allowed_models = models;
    }
    execute(
        &tx,
        "UPDATE teams SET name = $2, plan = $3, token_cap_per_day = $4, allowed_regions = $5,
             updated_at = $6, sensitive_only = $7, allowed_models = $8
         WHERE id = $1",
        &[
            &id.0,
            &team.name,
            &team.plan.as_str(),
            &opt_i64_of(team.token_cap_per_day, "token_cap_per_day")?,
            &to_json(&team.allowed_regions)?,
            &now,
            &team.sensitive_only,
            &to_json(&team.allowed_models)?,
        ],
    )
    .await?;
    if let Some(budget) = patch.budget {
        // The counters stay: lowering a limit below what is spent blocks new reservations.
        execute(
            &tx,
            "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || $1::TEXT, $2)
             ON CONFLICT (scope) DO UPDATE SET limit_micros = excluded.limit_micros",
            &[&id.0, &budget],
        )
        .await?;
    }
    let team = get(&tx, &id)
        .await?
        .ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(team)
}

/// The counter rows of team `$1` and of its keys.
const SCOPES: &str = "scope = 'team:' || $1::TEXT
    OR scope IN (SELECT 'key:' || id FROM keys WHERE team_id = $1)";

pub(super) async fn delete(c: &mut Object, id: &TeamId) -> StoreResult<bool> {
    let tx = c.transaction().await?;
    // The team row first (a key being created for it waits, then finds no team), then its and
    // its keys' counter rows in scope order, as every budget change takes them.
    query(
        &tx,
        "SELECT 1 FROM teams WHERE id = $1 FOR UPDATE",
        &[&id.0],
    )
    .await?;
    query(
        &tx,
        &format!("SELECT scope FROM budgets WHERE {SCOPES} ORDER BY scope FOR UPDATE"),
        &[&id.0],
    )
    .await?;
    execute(
        &tx,
        &format!("DELETE FROM budgets WHERE {SCOPES}"),
        &[&id.0],
    )
    .await?;
    // Keys, certificate identities and stored responses go with the team (ON DELETE CASCADE).
    let n = execute(&tx, "DELETE FROM teams WHERE id = $1", &[&id.0]).await?;
    tx.commit().await?;
    Ok(n > 0)
}

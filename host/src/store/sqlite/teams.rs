//! Teams in SQLite: rows of `teams`, with the team's budget limit kept in its `budgets` counter
//! row (`team:<id>`) so the limit and the counters are changed in the same transaction.

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::{from_json, opt_i64_of, to_json};
use crate::store::rules::{check_budget, check_name, check_team_id, new_id};
use crate::store::{NewTeam, Plan, StoreError, StoreResult, Team, TeamId, TeamPatch, UnixMillis};

const SELECT: &str = "SELECT t.id, t.name, t.plan, b.limit_micros, t.token_cap_per_day,
        t.allowed_regions, t.created_at, t.updated_at, t.sensitive_only, t.allowed_models
    FROM teams t LEFT JOIN budgets b ON b.scope = 'team:' || t.id";

fn row(r: &Row<'_>) -> rusqlite::Result<(Team, String, String)> {
    let plan: String = r.get(2)?;
    let cap: Option<i64> = r.get(4)?;
    let regions: String = r.get(5)?;
    let models: String = r.get(9)?;
    Ok((
        Team {
            id: TeamId(r.get(0)?),
            name: r.get(1)?,
            plan: Plan::parse(&plan).unwrap_or_default(),
            budget: r.get(3)?,
            token_cap_per_day: cap.and_then(|c| u64::try_from(c).ok()),
            allowed_regions: Vec::new(),
            sensitive_only: r.get::<_, i64>(8)? != 0,
            allowed_models: Vec::new(),
            created_at: r.get(6)?,
            updated_at: r.get(7)?,
        },
        regions,
        models,
    ))
}

fn finish((mut team, regions, models): (Team, String, String)) -> StoreResult<Team> {
    team.allowed_regions = from_json(&regions, "teams.allowed_regions")?;
    team.allowed_models = from_json(&models, "teams.allowed_models")?;
    Ok(team)
}

pub(super) fn get(conn: &Connection, id: &TeamId) -> StoreResult<Option<Team>> {
    let found = conn
        .prepare_cached(&format!("{SELECT} WHERE t.id = ?1"))?
        .query_row([&id.0], row)
        .optional()?;
    found.map(finish).transpose()
}

pub(super) fn list(conn: &Connection) -> StoreResult<Vec<Team>> {
    let mut st = conn.prepare_cached(&format!("{SELECT} ORDER BY t.created_at, t.id"))?;
    let rows = st.query_map([], row)?;
    rows.map(|r| finish(r?)).collect()
}

pub(super) fn create(conn: &mut Connection, now: UnixMillis, new: NewTeam) -> StoreResult<Team> {
    check_name(&new.name)?;
    check_budget(new.budget)?;
    let id = match new.id {
        Some(id) => {
            check_team_id(&id.0)?;
            id
        }
        None => TeamId(new_id("team_")),
    };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "INSERT INTO teams (id, name, plan, token_cap_per_day, allowed_regions, created_at,
             updated_at, sensitive_only, allowed_models)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)",
        params![
            id.0,
            new.name,
            new.plan.as_str(),
            opt_i64_of(new.token_cap_per_day, "token_cap_per_day")?,
            to_json(&new.allowed_regions)?,
            now,
            i64::from(new.sensitive_only),
            to_json(&new.allowed_models)?
        ],
    )?;
    tx.execute(
        "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || ?1, ?2)",
        params![id.0, new.budget],
    )?;
    let team = get(&tx, &id)?.ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    tx.commit()?;
    Ok(team)
}

pub(super) fn update(
    conn: &mut Connection,
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
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut team = get(&tx, &id)?.ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
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
    tx.execute(
        "UPDATE teams SET name = ?2, plan = ?3, token_cap_per_day = ?4, allowed_regions = ?5,
             updated_at = ?6, sensitive_only = ?7, allowed_models = ?8
         WHERE id = ?1",
        params![
            id.0,
            team.name,
            team.plan.as_str(),
            opt_i64_of(team.token_cap_per_day, "token_cap_per_day")?,
            to_json(&team.allowed_regions)?,
            now,
            i64::from(team.sensitive_only),
            to_json(&team.allowed_models)?
        ],
    )?;
    if let Some(budget) = patch.budget {
        // The counters stay: lowering a limit below what is spent blocks new reservations.
        tx.execute(
            "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || ?1, ?2)
             ON CONFLICT (scope) DO UPDATE SET limit_micros = excluded.limit_micros",
            params![id.0, budget],
        )?;
    }
    let team = get(&tx, &id)?.ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    tx.commit()?;
    Ok(team)
}

pub(super) fn delete(conn: &mut Connection, id: TeamId) -> StoreResult<bool> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "DELETE FROM budgets WHERE scope = 'team:' || ?1
            OR scope IN (SELECT 'key:' || id FROM keys WHERE team_id = ?1)",
        [&id.0],
    )?;
    // Keys go with the team (ON DELETE CASCADE).
    let n = tx.execute("DELETE FROM teams WHERE id = ?1", [&id.0])?;
    tx.commit()?;
    Ok(n > 0)
}

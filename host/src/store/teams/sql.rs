//! Teams in both dialects: rows of `teams`, with the team's budget limit kept in its `budgets`
//! counter row (`team:<id>`) so the limit and the counters change in the same transaction.
//!
//! PostgreSQL takes row locks SQLite's single writer makes moot: an update locks the team row
//! (two updates apply one after the other, neither undoing the other's fields; `NO KEY`: new
//! keys of the team are not held up), a deletion locks the team row and then its and its keys'
//! counter rows in scope order, as every budget change takes them.

use crate::store::rules::{
    check_budget, check_name, check_team_id, from_json, new_id, opt_i64_of, to_json,
};
use crate::store::sql::{Conn, Db, Row, Sql, Tx, Value};
use crate::store::{NewTeam, Plan, StoreError, StoreResult, Team, TeamId, TeamPatch, UnixMillis};

/// The columns [`row`] reads, then `$rest`.
macro_rules! select {
    ($rest:literal) => {
        concat!(
            "SELECT t.id, t.name, t.plan, b.limit_micros, t.token_cap_per_day,
                t.allowed_regions, t.created_at, t.updated_at, t.sensitive_only, t.allowed_models
            FROM teams t LEFT JOIN budgets b ON b.scope = 'team:' || t.id ",
            $rest
        )
    };
}

const GET: Sql<'static> = Sql {
    sqlite: select!("WHERE t.id = ?1"),
    postgres: select!("WHERE t.id = $1"),
};

const GET_FOR_UPDATE: Sql<'static> = Sql {
    sqlite: select!("WHERE t.id = ?1"),
    postgres: select!("WHERE t.id = $1 FOR NO KEY UPDATE OF t"),
};

const LIST: Sql<'static> = Sql {
    sqlite: select!("ORDER BY t.created_at, t.id"),
    postgres: select!("ORDER BY t.created_at, t.id"),
};

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO teams (id, name, plan, token_cap_per_day, allowed_regions, created_at,
             updated_at, sensitive_only, allowed_models)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8)",
    postgres: "INSERT INTO teams (id, name, plan, token_cap_per_day, allowed_regions, created_at,
             updated_at, sensitive_only, allowed_models)
         VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8)",
};

const INSERT_COUNTER: Sql<'static> = Sql {
    sqlite: "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || ?1, ?2)",
    postgres: "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || $1::TEXT, $2)",
};

const UPDATE: Sql<'static> = Sql {
    sqlite: "UPDATE teams SET name = ?2, plan = ?3, token_cap_per_day = ?4, allowed_regions = ?5,
             updated_at = ?6, sensitive_only = ?7, allowed_models = ?8
         WHERE id = ?1",
    postgres: "UPDATE teams SET name = $2, plan = $3, token_cap_per_day = $4, allowed_regions = $5,
             updated_at = $6, sensitive_only = $7, allowed_models = $8
         WHERE id = $1",
};

const SET_LIMIT: Sql<'static> = Sql {
    sqlite: "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || ?1, ?2)
             ON CONFLICT (scope) DO UPDATE SET limit_micros = excluded.limit_micros",
    postgres: "INSERT INTO budgets (scope, limit_micros) VALUES ('team:' || $1::TEXT, $2)
             ON CONFLICT (scope) DO UPDATE SET limit_micros = excluded.limit_micros",
};

/// The counter rows of team `$1` and of its keys.
macro_rules! pg_scopes {
    () => {
        "scope = 'team:' || $1::TEXT OR scope IN (SELECT 'key:' || id FROM keys WHERE team_id = $1)"
    };
}

const LOCK_TEAM: Sql<'static> = Sql::postgres_only("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE");

const LOCK_COUNTERS: Sql<'static> = Sql::postgres_only(concat!(
    "SELECT scope FROM budgets WHERE ",
    pg_scopes!(),
    " ORDER BY scope FOR UPDATE"
));

const DELETE_COUNTERS: Sql<'static> = Sql {
    sqlite: "DELETE FROM budgets WHERE scope = 'team:' || ?1
            OR scope IN (SELECT 'key:' || id FROM keys WHERE team_id = ?1)",
    postgres: concat!("DELETE FROM budgets WHERE ", pg_scopes!()),
};

const DELETE: Sql<'static> = Sql {
    sqlite: "DELETE FROM teams WHERE id = ?1",
    postgres: "DELETE FROM teams WHERE id = $1",
};

fn row(r: &Row) -> StoreResult<Team> {
    Ok(Team {
        id: TeamId(r.text(0)?),
        name: r.text(1)?,
        plan: Plan::parse(&r.text(2)?).unwrap_or_default(),
        budget: r.opt_i64(3)?,
        token_cap_per_day: r.opt_i64(4)?.and_then(|c| u64::try_from(c).ok()),
        allowed_regions: from_json(&r.text(5)?, "teams.allowed_regions")?,
        sensitive_only: r.bool(8)?,
        allowed_models: from_json(&r.text(9)?, "teams.allowed_models")?,
        created_at: r.i64(6)?,
        updated_at: r.i64(7)?,
    })
}

pub(crate) async fn get(db: &impl Db, id: &TeamId) -> StoreResult<Option<Team>> {
    db.query_opt(GET, &[id.0.clone().into()])
        .await?
        .as_ref()
        .map(row)
        .transpose()
}

pub(crate) async fn list(db: &impl Db) -> StoreResult<Vec<Team>> {
    db.query(LIST, &[]).await?.iter().map(row).collect()
}

/// A new team and its counter row. An id that exists already fails (the primary key refuses
/// it).
pub(crate) async fn create(c: &mut impl Conn, now: UnixMillis, new: NewTeam) -> StoreResult<Team> {
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
    let tx = c.begin().await?;
    tx.execute(
        INSERT,
        &[
            id.0.clone().into(),
            new.name.into(),
            new.plan.as_str().into(),
            cap.into(),
            regions.into(),
            now.into(),
            new.sensitive_only.into(),
            models.into(),
        ],
    )
    .await?;
    tx.execute(INSERT_COUNTER, &[id.0.clone().into(), new.budget.into()])
        .await?;
    let team = get(&tx, &id)
        .await?
        .ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(team)
}

pub(crate) async fn update(
    c: &mut impl Conn,
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
    let tx = c.begin().await?;
    let key: Value = id.0.clone().into();
    let mut team = tx
        .query_opt(GET_FOR_UPDATE, std::slice::from_ref(&key))
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
    tx.execute(
        UPDATE,
        &[
            key.clone(),
            team.name.into(),
            team.plan.as_str().into(),
            opt_i64_of(team.token_cap_per_day, "token_cap_per_day")?.into(),
            to_json(&team.allowed_regions)?.into(),
            now.into(),
            team.sensitive_only.into(),
            to_json(&team.allowed_models)?.into(),
        ],
    )
    .await?;
    if let Some(budget) = patch.budget {
        // The counters stay: lowering a limit below what is spent blocks new reservations.
        tx.execute(SET_LIMIT, &[key, budget.into()]).await?;
    }
    let team = get(&tx, &id)
        .await?
        .ok_or_else(|| StoreError::TeamNotFound(id.clone()))?;
    tx.commit().await?;
    Ok(team)
}

pub(crate) async fn delete(c: &mut impl Conn, id: &TeamId) -> StoreResult<bool> {
    let key = [Value::from(&id.0)];
    let tx = c.begin().await?;
    // The team row first (a key being created for it waits, then finds no team), then the
    // counter rows in scope order.
    tx.query(LOCK_TEAM, &key).await?;
    tx.query(LOCK_COUNTERS, &key).await?;
    tx.execute(DELETE_COUNTERS, &key).await?;
    // Keys, certificate identities and stored responses go with the team (ON DELETE CASCADE).
    let n = tx.execute(DELETE, &key).await?;
    tx.commit().await?;
    Ok(n > 0)
}

const HOLD: Sql<'static> = Sql {
    sqlite: "SELECT 1 FROM teams WHERE id = ?1",
    postgres: "SELECT 1 FROM teams WHERE id = $1 FOR KEY SHARE",
};

/// Whether the team exists (and, inside a transaction, cannot be deleted before it ends: on
/// PostgreSQL the row is share-locked as a foreign key check would; SQLite has one writer).
pub(crate) async fn hold(db: &impl Db, team: &TeamId) -> StoreResult<bool> {
    Ok(db.query_opt(HOLD, &[Value::from(&team.0)]).await?.is_some())
}

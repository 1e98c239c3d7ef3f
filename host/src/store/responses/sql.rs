//! Stored responses in both dialects: rows of `responses`, read only within their team. The
//! JSON is kept as the text it was written as (PostgreSQL's `jsonb` would reorder an object's
//! keys). A batch is written inside a charge's transaction ([`put_in`]).

use std::collections::BTreeSet;

use super::StoredResponse;
use crate::store::sql::{Db, Sql, Value};
use crate::store::teams::sql::hold;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

const GET: Sql<'static> = Sql {
    sqlite: "SELECT id, team_id, key_id, previous_id, input, response, created_at
         FROM responses WHERE id = ?1 AND team_id = ?2",
    postgres: "SELECT id, team_id, key_id, previous_id, input, response, created_at
         FROM responses WHERE id = $1 AND team_id = $2",
};

const DELETE: Sql<'static> = Sql {
    sqlite: "DELETE FROM responses WHERE id = ?1 AND team_id = ?2",
    postgres: "DELETE FROM responses WHERE id = $1 AND team_id = $2",
};

const INSERT: Sql<'static> = Sql {
    sqlite: "INSERT INTO responses (id, team_id, key_id, previous_id, input, response, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (id) DO NOTHING",
    postgres:
        "INSERT INTO responses (id, team_id, key_id, previous_id, input, response, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (id) DO NOTHING",
};

const PURGE: Sql<'static> = Sql {
    sqlite: "DELETE FROM responses WHERE created_at < ?1",
    postgres: "DELETE FROM responses WHERE created_at < $1",
};

pub(crate) async fn get(
    db: &impl Db,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<StoredResponse>> {
    let Some(r) = db
        .query_opt(GET, &[id.into(), Value::from(&team.0)])
        .await?
    else {
        return Ok(None);
    };
    let id = r.text(0)?;
    let parse = |column: usize, what: &str| -> StoreResult<serde_json::Value> {
        serde_json::from_str(&r.text(column)?)
            .map_err(|e| StoreError::Corrupt(format!("responses {id}.{what}: {e}")))
    };
    Ok(Some(StoredResponse {
        input: parse(4, "input")?,
        response: parse(5, "response")?,
        team_id: TeamId(r.text(1)?),
        key_id: r.text(2)?,
        previous_id: r.opt_text(3)?,
        created_at: r.i64(6)?,
        id,
    }))
}

pub(crate) async fn delete(db: &impl Db, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(db
        .execute(DELETE, &[id.into(), Value::from(&team.0)])
        .await?
        > 0)
}

/// Deletes responses created before `before`; how many.
pub(crate) async fn purge(db: &impl Db, before: UnixMillis) -> StoreResult<u64> {
    db.execute(PURGE, &[before.into()]).await
}

/// A batch inside the caller's transaction `tx`. A row whose team was deleted meanwhile is
/// skipped (the foreign key would fail the whole batch, and the group commit would retry it
/// forever); the teams still there are held (share-locked on PostgreSQL) in id order until the
/// commit, before any other row the transaction locks, so none goes in between.
pub(crate) async fn put_in(tx: &impl Db, batch: &[StoredResponse]) -> StoreResult<()> {
    let teams: BTreeSet<&TeamId> = batch.iter().map(|r| &r.team_id).collect();
    let mut live = BTreeSet::new();
    for team in teams {
        if hold(tx, team).await? {
            live.insert(team);
        }
    }
    for r in batch.iter().filter(|r| live.contains(&r.team_id)) {
        tx.execute(
            INSERT,
            &[
                Value::from(&r.id),
                Value::from(&r.team_id.0),
                Value::from(&r.key_id),
                r.previous_id.as_deref().into(),
                r.input.to_string().into(),
                r.response.to_string().into(),
                r.created_at.into(),
            ],
        )
        .await?;
    }
    Ok(())
}

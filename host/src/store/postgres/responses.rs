//! Stored responses in PostgreSQL: rows of `responses`, read only within their team. The JSON is
//! kept as the text it was written as (not `jsonb`, which would reorder an object's keys).

use std::collections::HashSet;

use deadpool_postgres::GenericClient;

use super::{execute, query, query_opt};
use crate::store::responses::StoredResponse;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// A batch inside the caller's transaction. A row whose team was deleted meanwhile is skipped
/// (the foreign key would fail the whole batch, and the group commit would retry it forever);
/// the teams still there are share-locked until the commit, so none goes in between.
pub(super) async fn put_in<C: GenericClient>(tx: &C, batch: &[StoredResponse]) -> StoreResult<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut teams: Vec<&str> = batch.iter().map(|r| r.team_id.0.as_str()).collect();
    teams.sort_unstable();
    teams.dedup();
    let live: HashSet<String> = query(
        tx,
        "SELECT id FROM teams WHERE id = ANY($1) ORDER BY id FOR KEY SHARE",
        &[&teams],
    )
    .await?
    .iter()
    .map(|r| r.try_get(0))
    .collect::<Result<_, _>>()?;
    for r in batch.iter().filter(|r| live.contains(&r.team_id.0)) {
        execute(
            tx,
            "INSERT INTO responses (id, team_id, key_id, previous_id, input, response, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (id) DO NOTHING",
            &[
                &r.id,
                &r.team_id.0,
                &r.key_id,
                &r.previous_id,
                &r.input.to_string(),
                &r.response.to_string(),
                &r.created_at,
            ],
        )
        .await?;
    }
    Ok(())
}

pub(super) async fn get<C: GenericClient>(
    c: &C,
    team: &TeamId,
    id: &str,
) -> StoreResult<Option<StoredResponse>> {
    let Some(r) = query_opt(
        c,
        "SELECT id, team_id, key_id, previous_id, input, response, created_at
         FROM responses WHERE id = $1 AND team_id = $2",
        &[&id, &team.0],
    )
    .await?
    else {
        return Ok(None);
    };
    let id: String = r.try_get(0)?;
    let parse = |column: usize, what: &str| -> StoreResult<serde_json::Value> {
        let text: String = r.try_get(column)?;
        serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("responses {id}.{what}: {e}")))
    };
    Ok(Some(StoredResponse {
        input: parse(4, "input")?,
        response: parse(5, "response")?,
        team_id: TeamId(r.try_get(1)?),
        key_id: r.try_get(2)?,
        previous_id: r.try_get(3)?,
        created_at: r.try_get(6)?,
        id,
    }))
}

pub(super) async fn delete<C: GenericClient>(c: &C, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(execute(
        c,
        "DELETE FROM responses WHERE id = $1 AND team_id = $2",
        &[&id, &team.0],
    )
    .await?
        > 0)
}

pub(super) async fn purge<C: GenericClient>(c: &C, before: UnixMillis) -> StoreResult<u64> {
    execute(c, "DELETE FROM responses WHERE created_at < $1", &[&before]).await
}

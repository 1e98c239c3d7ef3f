//! Stored responses in SQLite: rows of `responses`, read only within their team.

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::responses::StoredResponse;
use crate::store::{StoreError, StoreResult, TeamId, UnixMillis};

/// A batch inside the caller's transaction. A row whose team was deleted meanwhile is skipped
/// (the foreign key would fail the whole batch, and the group commit would retry it forever).
pub(super) fn put_in(tx: &rusqlite::Transaction<'_>, batch: &[StoredResponse]) -> StoreResult<()> {
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO responses (id, team_id, key_id, previous_id, input, response, created_at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM teams WHERE id = ?2)
             ON CONFLICT (id) DO NOTHING",
        )?;
        for r in batch {
            insert.execute(params![
                r.id,
                r.team_id.0,
                r.key_id,
                r.previous_id,
                r.input.to_string(),
                r.response.to_string(),
                r.created_at
            ])?;
        }
    }
    Ok(())
}

pub(super) fn get(c: &Connection, team: &TeamId, id: &str) -> StoreResult<Option<StoredResponse>> {
    let row = c
        .query_row(
            "SELECT id, team_id, key_id, previous_id, input, response, created_at
             FROM responses WHERE id = ?1 AND team_id = ?2",
            params![id, team.0],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            },
        )
        .optional()?;
    let Some((id, team_id, key_id, previous_id, input, response, created_at)) = row else {
        return Ok(None);
    };
    let parse = |text: &str, what: &str| {
        serde_json::from_str(text)
            .map_err(|e| StoreError::Corrupt(format!("responses {id}.{what}: {e}")))
    };
    Ok(Some(StoredResponse {
        input: parse(&input, "input")?,
        response: parse(&response, "response")?,
        id: id.clone(),
        team_id: TeamId(team_id),
        key_id,
        previous_id,
        created_at,
    }))
}

pub(super) fn delete(c: &Connection, team: &TeamId, id: &str) -> StoreResult<bool> {
    Ok(c.execute(
        "DELETE FROM responses WHERE id = ?1 AND team_id = ?2",
        params![id, team.0],
    )? > 0)
}

pub(super) fn purge(c: &Connection, before: UnixMillis) -> StoreResult<u64> {
    Ok(
        u64::try_from(c.execute("DELETE FROM responses WHERE created_at < ?1", [before])?)
            .unwrap_or(0),
    )
}

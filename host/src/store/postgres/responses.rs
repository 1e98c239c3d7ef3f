//! Stored responses written in PostgreSQL, a batch inside a charge's transaction, the teams
//! share-locked in id order (reading and deleting them is `store/responses/sql.rs`).

use std::collections::HashSet;

use deadpool_postgres::GenericClient;

use super::{execute, query};
use crate::store::StoreResult;
use crate::store::responses::StoredResponse;

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

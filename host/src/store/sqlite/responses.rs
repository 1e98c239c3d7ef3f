//! Stored responses written in SQLite, a batch inside a charge's transaction (reading and
//! deleting them is `store/responses/sql.rs`).

use rusqlite::params;

use crate::store::StoreResult;
use crate::store::responses::StoredResponse;

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

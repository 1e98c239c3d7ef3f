//! The embedding model's work for the library, in usage: [`row`] makes it a usage row at no
//! spend, [`record`] commits one (the built-in model runs on the gateway's own CPU, and an upstream embedding model's
//! cost is not charged to budgets). A lost row is logged, never an error: the work is done.

use crate::store::{Clock, KeyId, Store, SystemClock, TeamId, UsageRecord};

/// Who the work was done for, and how much: `tokens` of `model`.
pub struct Work<'a> {
    pub team_id: &'a str,
    pub key_id: &'a str,
    pub actor: &'a str,
    pub model: &'a str,
    pub tokens: u64,
    /// The request that asked for it (its journal entry's `request_id`).
    pub request_id: String,
}

/// `work` as a usage row (no spend).
pub fn row(work: Work<'_>) -> UsageRecord {
    UsageRecord {
        at: SystemClock.now_ms(),
        team_id: TeamId(work.team_id.to_string()),
        key_id: KeyId(work.key_id.to_string()),
        actor: work.actor.to_string(),
        model: work.model.to_string(),
        tokens_in: work.tokens,
        tokens_out: 0,
        spend: 0,
        request_id: Some(work.request_id),
    }
}

/// Records `work` in usage (no spend), committed before it returns; a store failure is logged.
pub async fn record(store: &dyn Store, work: Work<'_>) {
    let request_id = work.request_id.clone();
    let record = row(work);
    if let Err(e) = store.record_usage(record).await {
        // The work is done and answered; a lost usage row is logged, not turned into an error.
        tracing::error!(request_id = %request_id, error = %e, "recording document usage failed");
    }
}

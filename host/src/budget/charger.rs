//! The charger: persists settled usage (a usage row plus the spend on the team's and key's
//! counters) to the store with group commit (`crate::store::group_commit`) — everything queued
//! while one transaction commits goes into the next. Callers may wait for their charge to be
//! durable ([`Charger::charge`] returns when it is committed) or not. A failing store is retried,
//! never skipped: a charge is dropped only if the process dies before it commits.

use std::sync::Arc;

use crate::store::group_commit::GroupCommit;
use crate::store::{Store, UsageRecord};

/// Most charges committed in one transaction.
const MAX_BATCH: usize = 1_024;

#[derive(Debug, Clone)]
pub struct Charger {
    queue: GroupCommit<UsageRecord>,
}

impl Charger {
    /// Starts the writer task; it ends when every [`Charger`] handle is dropped and the queue is
    /// drained (the returned handle completes then).
    pub fn start(store: Arc<dyn Store>) -> (Charger, tokio::task::JoinHandle<()>) {
        let (queue, task) = GroupCommit::start("usage", MAX_BATCH, move |records| {
            let store = store.clone();
            Box::pin(async move { store.charge(records).await })
        });
        (Charger { queue }, task)
    }

    /// Queues a charge and returns when it is committed. If the writer is gone (shutting down),
    /// returns at once.
    pub async fn charge(&self, record: UsageRecord) {
        self.queue.push_and_wait(record).await;
    }

    /// Queues a charge without waiting (from synchronous code: end of a stream, a drop).
    pub fn charge_later(&self, record: UsageRecord) {
        if !self.queue.push(record) {
            tracing::error!("the charger has stopped; a charge was not recorded");
        }
    }

    /// Returns when every charge queued before this call is committed.
    pub async fn flush(&self) {
        self.queue.flush().await;
    }
}

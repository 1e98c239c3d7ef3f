//! The charger: persists settled usage (a usage row plus the spend on the team's and key's
//! counters) to the store with group commit (`crate::store::group_commit`) — everything queued
//! while one transaction commits goes into the next. Callers may wait for their charge to be
//! durable ([`Charger::charge_then_wait`] returns what completes when it is committed) or not.
//! A failing store is retried, never skipped: a charge is dropped only if the process dies
//! before it commits.
//!
//! Stored responses (the Responses API) ride the same queue ([`Charger::store_response`]): a
//! response queued right after its charge commits with it, in one transaction and one fsync, and
//! waiting for the response means the charge before it is durable too (the queue is in order).

use std::sync::Arc;

use crate::store::group_commit::GroupCommit;
use crate::store::responses::StoredResponse;
use crate::store::{Store, UsageRecord};

/// What the queue commits.
#[derive(Debug, Clone)]
enum Durable {
    Charge(UsageRecord),
    Response(Box<StoredResponse>),
}

/// Most charges committed in one transaction.
const MAX_BATCH: usize = 1_024;

#[derive(Debug, Clone)]
pub struct Charger {
    queue: GroupCommit<Durable>,
}

impl Charger {
    /// Starts the writer, where the store says (`Store::group_commits_run`: SQLite's on a thread
    /// of its own); it ends when every [`Charger`] handle is dropped and the queue is drained
    /// (the returned handle completes then).
    pub fn start(store: Arc<dyn Store>) -> (Charger, tokio::task::JoinHandle<()>) {
        let runs = store.group_commits_run();
        let (queue, task) =
            GroupCommit::start(runs, "usage", MAX_BATCH, move |items: Vec<Durable>| {
                let store = store.clone();
                let mut charges = Vec::with_capacity(items.len());
                let mut responses = Vec::new();
                for item in items {
                    match item {
                        Durable::Charge(c) => charges.push(c),
                        Durable::Response(r) => responses.push(*r),
                    }
                }
                Box::pin(async move {
                    if responses.is_empty() {
                        store.charge(charges).await
                    } else {
                        store.charge_and_store(charges, responses).await
                    }
                })
            });
        (Charger { queue }, task)
    }

    /// Queues a charge now; the returned future completes when it is committed (at once if the
    /// writer is gone, shutting down).
    pub fn charge_then_wait(&self, record: UsageRecord) -> impl Future<Output = ()> + Send + use<> {
        self.queue.push_then_wait(Durable::Charge(record))
    }

    /// Queues a stored response and returns when it is committed, with every charge queued
    /// before it — through a store outage too: a client is never told of a response that a
    /// continuation could not find.
    pub async fn store_response(&self, response: StoredResponse) {
        self.queue
            .push_and_wait_durable(Durable::Response(Box::new(response)))
            .await;
    }

    /// Queues a charge without waiting (from synchronous code: end of a stream, a drop).
    pub fn charge_later(&self, record: UsageRecord) {
        if !self.queue.push(Durable::Charge(record)) {
            tracing::error!("the charger has stopped; a charge was not recorded");
        }
    }

    /// Returns when every charge queued before this call is committed.
    pub async fn flush(&self) {
        self.queue.flush().await;
    }

    /// Requests go on while the store has been failing for less than `grace`, their charges
    /// queued (`GroupCommit::tolerate_outages`).
    pub fn tolerate_outages(&self, grace: std::time::Duration) {
        self.queue.tolerate_outages(grace);
    }

    /// How long charges have been failing to commit.
    pub fn outage(&self) -> Option<std::time::Duration> {
        self.queue.outage()
    }
}

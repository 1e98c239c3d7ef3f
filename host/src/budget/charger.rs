//! The charger: persists settled usage (a usage row plus the spend on the team's and key's
//! counters) to the store with group commit — everything queued while one transaction commits
//! goes into the next. Callers may wait for their charge to be durable ([`Charger::charge`]
//! returns when it is committed) or not. A failing store is retried, never skipped: a charge is
//! dropped only if the process dies before it commits.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::store::{Store, UsageRecord};

/// Most charges committed in one transaction.
const MAX_BATCH: usize = 1_024;

enum Job {
    Charge(UsageRecord, Option<oneshot::Sender<()>>),
    /// Answered once everything queued before it is committed.
    Flush(oneshot::Sender<()>),
}

#[derive(Debug, Clone)]
pub struct Charger {
    tx: mpsc::UnboundedSender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Job::Charge(..) => "Charge",
            Job::Flush(_) => "Flush",
        })
    }
}

impl Charger {
    /// Starts the writer task; it ends when every [`Charger`] handle is dropped and the queue is
    /// drained (the returned handle completes then).
    pub fn start(store: Arc<dyn Store>) -> (Charger, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(store, rx));
        (Charger { tx }, task)
    }

    /// Queues a charge and returns when it is committed. If the writer is gone (shutting down),
    /// returns at once.
    pub async fn charge(&self, record: UsageRecord) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Charge(record, Some(ack))).is_ok() {
            let _ = done.await;
        }
    }

    /// Queues a charge without waiting (from synchronous code: end of a stream, a drop).
    pub fn charge_later(&self, record: UsageRecord) {
        if self.tx.send(Job::Charge(record, None)).is_err() {
            tracing::error!("the charger has stopped; a charge was not recorded");
        }
    }

    /// Returns when every charge queued before this call is committed.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Flush(ack)).is_ok() {
            let _ = done.await;
        }
    }
}

async fn run(store: Arc<dyn Store>, mut rx: mpsc::UnboundedReceiver<Job>) {
    let mut jobs = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut jobs, MAX_BATCH).await > 0 {
        let mut records = Vec::with_capacity(jobs.len());
        let mut acks = Vec::with_capacity(jobs.len());
        for job in jobs.drain(..) {
            match job {
                Job::Charge(r, ack) => {
                    records.push(r);
                    acks.extend(ack);
                }
                Job::Flush(ack) => acks.push(ack),
            }
        }
        if !records.is_empty() {
            let mut backoff = Duration::from_millis(10);
            while let Err(e) = store.charge(records.clone()).await {
                tracing::error!(error = %e, charges = records.len(), "recording usage failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

//! Group commit: items queued from anywhere without blocking, written to the store in batches —
//! everything queued while one write is under way goes into the next, one transaction each. A
//! failing write is retried with backoff, never skipped: an item is lost only if the process dies
//! before its batch commits. Callers may wait for their item ([`GroupCommit::push_and_wait`]) or
//! for everything queued before a point ([`GroupCommit::flush`]). The charger (settled usage),
//! the webhook outbox (deliveries) and the webhook recorder (attempt outcomes) are this, with
//! their own write.

use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::StoreResult;

/// Longest pause between two tries of a failing write.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

enum Job<T> {
    Item(T, Option<oneshot::Sender<()>>),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// The queueing side; cheap to clone.
pub struct GroupCommit<T> {
    tx: mpsc::UnboundedSender<Job<T>>,
}

impl<T> Clone for GroupCommit<T> {
    fn clone(&self) -> Self {
        GroupCommit {
            tx: self.tx.clone(),
        }
    }
}

impl<T> std::fmt::Debug for GroupCommit<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

/// The writing side, started once its write is known ([`Writer::start`]).
pub struct Writer<T> {
    rx: mpsc::UnboundedReceiver<Job<T>>,
}

impl<T: Clone + Send + 'static> GroupCommit<T> {
    /// The queue, and its writer to start when the write can be built (the webhook outbox is
    /// fed before the subscriptions it writes against are loaded).
    pub fn channel() -> (GroupCommit<T>, Writer<T>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (GroupCommit { tx }, Writer { rx })
    }

    /// The queue with its writer started.
    pub fn start<W>(
        what: &'static str,
        max_batch: usize,
        write: W,
    ) -> (GroupCommit<T>, tokio::task::JoinHandle<()>)
    where
        W: FnMut(Vec<T>) -> BoxFuture<'static, StoreResult<()>> + Send + 'static,
    {
        let (queue, writer) = GroupCommit::channel();
        (queue, writer.start(what, max_batch, write))
    }

    /// Queues `item`; false when the writer has stopped.
    pub fn push(&self, item: T) -> bool {
        self.tx.send(Job::Item(item, None)).is_ok()
    }

    /// Queues `item` and returns once it is written (at once if the writer has stopped).
    pub async fn push_and_wait(&self, item: T) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Item(item, Some(ack))).is_ok() {
            let _ = done.await;
        }
    }

    /// Returns once everything queued before this call is written.
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Flush(ack)).is_ok() {
            let _ = done.await;
        }
    }
}

impl<T: Clone + Send + 'static> Writer<T> {
    /// Spawns the writer task: `write` gets each batch (again, after a pause, while it fails). It
    /// ends when every [`GroupCommit`] handle is dropped and the queue is drained.
    pub fn start<W>(
        self,
        what: &'static str,
        max_batch: usize,
        mut write: W,
    ) -> tokio::task::JoinHandle<()>
    where
        W: FnMut(Vec<T>) -> BoxFuture<'static, StoreResult<()>> + Send + 'static,
    {
        let mut rx = self.rx;
        tokio::spawn(async move {
            let mut jobs = Vec::with_capacity(max_batch);
            while rx.recv_many(&mut jobs, max_batch).await > 0 {
                let mut items = Vec::with_capacity(jobs.len());
                let mut acks = Vec::new();
                for job in jobs.drain(..) {
                    match job {
                        Job::Item(item, ack) => {
                            items.push(item);
                            acks.extend(ack);
                        }
                        Job::Flush(ack) => acks.push(ack),
                    }
                }
                if !items.is_empty() {
                    let mut backoff = Duration::from_millis(10);
                    while let Err(e) = write(items.clone()).await {
                        tracing::error!(error = %e, what, items = items.len(), retry_in = ?backoff, "writing to the store failed; retrying");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                }
                for ack in acks {
                    let _ = ack.send(());
                }
            }
        })
    }
}

//! Attempt outcomes to the store with group commit (`crate::store::group_commit`): one
//! transaction for every outcome that arrived meanwhile. Workers hand an outcome over and go on
//! with the next delivery; an outcome not yet committed when the process dies means its delivery
//! is sent again at the next start (at-least-once, still in order).

use std::sync::Arc;

use crate::store::Store;
use crate::store::group_commit::{GroupCommit, Runs};
use crate::store::webhooks::AttemptRecord;

const BATCH: usize = 1_024;

#[derive(Clone)]
pub(super) struct Recorder {
    queue: GroupCommit<AttemptRecord>,
}

impl Recorder {
    pub(super) fn start(store: Arc<dyn Store>) -> Recorder {
        let (queue, _task) =
            GroupCommit::start(Runs::Task, "webhook attempts", BATCH, move |records| {
                let store = store.clone();
                Box::pin(async move { store.record_attempts(records).await })
            });
        Recorder { queue }
    }

    pub(super) fn record(&self, r: AttemptRecord) {
        self.queue.push(r);
    }

    /// Returns once every outcome handed over before this call is committed.
    pub(super) async fn flush(&self) {
        self.queue.flush().await;
    }
}

//! Attempt outcomes to the store, in batches (one transaction for every outcome that arrived
//! meanwhile: group commit). Workers hand an outcome over and go on with the next delivery; an
//! outcome not yet committed when the process dies means its delivery is sent again at the next
//! start (at-least-once, still in order). A store failure is retried, never dropped.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::store::Store;
use crate::store::webhooks::AttemptRecord;
use std::sync::Arc;

const BATCH: usize = 1_024;

pub(super) enum Msg {
    Record(AttemptRecord),
    Flush(oneshot::Sender<()>),
}

#[derive(Clone)]
pub(super) struct Recorder {
    tx: mpsc::UnboundedSender<Msg>,
}

impl Recorder {
    pub(super) fn start(store: Arc<dyn Store>) -> Recorder {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write(store, rx));
        Recorder { tx }
    }

    pub(super) fn record(&self, r: AttemptRecord) {
        let _ = self.tx.send(Msg::Record(r));
    }

    /// Returns once every outcome handed over before this call is committed.
    pub(super) async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Flush(ack)).is_ok() {
            let _ = done.await;
        }
    }
}

async fn write(store: Arc<dyn Store>, mut rx: mpsc::UnboundedReceiver<Msg>) {
    let mut msgs = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut msgs, BATCH).await > 0 {
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        for m in msgs.drain(..) {
            match m {
                Msg::Record(r) => batch.push(r),
                Msg::Flush(ack) => acks.push(ack),
            }
        }
        let mut backoff = Duration::from_millis(50);
        while !batch.is_empty() {
            match store.record_attempts(batch.clone()).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::error!(error = %e, outcomes = batch.len(), retry_in = ?backoff, "webhooks: recording attempts failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

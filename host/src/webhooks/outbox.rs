//! The durable outbox's front: events handed over by [`crate::events::Events::emit`] (never
//! blocking the request that emitted) are matched against the subscriptions and persisted as
//! deliveries in batches, one transaction each (group commit); only then do the subscriptions'
//! workers see them. A store failure is retried, never dropped. [`Outbox::flush`] waits until
//! everything pushed before it is persisted (shutdown drains this way).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::Shared;
use crate::events::Event;
use crate::store::webhooks::NewDelivery;

/// Most events persisted in one transaction.
const BATCH: usize = 512;

pub(super) enum Msg {
    /// To every subscription that wants it.
    Event(Arc<Event>),
    /// To one subscription whatever it subscribed to (the test ping).
    Only(Arc<Event>, String),
    Flush(oneshot::Sender<()>),
}

/// The emitting side, held by [`crate::events::Events`].
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Msg>,
    subscriptions: Arc<AtomicUsize>,
}

pub(super) type Receiver = mpsc::UnboundedReceiver<Msg>;

impl Outbox {
    pub(super) fn channel() -> (Outbox, Receiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Outbox {
                tx,
                subscriptions: Arc::new(AtomicUsize::new(0)),
            },
            rx,
        )
    }

    /// Whether any subscription exists (otherwise events are not even built).
    pub fn wanted(&self) -> bool {
        self.subscriptions.load(Ordering::Relaxed) > 0
    }

    pub(super) fn set_subscriptions(&self, n: usize) {
        self.subscriptions.store(n, Ordering::Relaxed);
    }

    pub fn push(&self, event: Arc<Event>) {
        let _ = self.tx.send(Msg::Event(event));
    }

    pub(super) fn push_to(&self, event: Arc<Event>, webhook_id: String) {
        let _ = self.tx.send(Msg::Only(event, webhook_id));
    }

    /// Returns once every event pushed before this call is persisted (or the writer is gone).
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Msg::Flush(ack)).is_ok() {
            let _ = done.await;
        }
    }
}

/// The writer task: batches from the channel into the store, then wakes the workers.
pub(super) async fn write(shared: Arc<Shared>, mut rx: Receiver) {
    let mut msgs = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut msgs, BATCH).await > 0 {
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        for m in msgs.drain(..) {
            match m {
                Msg::Event(e) => fan_out(&shared, &e, None, &mut batch),
                Msg::Only(e, id) => fan_out(&shared, &e, Some(&id), &mut batch),
                Msg::Flush(ack) => acks.push(ack),
            }
        }
        if !batch.is_empty() {
            persist(&shared, batch).await;
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

fn fan_out(shared: &Shared, e: &Event, only: Option<&str>, batch: &mut Vec<NewDelivery>) {
    let payload = match serde_json::to_string(e) {
        Ok(p) => p,
        Err(err) => {
            tracing::error!(event = e.event, error = %err, "webhook event not serializable; not delivered");
            return;
        }
    };
    let team = e.metadata.team_id.as_deref();
    for sub in shared.subscriptions() {
        let w = &sub.webhook;
        let wanted = match only {
            Some(id) => w.id == id,
            None => w.wants(e.event, team),
        };
        if wanted {
            batch.push(NewDelivery {
                webhook_id: w.id.clone(),
                event_id: e.id.clone(),
                kind: e.event.to_string(),
                payload: payload.clone(),
            });
        }
    }
}

async fn persist(shared: &Shared, batch: Vec<NewDelivery>) {
    let mut backoff = Duration::from_millis(50);
    loop {
        match shared.store.enqueue_deliveries(batch.clone()).await {
            Ok(_) => break,
            Err(e) => {
                tracing::error!(error = %e, deliveries = batch.len(), retry_in = ?backoff, "webhook outbox: persisting failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
    let mut woken: Vec<&str> = Vec::new();
    for d in &batch {
        if !woken.contains(&d.webhook_id.as_str()) {
            woken.push(&d.webhook_id);
            shared.wake(&d.webhook_id);
        }
    }
}

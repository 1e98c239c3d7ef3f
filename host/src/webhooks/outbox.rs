//! The durable outbox's front: events handed over by [`crate::events::Events::emit`] (never
//! blocking the request that emitted) are matched against the subscriptions and persisted as
//! deliveries in batches, one transaction each (group commit); only then do the subscriptions'
//! workers see them. A store failure is retried, never dropped. [`Outbox::flush`] waits until
//! everything pushed before it is persisted (shutdown drains this way); [`Outbox::persisted_to`]
//! lets a request wait until the events it emitted are persisted before it answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};

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

/// How long a request waits for its events to be persisted before it goes on without (the store
/// is failing; the writer keeps retrying and logs it).
const PERSIST_WAIT: Duration = Duration::from_secs(2);

/// The emitting side, held by [`crate::events::Events`].
#[derive(Debug, Clone)]
pub struct Outbox {
    /// Events are numbered in channel order under this lock, so "the writer has persisted n"
    /// means every event numbered up to n.
    tx: Arc<std::sync::Mutex<(mpsc::UnboundedSender<Msg>, u64)>>,
    subscriptions: Arc<AtomicUsize>,
    persisted: watch::Receiver<u64>,
}

/// The writer's end: the messages, and how many events it has persisted.
pub(super) struct Receiver {
    rx: mpsc::UnboundedReceiver<Msg>,
    persisted: watch::Sender<u64>,
}

impl Outbox {
    pub(super) fn channel() -> (Outbox, Receiver) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (persisted_tx, persisted) = watch::channel(0);
        (
            Outbox {
                tx: Arc::new(std::sync::Mutex::new((tx, 0))),
                subscriptions: Arc::new(AtomicUsize::new(0)),
                persisted,
            },
            Receiver {
                rx,
                persisted: persisted_tx,
            },
        )
    }

    fn send(&self, msg: Msg) -> bool {
        let mut g = self
            .tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if matches!(msg, Msg::Event(_) | Msg::Only(..)) {
            g.1 += 1;
        }
        g.0.send(msg).is_ok()
    }

    /// How many events were handed over so far (a mark for [`Outbox::persisted_to`]).
    pub fn mark(&self) -> u64 {
        self.tx
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .1
    }

    /// Waits until every event handed over up to `mark` is persisted (bounded: a failing store
    /// does not hold requests; it is logged by the writer).
    pub async fn persisted_to(&self, mark: u64) {
        let mut rx = self.persisted.clone();
        let wait = rx.wait_for(|&n| n >= mark);
        if tokio::time::timeout(PERSIST_WAIT, wait).await.is_err() {
            tracing::warn!(
                mark,
                "webhook outbox: events not persisted in time; answering anyway"
            );
        }
    }

    /// Whether any subscription exists (otherwise events are not even built).
    pub fn wanted(&self) -> bool {
        self.subscriptions.load(Ordering::Relaxed) > 0
    }

    pub(super) fn set_subscriptions(&self, n: usize) {
        self.subscriptions.store(n, Ordering::Relaxed);
    }

    pub fn push(&self, event: Arc<Event>) {
        self.send(Msg::Event(event));
    }

    pub(super) fn push_to(&self, event: Arc<Event>, webhook_id: String) {
        self.send(Msg::Only(event, webhook_id));
    }

    /// Returns once every event pushed before this call is persisted (or the writer is gone).
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.send(Msg::Flush(ack)) {
            let _ = done.await;
        }
    }
}

/// The writer task: batches from the channel into the store, then wakes the workers.
pub(super) async fn write(shared: Arc<Shared>, rx: Receiver) {
    let Receiver {
        mut rx,
        persisted: done,
    } = rx;
    let mut persisted = 0u64;
    let mut msgs = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut msgs, BATCH).await > 0 {
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        let mut events = 0;
        for m in msgs.drain(..) {
            match m {
                Msg::Event(e) => {
                    events += 1;
                    fan_out(&shared, &e, None, &mut batch);
                }
                Msg::Only(e, id) => {
                    events += 1;
                    fan_out(&shared, &e, Some(&id), &mut batch);
                }
                Msg::Flush(ack) => acks.push(ack),
            }
        }
        if !batch.is_empty() {
            persist(&shared, batch).await;
        }
        persisted += events;
        done.send_replace(persisted);
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

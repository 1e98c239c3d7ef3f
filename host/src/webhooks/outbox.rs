//! The durable outbox's front: events handed over by [`crate::events::Events::emit`] (never
//! blocking the request that emitted) are matched against the subscriptions and persisted as
//! deliveries with group commit (`crate::store::group_commit`); only then do the subscriptions'
//! workers see them. [`Outbox::flush`] waits until everything pushed before it is persisted
//! (shutdown drains this way); [`Outbox::persisted_to`] lets a request wait until the events it
//! emitted are persisted before it answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::{Shared, Sub};
use crate::events::Event;
use crate::store::group_commit::{GroupCommit, Runs, Writer};
use crate::store::webhooks::NewDelivery;

/// Most events persisted in one transaction.
const BATCH: usize = 512;

/// How long a request waits for its events to be persisted before it goes on without (the store
/// is failing; the writer keeps retrying and logs it).
pub const PERSIST_WAIT: Duration = Duration::from_secs(2);

/// An event on its way to the outbox.
#[derive(Clone)]
pub(super) struct Outgoing {
    event: Arc<Event>,
    /// To this subscription only, whatever it subscribed to (the test ping); `None`: to every
    /// subscription that wants it.
    only: Option<String>,
}

/// The emitting side, registered into [`crate::events::Events`] as its [`crate::events::Sink`].
#[derive(Debug, Clone)]
pub struct Outbox {
    queue: GroupCommit<Outgoing>,
    /// Events are numbered in queue order under this lock, so "the writer has persisted n"
    /// means every event numbered up to n.
    order: Arc<Mutex<()>>,
    /// Events handed over so far (read without the lock: [`Outbox::mark`]).
    pushed: Arc<AtomicU64>,
    subscriptions: Arc<AtomicUsize>,
    persisted: watch::Receiver<u64>,
}

/// The writer's end, started once the subscriptions are loaded ([`start_writer`]).
pub(super) struct Receiver {
    writer: Writer<Outgoing>,
    persisted: watch::Sender<u64>,
}

impl Outbox {
    pub(super) fn channel() -> (Outbox, Receiver) {
        let (queue, writer) = GroupCommit::channel();
        let (persisted_tx, persisted) = watch::channel(0);
        (
            Outbox {
                queue,
                order: Arc::default(),
                pushed: Arc::default(),
                subscriptions: Arc::default(),
                persisted,
            },
            Receiver {
                writer,
                persisted: persisted_tx,
            },
        )
    }

    fn send(&self, o: Outgoing) {
        let _numbered = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        self.pushed.fetch_add(1, Ordering::AcqRel);
        self.queue.push(o);
    }

    /// How many events were handed over so far (a mark for [`Outbox::persisted_to`]).
    pub fn mark(&self) -> u64 {
        self.pushed.load(Ordering::Acquire)
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
        self.send(Outgoing { event, only: None });
    }

    pub(super) fn push_to(&self, event: Arc<Event>, webhook_id: String) {
        self.send(Outgoing {
            event,
            only: Some(webhook_id),
        });
    }

    /// Returns once every event pushed before this call is persisted (or the writer is gone).
    pub async fn flush(&self) {
        self.queue.flush().await;
    }
}

/// The outbox is the events channel's durable sink, registered when the state is built.
impl crate::events::Sink for Outbox {
    fn wanted(&self) -> bool {
        Outbox::wanted(self)
    }

    fn push(&self, event: Arc<Event>) {
        Outbox::push(self, event);
    }

    fn mark(&self) -> u64 {
        Outbox::mark(self)
    }

    fn persisted_to(&self, mark: u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(Outbox::persisted_to(self, mark))
    }
}

/// Starts the writer: each batch matched against the subscriptions, persisted in one
/// transaction, then the workers woken and the persisted count moved on.
pub(super) fn start_writer(shared: Arc<Shared>, rx: Receiver) {
    let Receiver { writer, persisted } = rx;
    let persisted = Arc::new(persisted);
    writer.start(
        Runs::Task,
        "webhook deliveries",
        BATCH,
        move |events: Vec<Outgoing>| {
            let shared = shared.clone();
            let persisted = persisted.clone();
            Box::pin(async move {
                let subs = shared.subscriptions();
                let mut batch = Vec::new();
                for o in &events {
                    fan_out(&subs, &o.event, o.only.as_deref(), &mut batch);
                }
                let mut woken: Vec<String> = Vec::new();
                for d in &batch {
                    if !woken.contains(&d.webhook_id) {
                        woken.push(d.webhook_id.clone());
                    }
                }
                if !batch.is_empty() {
                    shared.store.enqueue_deliveries(batch).await?;
                }
                for id in &woken {
                    shared.wake(id);
                }
                let n = u64::try_from(events.len()).unwrap_or(u64::MAX);
                persisted.send_modify(|p| *p += n);
                Ok(())
            })
        },
    );
}

fn fan_out(subs: &[Arc<Sub>], e: &Event, only: Option<&str>, batch: &mut Vec<NewDelivery>) {
    let payload = match serde_json::to_string(e) {
        Ok(p) => p,
        Err(err) => {
            tracing::error!(event = e.event, error = %err, "webhook event not serializable; not delivered");
            return;
        }
    };
    let team = e.metadata.team_id.as_deref();
    for sub in subs {
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

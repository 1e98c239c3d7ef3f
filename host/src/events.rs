//! The internal events channel: what happened that someone outside may want to know
//! (`cost.threshold`, `routing.rule`, `guardrail.violation`, `model.fallback`,
//! `request.completed`), in the seed's shape `{event, timestamp, request_id, details, metadata:
//! {team_id, user_id}}`. Emitting never blocks and never fails the request that emitted. Each
//! event goes to in-process subscribers (a broadcast) and to the [`Sink`] registered when the
//! channel is built, if it wants events: the webhook outbox, which persists and delivers them, is
//! wired in by whoever builds the state. This module knows no subscriber by name.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// Events buffered for slow in-process subscribers before the oldest are dropped (and counted).
const CAPACITY: usize = 4_096;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Event {
    /// `evt_…`, unique: webhook receivers de-duplicate by it (`webhook-id`). Not in the body.
    #[serde(skip)]
    pub id: String,
    pub event: &'static str,
    /// ISO 8601 UTC.
    pub timestamp: String,
    pub request_id: Option<String>,
    pub details: Value,
    pub metadata: Metadata,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Metadata {
    pub team_id: Option<String>,
    pub user_id: Option<String>,
}

/// A durable subscriber of the channel (an outbox: events handed over are persisted, then acted
/// on). Registered when the channel is built ([`Events::new`]); `push` must never block.
pub trait Sink: fmt::Debug + Send + Sync + 'static {
    /// Whether the sink wants events now (when nobody does, events are not even built).
    fn wanted(&self) -> bool;
    /// Hands an event over, without blocking.
    fn push(&self, event: Arc<Event>);
    /// How many events were handed over so far (a mark for [`Sink::persisted_to`]).
    fn mark(&self) -> u64;
    /// Waits until every event handed over up to `mark` is persisted (bounded by the sink).
    fn persisted_to(&self, mark: u64) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Arc<Event>>,
    outbox: Option<Arc<dyn Sink>>,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            tx: broadcast::channel(CAPACITY).0,
            outbox: None,
        }
    }
}

impl Events {
    /// The channel, feeding `outbox` when given.
    pub fn new<S: Sink>(outbox: Option<S>) -> Events {
        Events {
            outbox: outbox.map(|o| Arc::new(o) as Arc<dyn Sink>),
            ..Events::default()
        }
    }

    /// Emits the event `make` builds — built only when a subscriber, a webhook subscription or
    /// the debug log will read it, so an event on every request (`routing.rule`) costs nothing
    /// while nobody listens.
    pub fn emit(&self, make: impl FnOnce() -> Event) {
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        let outbox = self.outbox.as_ref().filter(|o| o.wanted());
        if !logged && outbox.is_none() && self.tx.receiver_count() == 0 {
            return;
        }
        let event = Arc::new(make());
        if logged {
            tracing::debug!(event = event.event, id = %event.id, details = %event.details, "event");
        }
        if let Some(o) = outbox {
            o.push(event.clone());
        }
        let _ = self.tx.send(event);
    }

    /// The durable sink this channel feeds, when there is one.
    pub fn outbox(&self) -> Option<&dyn Sink> {
        self.outbox.as_deref()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
}

/// A new event id.
pub fn new_id() -> String {
    format!("evt_{}", uuid::Uuid::now_v7().simple())
}

impl Event {
    /// An event of `kind` now, for `request_id`, in the seed's shape.
    pub fn now(
        kind: &'static str,
        request_id: &str,
        details: Value,
        team_id: &str,
        user_id: &str,
    ) -> Event {
        Event {
            id: new_id(),
            event: kind,
            timestamp: crate::journal::format_utc(std::time::SystemTime::now()),
            request_id: Some(request_id.to_string()),
            details,
            metadata: Metadata {
                team_id: Some(team_id.to_string()),
                user_id: Some(user_id.to_string()),
            },
        }
    }
}

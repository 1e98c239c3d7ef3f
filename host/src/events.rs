//! The internal events channel: what happened that someone outside may want to know
//! (`cost.threshold`, `routing.rule`, `guardrail.violation`, `model.fallback`,
//! `request.completed`), in the seed's shape `{event, timestamp, request_id, details, metadata:
//! {team_id, user_id}}`. Emitting never blocks and never fails the request that emitted. Each
//! event goes to in-process subscribers (a broadcast) and, when a webhook subscription exists, to
//! the webhook outbox (`crate::webhooks`), which persists it and delivers it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::webhooks::Outbox;

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

#[derive(Debug, Clone)]
pub struct Events {
    tx: broadcast::Sender<Arc<Event>>,
    outbox: Option<Outbox>,
}

impl Default for Events {
    fn default() -> Self {
        Events::new(None)
    }
}

impl Events {
    /// The channel, feeding `outbox` when given.
    pub fn new(outbox: Option<Outbox>) -> Events {
        Events {
            tx: broadcast::channel(CAPACITY).0,
            outbox,
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

    /// The webhook outbox this channel feeds, when there is one.
    pub fn outbox(&self) -> Option<&Outbox> {
        self.outbox.as_ref()
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

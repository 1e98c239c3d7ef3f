//! The internal events channel: what happened that someone outside may want to know
//! (`cost.threshold`, `routing.rule`, `guardrail.violation`, …), in the seed's shape
//! `{event, timestamp, request_id, details, metadata: {team_id, user_id}}`. Emitting never blocks
//! and never fails the request that emitted; the webhook issue delivers them durably.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

/// Events buffered for slow subscribers before the oldest are dropped (and counted).
const CAPACITY: usize = 4_096;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Event {
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
}

impl Default for Events {
    fn default() -> Self {
        Events {
            tx: broadcast::channel(CAPACITY).0,
        }
    }
}

impl Events {
    /// Emits the event `make` builds — built only when a subscriber or the debug log will read
    /// it, so an event on every request (`routing.rule`) costs nothing while nobody listens.
    pub fn emit(&self, make: impl FnOnce() -> Event) {
        let logged = tracing::enabled!(tracing::Level::DEBUG);
        if !logged && self.tx.receiver_count() == 0 {
            return;
        }
        let event = make();
        if logged {
            tracing::debug!(event = event.event, details = %event.details, "event");
        }
        let _ = self.tx.send(Arc::new(event));
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Event>> {
        self.tx.subscribe()
    }
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

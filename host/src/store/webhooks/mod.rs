//! The store's webhook values: subscriptions and their outbox of deliveries (one row per event
//! and subscription, with its attempts). `docs/WEBHOOKS.md` gives the guarantees.
//! [`subscriptions`] keeps the subscriptions in both back ends; each back end keeps its outbox.

pub(crate) mod subscriptions;

use super::{TeamId, UnixMillis};

/// A subscription as created (the id and time are the store's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhook {
    pub url: String,
    /// Event kinds delivered (`*`: every kind).
    pub events: Vec<String>,
    /// Only this team's events; `None`: every team's.
    pub team_id: Option<TeamId>,
    /// The shaper policy that formats each delivery; `None`: the event as is.
    pub shaper: Option<String>,
    /// The signing secret (`whsec_…`): kept as is, the gateway must sign with it.
    pub secret: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub team_id: Option<TeamId>,
    pub shaper: Option<String>,
    pub secret: String,
    /// After a rotation: the secret before it, which also signs until `previous_until`.
    pub previous_secret: Option<String>,
    pub previous_until: Option<UnixMillis>,
    pub description: Option<String>,
    pub created_at: UnixMillis,
}

impl Webhook {
    /// Whether an event of `kind` for `team` goes to this subscription.
    pub fn wants(&self, kind: &str, team: Option<&str>) -> bool {
        let kind_ok = self.events.iter().any(|e| e == "*" || e == kind);
        let team_ok = match &self.team_id {
            None => true,
            Some(t) => team == Some(t.0.as_str()),
        };
        kind_ok && team_ok
    }
}

/// One event for one subscription, to be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery {
    pub webhook_id: String,
    pub event_id: String,
    pub kind: String,
    /// The event in the seed's shape (JSON).
    pub payload: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryState {
    /// Waiting for its (next) attempt.
    Pending,
    Delivered,
    /// Given up on (too old, refused destination, failed shaper): the dead-letter queue.
    Dead,
    /// The shaper chose not to deliver it.
    Skipped,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Dead => "dead",
            DeliveryState::Skipped => "skipped",
        }
    }

    pub fn parse(s: &str) -> Option<DeliveryState> {
        Some(match s {
            "pending" => DeliveryState::Pending,
            "delivered" => DeliveryState::Delivered,
            "dead" => DeliveryState::Dead,
            "skipped" => DeliveryState::Skipped,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Global order of enqueueing; a subscription's deliveries go out in this order.
    pub seq: i64,
    pub webhook_id: String,
    pub event_id: String,
    pub kind: String,
    pub payload: String,
    pub state: DeliveryState,
    pub attempts: u32,
    pub created_at: UnixMillis,
    /// Retries stop once the delivery is older than the configured age, counted from here
    /// (its creation, or its last re-drive).
    pub age_from: UnixMillis,
    pub next_attempt_at: UnixMillis,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    /// When it was delivered, dead-lettered or skipped.
    pub done_at: Option<UnixMillis>,
    /// Its attempts, oldest first (filled by [`crate::store::Store::deliveries`] only).
    pub log: Vec<Attempt>,
}

/// One try at delivering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub at: UnixMillis,
    pub duration_ms: u64,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    pub error: Option<String>,
}

/// What an attempt decided for its delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    Retry { next_at: UnixMillis },
    Dead,
    Skipped,
}

/// An attempt and its outcome, recorded together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub seq: i64,
    pub attempt: Attempt,
    pub outcome: Outcome,
}

/// Which deliveries to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryFilter {
    pub state: Option<DeliveryState>,
    /// Only deliveries with a smaller seq (paging back, newest first).
    pub before_seq: Option<i64>,
    pub limit: u32,
}

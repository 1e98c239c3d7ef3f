//! The store's webhook values: subscriptions and their outbox of deliveries (one row per event
//! and subscription, with its attempts). `docs/WEBHOOKS.md` gives the guarantees.
//! [`subscriptions`] keeps the subscriptions in both back ends ([`WebhookStore`], implemented
//! once for both by [`impl_webhook_store!`]); each back end keeps its outbox's steps
//! (`sqlite/webhooks.rs`, `postgres/webhooks.rs`: PostgreSQL numbers deliveries under an advisory
//! lock and leases a subscription to one replica), and [`OutboxStore`]'s plumbing from method to
//! step is written once ([`impl_outbox_store!`]).

pub(crate) mod schema;
pub(crate) mod subscriptions;

use futures_util::future::BoxFuture;

use super::sql::Columns;
use super::{StoreError, StoreResult, TeamId, UnixMillis};

/// Webhook subscriptions in the store (part of [`super::Store`]; the outbox is on `Store`).
pub trait WebhookStore: Send + Sync {
    fn create_webhook(&self, webhook: NewWebhook) -> BoxFuture<'_, StoreResult<Webhook>>;
    /// Every subscription, oldest first (secrets included: the caller hides them).
    fn webhooks(&self) -> BoxFuture<'_, StoreResult<Vec<Webhook>>>;
    /// Deletes the subscription and its outbox. `false` when there was no such subscription.
    fn delete_webhook(&self, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// A new signing secret; the old one keeps signing for `grace_ms` (0: stops at once).
    /// `None` when there is no such subscription.
    fn rotate_webhook_secret(
        &self,
        id: String,
        secret: String,
        grace_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Option<Webhook>>>;
}

/// The webhook outbox in the store (part of [`super::Store`]; `docs/WEBHOOKS.md`).
pub trait OutboxStore: Send + Sync {
    /// Persists a batch of deliveries in one transaction; each one's seq, in order (0 for a
    /// subscription deleted meanwhile, which takes nothing).
    fn enqueue_deliveries(&self, batch: Vec<NewDelivery>) -> BoxFuture<'_, StoreResult<Vec<i64>>>;
    /// Up to `limit` pending deliveries of the subscription after `after_seq`, oldest first.
    fn pending_deliveries(
        &self,
        webhook_id: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>>;
    /// Records attempts and moves each one's delivery to its outcome, all in one transaction.
    fn record_attempts(&self, records: Vec<AttemptRecord>) -> BoxFuture<'_, StoreResult<()>>;
    /// The subscription's deliveries, newest first, with their attempts.
    fn deliveries(
        &self,
        webhook_id: String,
        filter: DeliveryFilter,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>>;
    /// Dead letters back to pending (all of the subscription's, or the given seqs).
    fn redrive(
        &self,
        webhook_id: String,
        seqs: Option<Vec<i64>>,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// Deletes delivered and skipped deliveries finished before `before`.
    fn prune_deliveries(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>>;
    /// Takes or keeps the right to deliver the subscription's outbox until `until`, for `owner`
    /// (a replica): granted when nobody holds it, `owner` does, or the holder's lease has ended
    /// (by the store's clock). `false`: another replica holds it. A back end only one process
    /// can open (SQLite) grants it always.
    fn claim_webhook(
        &self,
        id: String,
        owner: String,
        until: UnixMillis,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let _ = (id, owner, until);
        Box::pin(async { Ok(true) })
    }
}

/// [`OutboxStore`] for a back end, over its "run its own step" macro (`sqlite_own!`, `pg_own!`:
/// `c` is the back end's connection, passed as is) and its module of steps (`webhooks`:
/// `enqueue`, `pending`, `record_attempts`, `list_deliveries`, `redrive`, `prune`); what only one
/// back end does (PostgreSQL's `claim_webhook`) follows in braces.
macro_rules! impl_outbox_store {
    ($store:ty, $run:ident, $steps:ident, { $($own:tt)* }) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::webhooks::{
                AttemptRecord, Delivery, DeliveryFilter, NewDelivery, OutboxStore,
            };
            use $crate::store::{StoreResult, UnixMillis};

            impl OutboxStore for $store {
                fn enqueue_deliveries(
                    &self,
                    batch: Vec<NewDelivery>,
                ) -> BoxFuture<'_, StoreResult<Vec<i64>>> {
                    $run!(self, |c, now| $steps::enqueue(c, now, &batch))
                }

                fn pending_deliveries(
                    &self,
                    webhook_id: String,
                    after_seq: i64,
                    limit: u32,
                ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>> {
                    $run!(self, |c, _| $steps::pending(c, &webhook_id, after_seq, limit))
                }

                fn record_attempts(
                    &self,
                    records: Vec<AttemptRecord>,
                ) -> BoxFuture<'_, StoreResult<()>> {
                    $run!(self, |c, _| $steps::record_attempts(c, &records))
                }

                fn deliveries(
                    &self,
                    webhook_id: String,
                    filter: DeliveryFilter,
                ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>> {
                    $run!(self, |c, _| $steps::list_deliveries(c, &webhook_id, &filter))
                }

                fn redrive(
                    &self,
                    webhook_id: String,
                    seqs: Option<Vec<i64>>,
                ) -> BoxFuture<'_, StoreResult<u64>> {
                    $run!(self, |c, now| {
                        $steps::redrive(c, now, &webhook_id, seqs.as_deref())
                    })
                }

                fn prune_deliveries(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
                    $run!(self, |c, _| $steps::prune(c, before))
                }

                $($own)*
            }
        };
    };
}
pub(crate) use impl_outbox_store;

/// [`WebhookStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_webhook_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::StoreResult;
            use $crate::store::webhooks::{NewWebhook, Webhook, WebhookStore, subscriptions};

            impl WebhookStore for $store {
                fn create_webhook(
                    &self,
                    webhook: NewWebhook,
                ) -> BoxFuture<'_, StoreResult<Webhook>> {
                    $run!(self, |c, now| subscriptions::create(&c, now, webhook))
                }

                fn webhooks(&self) -> BoxFuture<'_, StoreResult<Vec<Webhook>>> {
                    $run!(self, |c, _| subscriptions::list(&c))
                }

                fn delete_webhook(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| subscriptions::delete(&c, &id))
                }

                fn rotate_webhook_secret(
                    &self,
                    id: String,
                    secret: String,
                    grace_ms: i64,
                ) -> BoxFuture<'_, StoreResult<Option<Webhook>>> {
                    $run!(self, |c, now| {
                        subscriptions::rotate(&c, now, &id, &secret, grace_ms)
                    })
                }
            }
        };
    };
}
pub(crate) use impl_webhook_store;

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

/// The outbox's columns as both back ends select them, in the order [`delivery_row`] reads.
pub(crate) const SELECT_DELIVERY: &str =
    "SELECT seq, webhook_id, event_id, kind, payload, state, attempts,
        created_at, age_from, next_attempt_at, last_status, last_error, done_at
    FROM webhook_deliveries";

/// A row of [`SELECT_DELIVERY`] as a [`Delivery`] (its attempts not read: `log` is empty).
pub(crate) fn delivery_row(r: &impl Columns) -> StoreResult<Delivery> {
    let state: String = r.column(5)?;
    let status: Option<i64> = r.column(10)?;
    Ok(Delivery {
        seq: r.column(0)?,
        webhook_id: r.column(1)?,
        event_id: r.column(2)?,
        kind: r.column(3)?,
        payload: r.column(4)?,
        state: DeliveryState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("webhook_deliveries.state {state:?}")))?,
        attempts: u32::try_from(r.column::<i64>(6)?).unwrap_or(u32::MAX),
        created_at: r.column(7)?,
        age_from: r.column(8)?,
        next_attempt_at: r.column(9)?,
        last_status: status.and_then(|s| u16::try_from(s).ok()),
        last_error: r.column(11)?,
        done_at: r.column(12)?,
        log: Vec::new(),
    })
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

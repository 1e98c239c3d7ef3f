//! Webhooks: events delivered to subscribers, durably and in order (`docs/WEBHOOKS.md`).
//!
//! ```text
//! Events::emit ──▶ outbox (writer task: match subscriptions, persist a batch in one transaction)
//!              ──▶ delivery (one worker per subscription: in order, shaped, signed, retried,
//!                  dead-lettered)
//! ```
//!
//! The store holds subscriptions and the outbox; this module holds the subscriptions in memory
//! too (matching an event must not touch the store) and the workers. Nothing on a request path
//! waits for a delivery.

mod delivery;
mod outbox;
mod recorder;
mod shape;
pub mod sign;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::{Notify, Semaphore, watch};
use url::Url;

pub use outbox::{Outbox, PERSIST_WAIT};

use crate::config::WebhooksConfig;
use crate::egress;
use crate::events::{Event, Metadata};
use crate::metrics::Metrics;
use crate::policy::shaper::Shapers;
use crate::store::webhooks::{Attempt, Delivery, DeliveryFilter, NewWebhook, Outcome, Webhook};
use crate::store::{Clock, Store, StoreError, TeamId};

/// The event kinds a subscription may ask for (`*`: all of them).
pub const EVENT_KINDS: &[&str] = &[
    "request.completed",
    "routing.rule",
    "cost.threshold",
    "model.fallback",
    "guardrail.violation",
];
/// The kind of the ping `POST /v1/admin/webhooks/{id}/test` sends.
pub const TEST_EVENT: &str = "webhook.test";
/// Most event kinds one subscription lists.
const MAX_EVENTS: usize = 32;
const MAX_DESCRIPTION: usize = 500;

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("{0}")]
    Invalid(String),
    #[error("No webhook with id `{0}`.")]
    NotFound(String),
    #[error("At most {0} webhook subscriptions may exist; delete one first.")]
    TooMany(usize),
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

/// A subscription as the admin API asks for it.
#[derive(Debug, Clone, Default)]
pub struct Subscribe {
    pub url: String,
    pub events: Vec<String>,
    pub team_id: Option<String>,
    pub shaper: Option<String>,
    pub description: Option<String>,
}

/// The webhook service: subscriptions, the outbox writer and the delivery workers.
#[derive(Clone)]
pub struct Webhooks {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    store: Arc<dyn Store>,
    config: WebhooksConfig,
    clock: Arc<dyn Clock>,
    client: reqwest::Client,
    subs: RwLock<HashMap<String, Arc<Sub>>>,
    permits: Semaphore,
    stop: watch::Sender<bool>,
    outbox: Outbox,
    recorder: recorder::Recorder,
    shapers: Arc<Shapers>,
    metrics: Arc<Metrics>,
    /// With replicas on one store: this replica's name, under which its workers lease the
    /// subscriptions they deliver (`None`: one process, no leases).
    replica: Option<String>,
}

pub(crate) struct Sub {
    webhook: Webhook,
    /// The signing keys (secrets decoded), changed by a rotation.
    keys: RwLock<Keys>,
    url: Url,
    /// New deliveries, a re-drive, or deletion.
    wake: Notify,
    /// Set by a re-drive: the worker re-reads the outbox from its oldest pending delivery.
    reload: AtomicBool,
    deleted: AtomicBool,
}

/// A subscription's signing keys: the current one, and the one before a rotation with the end of
/// its grace.
pub(crate) struct Keys {
    pub current: Vec<u8>,
    pub previous: Option<(Vec<u8>, crate::store::UnixMillis)>,
}

impl Keys {
    fn of(w: &Webhook) -> Result<Keys, WebhookError> {
        let decode = |s: &str| {
            sign::secret_key(s).ok_or_else(|| {
                WebhookError::Store(StoreError::Corrupt(format!(
                    "webhook {}: a secret is not a whsec_ secret",
                    w.id
                )))
            })
        };
        let previous = match (&w.previous_secret, w.previous_until) {
            (Some(s), Some(until)) => Some((decode(s)?, until)),
            _ => None,
        };
        Ok(Keys {
            current: decode(&w.secret)?,
            previous,
        })
    }
}

/// The outbox's two ends, made before the events channel that feeds it.
pub struct Channel {
    pub outbox: Outbox,
    rx: outbox::Receiver,
}

impl Channel {
    pub fn new() -> Channel {
        let (outbox, rx) = Outbox::channel();
        Channel { outbox, rx }
    }
}

#[cfg(test)]
impl Channel {
    /// An outbox with one subscription whose writer is never started: nothing is ever persisted.
    pub(crate) fn stalled_for_tests() -> Channel {
        let channel = Channel::new();
        channel.outbox.set_subscriptions(1);
        channel
    }
}

impl Default for Channel {
    fn default() -> Self {
        Channel::new()
    }
}

impl Webhooks {
    /// Loads the subscriptions and starts the outbox writer and one worker per subscription
    /// (deliveries left pending by the last run go out now).
    pub async fn start(
        store: Arc<dyn Store>,
        config: WebhooksConfig,
        clock: Arc<dyn Clock>,
        channel: Channel,
        shapers: Arc<Shapers>,
        metrics: Arc<Metrics>,
        replica: Option<String>,
    ) -> anyhow::Result<Webhooks> {
        let mut builder = reqwest::Client::builder();
        if let Some(tls) = &config.tls {
            let tls = tls
                .load()
                .map_err(|e| anyhow::anyhow!("webhooks: tls: {e}"))?;
            builder = builder.tls_backend_preconfigured(tls);
        }
        let client = builder
            .dns_resolver(egress::GuardedResolver {
                allow_loopback: config.allow_loopback,
            })
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(std::time::Duration::from_secs(10)))
            .pool_idle_timeout(std::time::Duration::from_secs(60))
            .user_agent(concat!(
                "sovereign-gateway/",
                env!("CARGO_PKG_VERSION"),
                " (webhooks)"
            ))
            .build()?;
        let shared = Arc::new(Shared {
            store: store.clone(),
            permits: Semaphore::new(config.concurrency),
            config,
            clock,
            client,
            subs: RwLock::new(HashMap::new()),
            stop: watch::channel(false).0,
            outbox: channel.outbox,
            recorder: recorder::Recorder::start(store.clone()),
            shapers,
            metrics,
            replica,
        });
        for w in store.webhooks().await? {
            if let Err(e) = shared.add(w.clone()) {
                tracing::error!(webhook = %w.id, error = %e, "webhook subscription not loaded");
            }
        }
        outbox::start_writer(shared.clone(), channel.rx);
        tokio::spawn(prune(shared.clone()));
        Ok(Webhooks { shared })
    }

    pub async fn create(&self, s: Subscribe) -> Result<Webhook, WebhookError> {
        let shared = &self.shared;
        if shared.read().len() >= shared.config.max_subscriptions {
            return Err(WebhookError::TooMany(shared.config.max_subscriptions));
        }
        egress::check_url(&s.url, shared.config.allow_loopback)
            .map_err(|e| WebhookError::Invalid(format!("`url`: {e}.")))?;
        if s.events.is_empty() || s.events.len() > MAX_EVENTS {
            return Err(WebhookError::Invalid(format!(
                "`events` must list 1 to {MAX_EVENTS} event kinds (or \"*\")."
            )));
        }
        for e in &s.events {
            if e != "*" && !EVENT_KINDS.contains(&e.as_str()) {
                return Err(WebhookError::Invalid(format!(
                    "`events`: unknown event kind `{e}`; known kinds: {}, or \"*\".",
                    EVENT_KINDS.join(", ")
                )));
            }
        }
        if s.description
            .as_ref()
            .is_some_and(|d| d.len() > MAX_DESCRIPTION)
        {
            return Err(WebhookError::Invalid(format!(
                "`description` is longer than {MAX_DESCRIPTION} bytes."
            )));
        }
        if let Some(name) = &s.shaper {
            shape::check_name(shared, name).map_err(WebhookError::Invalid)?;
        }
        if let Some(t) = &s.team_id
            && shared.store.team(TeamId(t.clone())).await?.is_none()
        {
            return Err(WebhookError::Invalid(format!("`team_id`: no team `{t}`.")));
        }
        let created = shared
            .store
            .create_webhook(NewWebhook {
                url: s.url,
                events: s.events,
                team_id: s.team_id.map(TeamId),
                shaper: s.shaper,
                secret: sign::new_secret(),
                description: s.description,
            })
            .await?;
        shared.add(created.clone())?;
        Ok(created)
    }

    /// Every subscription, oldest first.
    pub fn list(&self) -> Vec<Webhook> {
        let mut all: Vec<Webhook> = self
            .shared
            .subscriptions()
            .into_iter()
            .map(|s| s.webhook.clone())
            .collect();
        all.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        all
    }

    pub fn get(&self, id: &str) -> Result<Webhook, WebhookError> {
        Ok(self.shared.sub(id)?.webhook.clone())
    }

    /// Stops the subscription's worker and deletes it with its outbox.
    pub async fn delete(&self, id: &str) -> Result<(), WebhookError> {
        let sub = self.shared.sub(id)?;
        sub.deleted.store(true, Ordering::Relaxed);
        sub.wake.notify_one();
        self.shared
            .subs
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id);
        self.shared.count();
        self.shared.store.delete_webhook(id.to_string()).await?;
        Ok(())
    }

    /// A new signing secret for the subscription (returned with it, shown once); the old one
    /// keeps signing alongside for `grace` (receivers verify with either), then stops.
    pub async fn rotate(
        &self,
        id: &str,
        grace: std::time::Duration,
    ) -> Result<Webhook, WebhookError> {
        let sub = self.shared.sub(id)?;
        let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        let rotated = self
            .shared
            .store
            .rotate_webhook_secret(sub.webhook.id.clone(), sign::new_secret(), grace_ms)
            .await?
            .ok_or_else(|| WebhookError::NotFound(id.to_string()))?;
        *sub.keys
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Keys::of(&rotated)?;
        Ok(rotated)
    }

    /// Enqueues a `webhook.test` ping for this subscription only; returns its event id.
    pub async fn test(&self, id: &str) -> Result<String, WebhookError> {
        let sub = self.shared.sub(id)?;
        let event = Arc::new(Event {
            id: crate::events::new_id(),
            event: TEST_EVENT,
            timestamp: crate::journal::format_utc(std::time::SystemTime::now()),
            request_id: None,
            details: serde_json::json!({"webhook_id": sub.webhook.id}),
            metadata: Metadata {
                team_id: sub.webhook.team_id.as_ref().map(|t| t.0.clone()),
                user_id: None,
            },
        });
        let event_id = event.id.clone();
        self.shared.outbox.push_to(event, sub.webhook.id.clone());
        self.shared.outbox.flush().await;
        Ok(event_id)
    }

    pub async fn deliveries(
        &self,
        id: &str,
        filter: DeliveryFilter,
    ) -> Result<Vec<Delivery>, WebhookError> {
        let sub = self.shared.sub(id)?;
        // What the workers did so far, visible.
        self.shared.recorder.flush().await;
        Ok(self
            .shared
            .store
            .deliveries(sub.webhook.id.clone(), filter)
            .await?)
    }

    /// Dead letters back to pending (all, or the given seqs); they go out before anything newer.
    pub async fn redrive(&self, id: &str, seqs: Option<Vec<i64>>) -> Result<u64, WebhookError> {
        let sub = self.shared.sub(id)?;
        let n = self
            .shared
            .store
            .redrive(sub.webhook.id.clone(), seqs)
            .await?;
        sub.reload.store(true, Ordering::Relaxed);
        sub.wake.notify_one();
        Ok(n)
    }

    /// Another replica changed the subscriptions: new ones are loaded (and their workers
    /// started), deleted ones stopped, rotated secrets taken.
    pub async fn reload(&self) -> Result<(), WebhookError> {
        let stored = self.shared.store.webhooks().await?;
        let known = self.shared.subscriptions();
        for sub in &known {
            match stored.iter().find(|w| w.id == sub.webhook.id) {
                Some(w) => {
                    *sub.keys
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Keys::of(w)?;
                }
                None => {
                    sub.deleted.store(true, Ordering::Relaxed);
                    sub.wake.notify_one();
                    self.shared
                        .subs
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .remove(&sub.webhook.id);
                }
            }
        }
        for w in stored {
            if !known.iter().any(|s| s.webhook.id == w.id) {
                self.shared.add(w)?;
            }
        }
        self.shared.count();
        Ok(())
    }

    /// Persists what was emitted so far, then stops the workers (an attempt under way is
    /// abandoned: its delivery stays pending and goes out at the next start).
    pub async fn shut_down(&self) {
        self.shared.outbox.flush().await;
        let _ = self.shared.stop.send(true);
        self.shared.recorder.flush().await;
    }
}

impl Shared {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Sub>>> {
        self.subs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn subscriptions(&self) -> Vec<Arc<Sub>> {
        self.read().values().cloned().collect()
    }

    fn sub(&self, id: &str) -> Result<Arc<Sub>, WebhookError> {
        self.read()
            .get(id)
            .cloned()
            .ok_or_else(|| WebhookError::NotFound(id.to_string()))
    }

    /// Registers a stored subscription and starts its worker.
    fn add(self: &Arc<Self>, webhook: Webhook) -> Result<(), WebhookError> {
        let keys = RwLock::new(Keys::of(&webhook)?);
        let url = Url::parse(&webhook.url)
            .map_err(|e| WebhookError::Invalid(format!("stored url of {}: {e}", webhook.id)))?;
        let sub = Arc::new(Sub {
            keys,
            url,
            wake: Notify::new(),
            reload: AtomicBool::new(false),
            deleted: AtomicBool::new(false),
            webhook,
        });
        self.subs
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(sub.webhook.id.clone(), sub.clone());
        self.count();
        tokio::spawn(delivery::run(self.clone(), sub));
        Ok(())
    }

    fn count(&self) {
        self.outbox.set_subscriptions(self.read().len());
    }

    fn wake(&self, webhook_id: &str) {
        if let Some(s) = self.read().get(webhook_id) {
            s.wake.notify_one();
        }
    }

    fn note(&self, outcome: Outcome, attempt: &Attempt) {
        let m = &self.metrics;
        Metrics::inc(match outcome {
            Outcome::Delivered => &m.webhook_delivered_total,
            Outcome::Retry { .. } => &m.webhook_failed_attempts_total,
            Outcome::Dead => &m.webhook_dead_total,
            Outcome::Skipped => &m.webhook_skipped_total,
        });
        tracing::debug!(?outcome, status = ?attempt.status, error = ?attempt.error, ms = attempt.duration_ms, "webhook attempt");
    }
}

/// Deletes delivered and skipped deliveries past `keep_delivered`, hourly.
async fn prune(shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(3_600));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let keep = i64::try_from(shared.config.keep_delivered.as_millis()).unwrap_or(i64::MAX);
        let before = shared.clock.now_ms().saturating_sub(keep);
        match shared.store.prune_deliveries(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(deleted = n, "webhook outbox pruned"),
            Err(e) => tracing::error!(error = %e, "webhook outbox pruning failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::events::Events;
    use crate::store::SystemClock;
    use crate::store::sqlite::SqliteStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_mark_waited_for_means_every_event_before_it_is_in_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(SystemClock);
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("t.db"), clock.clone())
                .await
                .unwrap(),
        );
        let host = crate::policy::PolicyHost::new(crate::policy::HostConfig::default()).unwrap();
        let shapers = Arc::new(
            Shapers::new(
                host,
                crate::policy::shaper::limits(WebhooksConfig::default().shaper_deadline),
            )
            .await
            .unwrap(),
        );
        let channel = Channel::new();
        let events = Events::new(Some(channel.outbox.clone()));
        let config = WebhooksConfig {
            allow_loopback: true,
            ..WebhooksConfig::default()
        };
        let webhooks = Webhooks::start(
            store.clone(),
            config,
            clock,
            channel,
            shapers,
            Arc::default(),
            None,
        )
        .await
        .unwrap();
        // A receiver that is never there: everything stays pending.
        let sub = webhooks
            .create(Subscribe {
                url: "http://127.0.0.1:9/hook".into(),
                events: vec!["*".into()],
                ..Subscribe::default()
            })
            .await
            .unwrap();
        let outbox = events.outbox().unwrap();
        let before = outbox.mark();
        for i in 0..500 {
            events.emit(|| {
                Event::now(
                    "routing.rule",
                    &format!("req-{i}"),
                    serde_json::json!({}),
                    "t",
                    "u",
                )
            });
        }
        let mark = outbox.mark();
        assert_eq!(mark - before, 500);
        outbox.persisted_to(mark).await;
        let stored = store
            .pending_deliveries(sub.id.clone(), 0, 1_000)
            .await
            .unwrap();
        assert_eq!(stored.len(), 500);
        webhooks.shut_down().await;
    }
}

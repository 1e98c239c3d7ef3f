//! One worker per subscription: its pending deliveries strictly in order (the next waits until
//! the one before is delivered, skipped or dead-lettered), each attempt shaped, signed, sent under
//! the timeout and its outcome handed to the recorder (group commit); failures retried with exponential backoff and jitter until the
//! delivery is older than `max_age`, then dead-lettered. At most `concurrency` attempts run at
//! once across subscriptions.
//!
//! With replicas on one store, every replica runs a worker per subscription, but only the one
//! holding the subscription's lease (`OutboxStore::claim_webhook`) delivers: so each delivery goes out
//! once, still in order. A lease lapses 10 s after its holder stopped renewing it (a killed
//! replica); another replica's worker takes over from the oldest pending delivery. Deliveries
//! queued by other replicas are found by polling every 200 ms.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, header};
use rand::Rng;

use super::{Shared, Sub, sign};
use crate::egress;
use crate::store::UnixMillis;
use crate::store::webhooks::{Attempt, AttemptRecord, Delivery, Outcome};

/// Pending deliveries read from the store at once.
const PAGE: u32 = 64;
/// With replicas: how long a lease on a subscription lasts (renewed at half), and how often a
/// worker looks for deliveries another replica queued, or for a lease to take over.
const LEASE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(200);
/// Longest error text kept per attempt.
const MAX_ERROR_CHARS: usize = 300;

const WEBHOOK_ID: HeaderName = HeaderName::from_static("webhook-id");
const WEBHOOK_TIMESTAMP: HeaderName = HeaderName::from_static("webhook-timestamp");
const WEBHOOK_SIGNATURE: HeaderName = HeaderName::from_static("webhook-signature");

/// The worker loop of one subscription; returns when the gateway stops or the subscription is
/// deleted.
pub(super) async fn run(shared: Arc<Shared>, sub: Arc<Sub>) {
    let mut stop = shared.stop.subscribe();
    let mut queue: VecDeque<Delivery> = VecDeque::new();
    // The highest seq read into `queue`: the next page starts after it, so a delivery whose
    // outcome is still on its way to the store is not read (and sent) again.
    let mut after = 0;
    let mut lease = Lease::default();
    loop {
        if *stop.borrow() || sub.deleted.load(Ordering::Relaxed) {
            return;
        }
        if !lease.hold(&shared, &sub).await {
            // Another replica delivers: start from the store again when this one takes over.
            queue.clear();
            after = 0;
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        if sub.reload.swap(false, Ordering::Relaxed) {
            // Re-driven dead letters are older than what is queued: start again from the oldest
            // pending, once every outcome so far is in the store.
            shared.recorder.flush().await;
            queue.clear();
            after = 0;
        }
        let Some(next) = queue.front_mut() else {
            match shared
                .store
                .pending_deliveries(sub.webhook.id.clone(), after, PAGE)
                .await
            {
                Ok(page) if page.is_empty() => {
                    let poll = async {
                        match shared.replica {
                            Some(_) => tokio::time::sleep(POLL).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        () = sub.wake.notified() => {}
                        () = poll => {}
                        _ = stop.changed() => {}
                    }
                }
                Ok(page) => {
                    after = page.last().map_or(after, |d| d.seq);
                    queue.extend(page);
                }
                Err(e) => {
                    tracing::error!(webhook = %sub.webhook.id, error = %e, "webhook worker: reading the outbox failed");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        _ = stop.changed() => {}
                    }
                }
            }
            continue;
        };
        let now = shared.clock.now_ms();
        if next.next_attempt_at > now {
            let wait =
                Duration::from_millis(u64::try_from(next.next_attempt_at - now).unwrap_or(0));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = sub.wake.notified() => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        let record = {
            let Ok(_permit) = shared.permits.acquire().await else {
                return;
            };
            attempt(&shared, &sub, next).await
        };
        let outcome = record.outcome;
        shared.note(outcome, &record.attempt);
        shared.recorder.record(record);
        match outcome {
            Outcome::Retry { next_at } => {
                next.attempts += 1;
                next.next_attempt_at = next_at;
            }
            Outcome::Delivered | Outcome::Dead | Outcome::Skipped => {
                queue.pop_front();
            }
        }
    }
}

/// A worker's lease on its subscription (replicas only).
#[derive(Default)]
struct Lease {
    /// Until when it is held, by this process's clock; `None`: not held.
    until: Option<std::time::Instant>,
}

impl Lease {
    /// Whether this replica may deliver now: always without replicas; else when the lease is
    /// held with more than half of it left, or was just claimed or renewed.
    async fn hold(&mut self, shared: &Shared, sub: &Sub) -> bool {
        let Some(replica) = &shared.replica else {
            return true;
        };
        let now = std::time::Instant::now();
        if self.until.is_some_and(|t| t > now + LEASE / 2) {
            return true;
        }
        let lease_ms = i64::try_from(LEASE.as_millis()).unwrap_or(i64::MAX);
        let until = shared.clock.now_ms().saturating_add(lease_ms);
        let claimed = shared
            .store
            .claim_webhook(sub.webhook.id.clone(), replica.clone(), until)
            .await;
        match claimed {
            Ok(true) => {
                if self.until.is_none_or(|t| t <= now) {
                    // Newly held: outcomes another holder recorded are in the store by now,
                    // except this replica's own; flush those before reading.
                    shared.recorder.flush().await;
                }
                self.until = Some(now + LEASE);
                true
            }
            Ok(false) => {
                self.until = None;
                false
            }
            Err(e) => {
                tracing::warn!(webhook = %sub.webhook.id, error = %e, "webhook lease: the store failed");
                // Keep delivering only while the lease surely holds.
                self.until.is_some_and(|t| t > now)
            }
        }
    }
}

/// One attempt at `d`, and what it decided.
async fn attempt(shared: &Shared, sub: &Sub, d: &Delivery) -> AttemptRecord {
    let started = shared.clock.now_ms();
    let t0 = std::time::Instant::now();
    let finish = |status: Option<u16>, error: Option<String>, outcome: Outcome| AttemptRecord {
        seq: d.seq,
        attempt: Attempt {
            at: started,
            duration_ms: u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX),
            status,
            error: error.map(|e| e.chars().take(MAX_ERROR_CHARS).collect()),
        },
        outcome,
    };

    // 1. The body the receiver gets: the event as is, or as the subscription's shaper makes it.
    let (body, content_type, mut headers) = match &sub.webhook.shaper {
        None => (
            Bytes::from(d.payload.clone().into_bytes()),
            HeaderValue::from_static("application/json"),
            HeaderMap::new(),
        ),
        Some(name) => match super::shape::shape(shared, name, d, sub.url.as_str()).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                return finish(
                    None,
                    Some("the shaper chose not to deliver".into()),
                    Outcome::Skipped,
                );
            }
            // Never sent unshaped: straight to the dead-letter queue (re-drive after a fix).
            Err(e) => return finish(None, Some(format!("shaper failed: {e}")), Outcome::Dead),
        },
    };

    // 2. Signed after shaping: what is signed is exactly what is sent.
    let timestamp = started.div_euclid(1_000);
    // During a rotation's grace both secrets sign (space-separated, as the scheme allows).
    let signature = {
        let keys = sub
            .keys
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut sig = sign::signature(&keys.current, &d.event_id, timestamp, &body);
        if let Some((old, until)) = &keys.previous
            && started < *until
        {
            sig.push(' ');
            sig.push_str(&sign::signature(old, &d.event_id, timestamp, &body));
        }
        sig
    };
    for (name, value) in [
        (WEBHOOK_ID, d.event_id.clone()),
        (WEBHOOK_TIMESTAMP, timestamp.to_string()),
        (WEBHOOK_SIGNATURE, signature),
    ] {
        match HeaderValue::from_str(&value) {
            Ok(v) => {
                headers.insert(name, v);
            }
            Err(_) => {
                return finish(
                    None,
                    Some("event id not a valid header".into()),
                    Outcome::Dead,
                );
            }
        }
    }
    headers.insert(header::CONTENT_TYPE, content_type);

    // 3. Sent under the timeout; only a 2xx counts as accepted.
    let sent = shared
        .client
        .post(sub.url.clone())
        .headers(headers)
        .body(body)
        .send()
        .await;
    let (status, error) = match sent {
        Ok(r) if r.status().is_success() => {
            return finish(Some(r.status().as_u16()), None, Outcome::Delivered);
        }
        Ok(r) => (
            Some(r.status().as_u16()),
            format!("the receiver answered {}", r.status()),
        ),
        Err(e) => {
            if let Some(refused) = egress::refused_in(&e) {
                return finish(
                    None,
                    Some(format!("destination refused: {refused}")),
                    Outcome::Dead,
                );
            }
            (None, describe(&e))
        }
    };
    let next_at = started.saturating_add(backoff_ms(shared, d.attempts));
    let max_age = i64::try_from(shared.config.max_age.as_millis()).unwrap_or(i64::MAX);
    let outcome = if next_at.saturating_sub(d.age_from) > max_age {
        Outcome::Dead
    } else {
        Outcome::Retry { next_at }
    };
    finish(status, Some(error), outcome)
}

/// The delay before retry number `attempts + 1`: `retry_initial · 2^attempts`, capped at
/// `retry_max`, with jitter (a uniform draw from its upper half) so receivers that come back are
/// not hit by every sender at once.
fn backoff_ms(shared: &Shared, attempts: u32) -> UnixMillis {
    let initial = u64::try_from(shared.config.retry_initial.as_millis()).unwrap_or(u64::MAX);
    let max = u64::try_from(shared.config.retry_max.as_millis()).unwrap_or(u64::MAX);
    let full = initial
        .saturating_mul(1u64 << attempts.min(40))
        .min(max)
        .max(1);
    let jittered = rand::rng().random_range(full.div_ceil(2)..=full);
    i64::try_from(jittered).unwrap_or(i64::MAX)
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        let mut msg = String::from("could not connect");
        let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
        while let Some(s) = cur {
            msg = format!("could not connect: {s}");
            cur = s.source();
        }
        msg
    } else {
        e.to_string()
    }
}

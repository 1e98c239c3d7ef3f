//! The shared ledger's side of [`Budgets`] (replicas, `[shared] backend = "redis"`): reserving
//! on Redis (loading scopes no replica has loaded yet from the store) in this replica's lease,
//! drawing on the headroom the lease holds without a round trip while it lasts, and the settler —
//! one task writing settlements and releases in batches, one script call each, thresholds
//! announced from what the script answers, leases renewed while they hold anything. A
//! reservation not yet settled and headroom not yet drawn only hold more than will be spent, so
//! a batch may be late to free a budget, never let it be overspent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::{BudgetError, Budgets, ChargeTo, Insufficient, Reservation};
use crate::metrics::Metrics;
use crate::shared::{LeaseTerms, RedisShared, Reserved, Settlement};
use crate::store::{BudgetScope, Micros, UnixMillis};

/// What the settler writes to the shared ledger, in order.
pub(super) enum Settle {
    One(Box<(Settlement, ChargeTo, [BudgetScope; 2])>),
    /// Headroom given back (a settlement of nothing on the lease).
    GiveBack(Settlement),
    /// Answered once everything sent before it is written.
    Flush(oneshot::Sender<()>),
}

/// The lease terms: a lease lives 10 s unless renewed (a dead replica's headroom is back within
/// that); headroom is leased only while what is left covers 64 more requests like the one
/// asking, and at most 16 requests' worth — so near a budget's end every request asks Redis, and
/// no replica holds headroom another could be refused for.
pub(super) const TERMS: LeaseTerms = LeaseTerms {
    ttl: Duration::from_secs(10),
    tail: 64,
    most: 16,
};

/// Headroom is drawn for half the lease's life at most, then asked for again (which renews it);
/// the settler renews leases with requests in flight every quarter.
const DRAW_FOR: Duration = Duration::from_secs(5);
const RENEW_EVERY: Duration = Duration::from_millis(2_500);

/// What this replica holds of one scope's lease.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// Headroom not yet drawn (`unlimited`: the scope had no limit when last asked).
    left: Micros,
    unlimited: bool,
    /// Drawing stops then (the lease is asked for again).
    until: Option<Instant>,
    /// Requests reserved in the lease and not yet settled (the lease is renewed while any are).
    in_flight: u64,
}

impl Held {
    fn covers(&self, amount: Micros, now: Instant) -> bool {
        self.until.is_some_and(|u| u > now) && (self.unlimited || self.left >= amount)
    }

    /// The headroom, taken to be given back.
    fn take(&mut self) -> Micros {
        self.until = None;
        self.unlimited = false;
        std::mem::take(&mut self.left)
    }
}

/// This replica's side of its leases, by scope name.
#[derive(Debug, Default)]
pub(super) struct Leases(Mutex<HashMap<String, Held>>);

impl Leases {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Draws `amount` on every scope's headroom if all of them cover it.
    fn draw(&self, names: &[String; 2], amount: Micros) -> bool {
        let now = Instant::now();
        let mut held = self.lock();
        if !names
            .iter()
            .all(|n| held.get(n).is_some_and(|h| h.covers(amount, now)))
        {
            return false;
        }
        for n in names {
            if let Some(h) = held.get_mut(n) {
                if !h.unlimited {
                    h.left -= amount;
                }
                h.in_flight += 1;
            }
        }
        true
    }

    /// Every scope's headroom, taken to be given back by the next acquire.
    fn take(&self, names: &[String; 2]) -> [Micros; 2] {
        let mut held = self.lock();
        names
            .each_ref()
            .map(|n| held.get_mut(n).map_or(0, Held::take))
    }

    /// An acquire's answer: the request in flight, the headroom leased beside it.
    fn granted(&self, names: &[String; 2], extra: &[Option<i64>], asked_at: Instant) {
        let mut held = self.lock();
        for (n, extra) in names.iter().zip(extra) {
            let h = held.entry(n.clone()).or_default();
            h.in_flight += 1;
            match extra {
                None => h.unlimited = true,
                Some(e) => {
                    h.unlimited = false;
                    h.left += e;
                }
            }
            // This acquire renewed the whole lease: everything held may be drawn until then.
            let until = asked_at + DRAW_FOR;
            h.until = Some(h.until.map_or(until, |u| u.max(until)));
        }
    }

    fn settled(&self, names: &[String; 2]) {
        let mut held = self.lock();
        for n in names {
            if let Some(h) = held.get_mut(n) {
                h.in_flight = h.in_flight.saturating_sub(1);
            }
        }
    }

    /// The headroom of every scope `which` selects, taken; scopes left idle forgotten.
    fn take_all(&self, which: impl Fn(&str, &Held) -> bool) -> Vec<(String, Micros)> {
        let mut held = self.lock();
        let out = held
            .iter_mut()
            .filter(|(n, h)| which(n, h))
            .map(|(n, h)| (n.clone(), h.take()))
            .filter(|(_, left)| *left > 0)
            .collect();
        held.retain(|_, h| h.in_flight > 0 || h.until.is_some());
        out
    }

    /// Scopes whose lease holds something still of use: requests in flight, or headroom that
    /// may still be drawn. Renewed by the settler.
    fn holding(&self) -> Vec<String> {
        let now = Instant::now();
        self.lock()
            .iter()
            .filter(|(_, h)| h.in_flight > 0 || (h.left > 0 && h.until.is_some_and(|u| u > now)))
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// Most settlements written in one script call.
const SETTLE_BATCH: usize = 256;

impl Budgets {
    /// The reservation: drawn on this replica's headroom when it covers it, else in Redis (the
    /// headroom given back and leased anew), loading scopes no replica has loaded yet from the
    /// store.
    pub(super) async fn reserve_shared(
        &self,
        redis: &RedisShared,
        scopes: &[BudgetScope; 2],
        amount: Micros,
    ) -> Result<(), BudgetError> {
        let names = scopes.each_ref().map(scope_name);
        if self.leases.draw(&names, amount) {
            Metrics::inc(&self.metrics.shared_budget_draws_total);
            return Ok(());
        }
        Metrics::inc(&self.metrics.shared_budget_acquires_total);
        let unavailable = |e: crate::shared::SharedError| {
            Metrics::inc(&self.metrics.shared_failures_total);
            BudgetError::Unavailable(e.to_string())
        };
        let mut give_back = self.leases.take(&names);
        // Twice at most: the second attempt finds every scope loaded.
        for _ in 0..2 {
            let asked_at = Instant::now();
            let answer = redis
                .acquire(&names, amount, &give_back, TERMS)
                .await
                .map_err(unavailable)?;
            give_back = [0, 0];
            match answer {
                Reserved::Admitted(extra) => {
                    self.leases.granted(&names, &extra, asked_at);
                    return Ok(());
                }
                Reserved::Insufficient { index, remaining } => {
                    return Err(BudgetError::Insufficient(Insufficient {
                        scope: scopes[index.min(1)].clone(),
                        needed: amount,
                        remaining: remaining.max(0),
                    }));
                }
                Reserved::Unloaded(missing) => {
                    for i in missing {
                        let scope = &scopes[i.min(1)];
                        let state = self
                            .store
                            .budget(scope.clone())
                            .await
                            .map_err(|e| BudgetError::Unavailable(e.to_string()))?;
                        let (limit, spent) =
                            state.map_or((None, 0), |s| (s.limit, s.spent + s.reserved));
                        redis
                            .load(&scope_name(scope), limit, spent, &self.config.thresholds)
                            .await
                            .map_err(unavailable)?;
                    }
                }
            }
        }
        Err(BudgetError::Unavailable(
            "the shared budget counters were not loaded".into(),
        ))
    }

    /// Queues a reservation's settlement (`actual` spent, `tokens` counted; 0 and 0: released)
    /// for the settler's next batch.
    pub(super) fn settle_shared(
        self: &Arc<Self>,
        r: &Reservation,
        actual: Micros,
        tokens: u64,
        at: UnixMillis,
    ) {
        let settlement = Settlement {
            scopes: r.scopes.each_ref().map(scope_name),
            reserved: [r.amount, r.amount],
            actual,
            tokens,
            day: crate::access::quota::day_of(at),
        };
        self.leases.settled(&settlement.scopes);
        let job = Settle::One(Box::new((settlement, r.to.clone(), r.scopes.clone())));
        if self.settler().send(job).is_err() {
            tracing::warn!("the settler has stopped; a shared settlement was not written");
        }
    }

    /// The settler's queue, its task started on first use: settlements written to the shared
    /// ledger in batches, thresholds announced from what the script answers.
    fn settler(self: &Arc<Self>) -> &mpsc::UnboundedSender<Settle> {
        self.settler.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(settle_batches(Arc::downgrade(self), rx));
            tx
        })
    }

    /// Gives back the headroom this replica holds on the scopes `which` selects (all of them
    /// before an admin read; a team's or key's after another replica changed it), through the
    /// settler.
    pub(super) fn give_back(self: &Arc<Self>, which: impl Fn(&str, &Held) -> bool) {
        if self.shared.is_none() {
            return;
        }
        let day = crate::access::quota::day_of(self.clock.now_ms());
        for (name, left) in self.leases.take_all(which) {
            let settlement = Settlement {
                scopes: [name.clone(), name],
                reserved: [left, 0],
                actual: 0,
                tokens: 0,
                day,
            };
            if self.settler().send(Settle::GiveBack(settlement)).is_err() {
                tracing::warn!(
                    "the settler has stopped; leased headroom was not given back (it expires)"
                );
            }
        }
    }

    /// Returns once every settlement sent before it is in the shared ledger (or failed), this
    /// replica's headroom given back first.
    pub async fn flush_settlements(self: &Arc<Self>) {
        self.give_back(|_, _| true);
        if let Some(tx) = self.settler.get() {
            let (ack, done) = oneshot::channel();
            if tx.send(Settle::Flush(ack)).is_ok() {
                let _ = done.await;
            }
        }
    }
}

/// The settler: what is queued, written a batch at a time; a failed batch is logged and counted
/// (its charges are in the store; the live counters reload from it when Redis lost them).
async fn settle_batches(
    budgets: std::sync::Weak<Budgets>,
    mut rx: mpsc::UnboundedReceiver<Settle>,
) {
    let mut jobs = Vec::with_capacity(SETTLE_BATCH);
    let mut renew = tokio::time::interval(RENEW_EVERY);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let received = tokio::select! {
            n = rx.recv_many(&mut jobs, SETTLE_BATCH) => n,
            _ = renew.tick() => {
                let Some(b) = budgets.upgrade() else { return };
                // Headroom past its drawing time, on a scope with no new request: given back.
                let now = Instant::now();
                b.give_back(|_, h| h.until.is_some_and(|u| u <= now));
                renew_leases(&b).await;
                continue;
            }
        };
        if received == 0 {
            return;
        }
        let Some(b) = budgets.upgrade() else { return };
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        for job in jobs.drain(..) {
            match job {
                Settle::One(one) => {
                    let (settlement, to, scopes) = *one;
                    batch.push((settlement, Some((to, scopes))));
                }
                Settle::GiveBack(settlement) => batch.push((settlement, None)),
                Settle::Flush(ack) => acks.push(ack),
            }
        }
        if let (Some(redis), false) = (&b.shared, batch.is_empty()) {
            let settlements: Vec<Settlement> = batch.iter().map(|(s, _)| s.clone()).collect();
            let thresholds = &b.config.thresholds;
            match redis.settle(&settlements, thresholds).await {
                Ok(settled) => {
                    // Two answers per settlement (team, key); give-backs announce nothing.
                    for ((_, charged), pair) in batch.iter().zip(settled.chunks(2)) {
                        let Some((to, scopes)) = charged else {
                            continue;
                        };
                        for (scope, s) in scopes.iter().zip(pair) {
                            for (i, pct) in thresholds.iter().enumerate() {
                                if s.newly & (1 << i) != 0 {
                                    b.emit_threshold(
                                        to,
                                        scope,
                                        *pct,
                                        s.spent,
                                        s.limit.unwrap_or(0),
                                    );
                                }
                            }
                        }
                    }
                }
                Err(e) => {
                    Metrics::inc(&b.metrics.shared_failures_total);
                    tracing::warn!(error = %e, settlements = settlements.len(), "settling on the shared budget failed: the charges are in the store, the live counters reload from it");
                }
            }
        }
        for ack in acks {
            let _ = ack.send(());
        }
    }
}

/// Pushes out the expiry of every lease this replica holds something in (a long stream's
/// reservation stays held however long it runs).
async fn renew_leases(b: &Budgets) {
    let Some(redis) = &b.shared else { return };
    let holding = b.leases.holding();
    if holding.is_empty() {
        return;
    }
    if let Err(e) = redis.renew(&holding, TERMS.ttl).await {
        Metrics::inc(&b.metrics.shared_failures_total);
        tracing::warn!(error = %e, "renewing this replica's budget leases failed");
    }
}

/// A scope's name in the shared ledger.
pub(super) fn scope_name(scope: &BudgetScope) -> String {
    match scope {
        BudgetScope::Team(t) => format!("team:{}", t.0),
        BudgetScope::Key(k) => format!("key:{}", k.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> [String; 2] {
        ["team:t".to_owned(), "key:k".to_owned()]
    }

    #[test]
    fn headroom_is_drawn_while_it_covers_both_scopes_and_given_back_once() {
        let leases = Leases::default();
        let n = names();
        assert!(!leases.draw(&n, 10), "nothing leased yet");
        // Team: 35 of headroom; key: no limit.
        leases.granted(&n, &[Some(35), None], Instant::now());
        assert!(leases.draw(&n, 10) && leases.draw(&n, 10) && leases.draw(&n, 10));
        assert!(!leases.draw(&n, 10), "5 left does not cover 10");
        assert!(leases.draw(&n, 5));
        assert_eq!(leases.take(&n), [0, 0]);
        leases.granted(&n, &[Some(40), None], Instant::now());
        assert_eq!(leases.take(&n), [40, 0], "the undrawn headroom, once");
        assert_eq!(leases.take(&n), [0, 0]);
        assert!(!leases.draw(&n, 1), "taken headroom is not drawn again");
    }

    #[test]
    fn stale_headroom_is_not_drawn_and_in_flight_requests_keep_the_lease_renewed() {
        let leases = Leases::default();
        let n = names();
        let long_ago = Instant::now().checked_sub(DRAW_FOR * 2).unwrap();
        leases.granted(&n, &[Some(100), Some(100)], long_ago);
        assert!(
            !leases.draw(&n, 1),
            "past its drawing time: ask Redis again"
        );
        let mut holding = leases.holding();
        holding.sort();
        assert_eq!(holding, ["key:k", "team:t"], "a request in flight");
        leases.settled(&n);
        assert!(leases.holding().is_empty(), "stale headroom is not renewed");
        // Settled, headroom given back: nothing left to renew, and the entries are forgotten.
        let given: Vec<_> = leases.take_all(|_, _| true);
        assert_eq!(given.len(), 2);
        assert!(leases.holding().is_empty());
        assert!(leases.lock().is_empty());
    }

    #[test]
    fn a_change_gives_back_only_the_scope_it_names() {
        let leases = Leases::default();
        let n = names();
        leases.granted(&n, &[Some(7), Some(9)], Instant::now());
        let given = leases.take_all(|s, _| s == "key:k");
        assert_eq!(given, [("key:k".to_owned(), 9)]);
        assert!(!leases.draw(&n, 1), "the key's headroom is gone");
        assert_eq!(leases.take(&n), [7, 0]);
    }
}

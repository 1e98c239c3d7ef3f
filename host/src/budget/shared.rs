//! The shared ledger's side of [`Budgets`] (replicas, `[shared] backend = "redis"`): reserving
//! on Redis (loading scopes no replica has loaded yet from the store), and the settler — one
//! task writing settlements and releases in batches, one script call each, thresholds announced
//! from what the script answers. A reservation not yet settled only holds more than will be
//! spent, so a batch may be late to free a budget, never let it be overspent.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{BudgetError, Budgets, ChargeTo, Insufficient, Reservation};
use crate::metrics::Metrics;
use crate::shared::{RedisShared, Reserved, Settlement};
use crate::store::{BudgetScope, Micros, UnixMillis};

/// What the settler writes to the shared ledger, in order.
pub(super) enum Settle {
    One(Box<(Settlement, ChargeTo, [BudgetScope; 2])>),
    /// Answered once everything sent before it is written.
    Flush(oneshot::Sender<()>),
}

/// Most settlements written in one script call.
const SETTLE_BATCH: usize = 256;

impl Budgets {
    /// The reservation in Redis, loading scopes no replica has loaded yet from the store.
    pub(super) async fn reserve_shared(
        &self,
        redis: &RedisShared,
        scopes: &[BudgetScope; 2],
        amount: Micros,
    ) -> Result<(), BudgetError> {
        let names = scopes.each_ref().map(scope_name);
        let unavailable = |e: crate::shared::SharedError| {
            Metrics::inc(&self.metrics.shared_failures_total);
            BudgetError::Unavailable(e.to_string())
        };
        // Twice at most: the second attempt finds every scope loaded.
        for _ in 0..2 {
            match redis.reserve(&names, amount).await.map_err(unavailable)? {
                Reserved::Admitted => return Ok(()),
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
            reserved: r.amount,
            actual,
            tokens,
            day: crate::access::quota::day_of(at),
        };
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

    /// Returns once every settlement sent before it is in the shared ledger (or failed).
    pub async fn flush_settlements(&self) {
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
    while rx.recv_many(&mut jobs, SETTLE_BATCH).await > 0 {
        let Some(b) = budgets.upgrade() else { return };
        let mut batch = Vec::new();
        let mut acks = Vec::new();
        for job in jobs.drain(..) {
            match job {
                Settle::One(one) => batch.push(*one),
                Settle::Flush(ack) => acks.push(ack),
            }
        }
        if let (Some(redis), false) = (&b.shared, batch.is_empty()) {
            let settlements: Vec<Settlement> = batch.iter().map(|(s, ..)| s.clone()).collect();
            let thresholds = &b.config.thresholds;
            match redis.settle(&settlements, thresholds).await {
                Ok(settled) => {
                    let per_scope = batch
                        .iter()
                        .flat_map(|(_, to, scopes)| scopes.iter().map(move |s| (to, s)));
                    for ((to, scope), s) in per_scope.zip(settled) {
                        for (i, pct) in thresholds.iter().enumerate() {
                            if s.newly & (1 << i) != 0 {
                                b.emit_threshold(to, scope, *pct, s.spent, s.limit.unwrap_or(0));
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

/// A scope's name in the shared ledger.
pub(super) fn scope_name(scope: &BudgetScope) -> String {
    match scope {
        BudgetScope::Team(t) => format!("team:{}", t.0),
        BudgetScope::Key(k) => format!("key:{}", k.0),
    }
}

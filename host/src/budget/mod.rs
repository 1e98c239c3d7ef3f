//! Budgets: money per team and per key, from model prices × real usage, never exceeded.
//!
//! The embedded back end keeps each scope's counters in memory (the ledger, loaded from the
//! store on first use) and persists every settlement through the [`Charger`]. Admission
//! **reserves** the worst case (prompt tokens + `max_tokens`, or `budgets.default_max_tokens`)
//! on the team and the key at once, all or none, under one lock: no interleaving of requests can
//! hold more than a budget. Completion **settles** to the actual usage — streamed requests and
//! abandoned streams included (docs/LIMITS.md). Crossing a configured share of a budget emits a
//! `cost.threshold` event, once per threshold.
//!
//! With `[shared] backend = "redis"` the ledger is Redis's instead (`shared::ledger`): one hash
//! per scope that every replica reserves on and settles to in single scripts, so replicas
//! together never hold more than a budget. If Redis fails, `on_failure` decides: refuse (503), or
//! fall back to this replica's own ledger (`shared.rs`).

pub mod charger;
pub mod recover;
mod shared;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;

pub use charger::Charger;

use crate::access::TokenQuota;
use crate::config::{BudgetsConfig, OnFailure};
use crate::domain::ModelConfig;
use crate::events::{Event, Events, Metadata};
use crate::metrics::Metrics;
use crate::shared::{RedisShared, Shared};
use crate::store::{
    BudgetScope, BudgetState, KeyId, Micros, Store, StoreResult, TeamId, UsageRecord,
};
use shared::scope_name;

/// Model prices are per million tokens in the budget currency, and money is counted in
/// millionths of it: so a price *is* micros per token.
pub fn cost(model: &ModelConfig, tokens_in: u64, tokens_out: u64) -> Micros {
    let c = tokens_in as f64 * model.input_cost_per_mtok
        + tokens_out as f64 * model.output_cost_per_mtok;
    // Rounded up: never under-charge. Saturates far beyond any real figure.
    c.ceil().min(i64::MAX as f64) as Micros
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Account {
    limit: Option<Micros>,
    spent: Micros,
    reserved: Micros,
    /// Bit i set: `thresholds[i]` already announced.
    fired: u64,
}

impl Account {
    fn reached(&self, thresholds: &[u32]) -> u64 {
        let Some(limit) = self.limit else { return 0 };
        thresholds
            .iter()
            .enumerate()
            .filter(|(_, t)| reached(self.spent, limit, **t))
            .fold(0, |m, (i, _)| m | (1 << i))
    }
}

/// `spent` is at least `pct` % of `limit` (integer arithmetic; a zero budget is reached at once).
fn reached(spent: Micros, limit: Micros, pct: u32) -> bool {
    i128::from(spent) * 100 >= i128::from(limit) * i128::from(pct)
}

/// Who a request is charged to, and for what.
#[derive(Debug, Clone)]
pub struct ChargeTo {
    pub team_id: TeamId,
    pub key_id: KeyId,
    pub actor: String,
    pub request_id: String,
    pub model: Arc<ModelConfig>,
}

pub struct Budgets {
    ledger: Mutex<HashMap<BudgetScope, Account>>,
    store: Arc<dyn Store>,
    charger: Charger,
    quota: Arc<TokenQuota>,
    events: Events,
    config: BudgetsConfig,
    clock: Arc<dyn crate::store::Clock>,
    /// The ledger every replica shares (`None`: this process's `ledger`).
    shared: Option<Arc<RedisShared>>,
    on_failure: OnFailure,
    metrics: Arc<Metrics>,
    /// Settlements on their way to the shared ledger (started with the first one).
    settler: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<shared::Settle>>,
    /// This replica's side of its leases on the shared ledger.
    leases: shared::Leases,
}

/// A reservation could not be made: this scope's budget cannot cover it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insufficient {
    pub scope: BudgetScope,
    pub needed: Micros,
    pub remaining: Micros,
}

impl Budgets {
    pub fn new(
        store: Arc<dyn Store>,
        charger: Charger,
        quota: Arc<TokenQuota>,
        events: Events,
        config: BudgetsConfig,
        clock: Arc<dyn crate::store::Clock>,
    ) -> Budgets {
        Budgets {
            ledger: Mutex::default(),
            store,
            charger,
            quota,
            events,
            config,
            clock,
            shared: None,
            on_failure: OnFailure::Closed,
            metrics: Arc::default(),
            settler: std::sync::OnceLock::new(),
            leases: shared::Leases::default(),
        }
    }

    /// Keeps the ledger in Redis when `[shared]` says so.
    pub fn shared(mut self, shared: &Shared, metrics: Arc<Metrics>) -> Budgets {
        if let Shared::Redis(r) = shared {
            self.shared = Some(r.clone());
            self.on_failure = r.on_failure();
        }
        self.metrics = metrics;
        self
    }

    pub fn currency(&self) -> &str {
        &self.config.currency
    }

    pub fn default_max_tokens(&self) -> u32 {
        self.config.default_max_tokens
    }

    pub fn charger(&self) -> &Charger {
        &self.charger
    }

    /// Holds `amount` against the team's and the key's budgets, all or none.
    pub async fn reserve(
        self: &Arc<Self>,
        to: ChargeTo,
        prompt_tokens: u64,
        amount: Micros,
    ) -> Result<Reservation, BudgetError> {
        let scopes = [
            BudgetScope::Team(to.team_id.clone()),
            BudgetScope::Key(to.key_id.clone()),
        ];
        if let Some(redis) = &self.shared {
            match self.reserve_shared(redis, &scopes, amount).await {
                Ok(()) => {
                    return Ok(Reservation {
                        budgets: self.clone(),
                        to,
                        scopes,
                        amount,
                        prompt_tokens,
                        shared: true,
                        done: false,
                    });
                }
                Err(BudgetError::Unavailable(why)) if self.on_failure == OnFailure::Open => {
                    Metrics::inc(&self.metrics.shared_fail_open_total);
                    tracing::warn!(error = %why, "shared budgets unavailable: this replica's own ledger applies");
                }
                Err(e) => return Err(e),
            }
        }
        self.load(&scopes).await?;
        {
            let mut ledger = self.lock();
            for scope in &scopes {
                let a = ledger.get(scope).copied().unwrap_or_else(unlimited);
                if let Some(limit) = a.limit {
                    let remaining = limit - a.spent - a.reserved;
                    if amount > remaining {
                        return Err(BudgetError::Insufficient(Insufficient {
                            scope: scope.clone(),
                            needed: amount,
                            remaining: remaining.max(0),
                        }));
                    }
                }
            }
            for scope in &scopes {
                ledger
                    .entry(scope.clone())
                    .or_insert_with(unlimited)
                    .reserved += amount;
            }
        }
        Ok(Reservation {
            budgets: self.clone(),
            to,
            scopes,
            amount,
            prompt_tokens,
            shared: false,
            done: false,
        })
    }

    /// A scope's counters: the ledger's if it is loaded, else the store's.
    pub async fn state(self: &Arc<Self>, scope: &BudgetScope) -> StoreResult<Option<BudgetState>> {
        // This replica's settlements first: a client reads its own spend.
        self.flush_settlements().await;
        if let Some(redis) = &self.shared
            && let Ok(Some(c)) = redis.counters(&scope_name(scope)).await
        {
            return Ok(Some(BudgetState {
                limit: c.limit,
                spent: c.spent,
                reserved: c.reserved,
            }));
        }
        if let Some(a) = self.lock().get(scope) {
            return Ok(Some(BudgetState {
                limit: a.limit,
                spent: a.spent,
                reserved: a.reserved,
            }));
        }
        self.store.budget(scope.clone()).await
    }

    /// After the store's limit changed (admin API): the ledger follows, reservations kept;
    /// thresholds are re-armed against the new limit.
    pub async fn set_limit(self: &Arc<Self>, scope: &BudgetScope, limit: Option<Micros>) {
        self.changed(scope);
        if let Some(a) = self.lock().get_mut(scope) {
            a.limit = limit;
            a.fired = a.reached(&self.config.thresholds);
        }
        if let Some(redis) = &self.shared
            && let Err(e) = redis
                .set_limit(&scope_name(scope), limit, &self.config.thresholds)
                .await
        {
            Metrics::inc(&self.metrics.shared_failures_total);
            tracing::warn!(error = %e, "the shared budget limit could not follow the store's");
        }
    }

    /// Another replica changed this team or key (its limit, perhaps): the headroom this replica
    /// leased on it is given back, so the next request asks Redis under the new terms.
    pub fn changed(self: &Arc<Self>, scope: &BudgetScope) {
        let name = shared::scope_name(scope);
        self.give_back(|n, _| n == name);
    }

    /// After a team or key was deleted, or a rotation moved spend to a successor.
    pub async fn forget(&self, scope: &BudgetScope) {
        self.lock().remove(scope);
        if let Some(redis) = &self.shared
            && let Err(e) = redis.forget(&scope_name(scope)).await
        {
            Metrics::inc(&self.metrics.shared_failures_total);
            tracing::warn!(error = %e, "forgetting shared budget counters failed");
        }
    }

    async fn load(&self, scopes: &[BudgetScope]) -> Result<(), BudgetError> {
        let missing: Vec<BudgetScope> = {
            let ledger = self.lock();
            scopes
                .iter()
                .filter(|s| !ledger.contains_key(s))
                .cloned()
                .collect()
        };
        for scope in missing {
            let state = self
                .store
                .budget(scope.clone())
                .await
                .map_err(|e| BudgetError::Unavailable(e.to_string()))?;
            let mut a = state.map_or_else(unlimited, |s| Account {
                limit: s.limit,
                // Reservations of a stopped process are not this process's: its in-memory
                // reservations start from zero.
                spent: s.spent + s.reserved,
                reserved: 0,
                fired: 0,
            });
            a.fired = a.reached(&self.config.thresholds);
            self.lock().entry(scope).or_insert(a);
        }
        Ok(())
    }

    /// Moves `reserved` out and `actual` in on every scope; announces thresholds crossed. On the
    /// shared ledger the settlement is queued for the settler's next batch.
    fn settle(&self, r: &Reservation, tokens_in: u64, tokens_out: u64) -> UsageRecord {
        let actual = cost(&r.to.model, tokens_in, tokens_out);
        let at = self.clock.now_ms();
        let tokens = tokens_in + tokens_out;
        match (&self.shared, r.shared) {
            (Some(_), true) => {
                self.quota.add_here(&r.to.key_id, &r.to.team_id, tokens, at);
                r.budgets.settle_shared(r, actual, tokens, at);
            }
            _ => {
                self.settle_local(r, actual);
                self.quota.add(&r.to.key_id, &r.to.team_id, tokens, at);
            }
        }
        UsageRecord {
            at,
            team_id: r.to.team_id.clone(),
            key_id: r.to.key_id.clone(),
            actor: r.to.actor.clone(),
            model: r.to.model.id.0.clone(),
            tokens_in,
            tokens_out,
            spend: actual,
            request_id: Some(r.to.request_id.clone()),
        }
    }

    fn settle_local(&self, r: &Reservation, actual: Micros) {
        let mut crossed = Vec::new();
        {
            let mut ledger = self.lock();
            for scope in &r.scopes {
                let a = ledger.entry(scope.clone()).or_insert_with(unlimited);
                a.reserved = (a.reserved - r.amount).max(0);
                a.spent = a.spent.saturating_add(actual);
                let now = a.reached(&self.config.thresholds);
                let new = now & !a.fired;
                a.fired |= now;
                for (i, pct) in self.config.thresholds.iter().enumerate() {
                    if new & (1 << i) != 0 {
                        crossed.push((scope.clone(), *pct, a.spent, a.limit.unwrap_or(0)));
                    }
                }
            }
        }
        for (scope, pct, spent, limit) in crossed {
            self.emit_threshold(&r.to, &scope, pct, spent, limit);
        }
    }

    fn emit_threshold(
        &self,
        to: &ChargeTo,
        scope: &BudgetScope,
        pct: u32,
        spent: Micros,
        limit: Micros,
    ) {
        let (kind, id) = match scope {
            BudgetScope::Team(t) => ("team", t.0.as_str()),
            BudgetScope::Key(k) => ("key", k.0.as_str()),
        };
        self.events.emit(|| Event {
            id: crate::events::new_id(),
            event: "cost.threshold",
            timestamp: crate::journal::format_utc(std::time::SystemTime::now()),
            request_id: Some(to.request_id.clone()),
            details: json!({
                "scope": kind,
                "scope_id": id,
                "threshold": pct,
                "spend": units(spent),
                "budget": units(limit),
                "currency": self.config.currency,
            }),
            metadata: Metadata {
                team_id: Some(to.team_id.0.clone()),
                user_id: Some(to.actor.clone()),
            },
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BudgetScope, Account>> {
        self.ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn unlimited() -> Account {
    Account {
        limit: None,
        spent: 0,
        reserved: 0,
        fired: 0,
    }
}

/// Micros as currency units (for people: API answers and events).
pub fn units(m: Micros) -> f64 {
    m as f64 / 1_000_000.0
}

/// Currency units as given by people into micros (rounded to the nearest micro).
pub fn micros(units: f64) -> Option<Micros> {
    (0.0..9.0e12)
        .contains(&units)
        .then(|| (units * 1_000_000.0).round() as Micros)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("budget exhausted")]
    Insufficient(Insufficient),
    #[error("budgets cannot be checked right now: {0}")]
    Unavailable(String),
}

/// Money held for one request until it settles. Settle it with the real usage, or release it
/// when the upstream never ran; dropped unsettled (the client went away while the upstream
/// worked), it is charged for the prompt, which the upstream had.
pub struct Reservation {
    budgets: Arc<Budgets>,
    to: ChargeTo,
    scopes: [BudgetScope; 2],
    amount: Micros,
    prompt_tokens: u64,
    /// Made on the shared ledger (Redis), not this process's.
    shared: bool,
    done: bool,
}

impl Reservation {
    pub fn amount(&self) -> Micros {
        self.amount
    }

    pub fn prompt_tokens(&self) -> u64 {
        self.prompt_tokens
    }

    /// The model whose prices the amount was reserved at.
    pub fn model(&self) -> &Arc<ModelConfig> {
        &self.to.model
    }

    /// Charges the real usage: settled and queued now; the returned future completes when the
    /// charge is durable in the store.
    pub fn settle_then_wait(
        mut self,
        tokens_in: u64,
        tokens_out: u64,
    ) -> impl Future<Output = ()> + Send + use<> {
        self.done = true;
        let record = self.budgets.settle(&self, tokens_in, tokens_out);
        self.budgets.charger.charge_then_wait(record)
    }

    /// Charges the real usage: settled now, the record returned for the caller to make durable
    /// (`pipeline::spend::ride_answer`: carried by the journal entry, or committed while the
    /// answer waits).
    pub fn settle_record(mut self, tokens_in: u64, tokens_out: u64) -> UsageRecord {
        self.done = true;
        self.budgets.settle(&self, tokens_in, tokens_out)
    }

    /// Charges the real usage from synchronous code (end of a stream); persisted by the charger
    /// within its next commit.
    pub fn settle_now(mut self, tokens_in: u64, tokens_out: u64) -> UsageRecord {
        self.done = true;
        let record = self.budgets.settle(&self, tokens_in, tokens_out);
        self.budgets.charger.charge_later(record.clone());
        record
    }

    /// The upstream never produced anything billable (refused, failed): nothing is charged.
    pub fn release(mut self) {
        self.done = true;
        if self.shared {
            // A settlement of nothing: the reservation freed, in order with the others.
            let now = self.budgets.clock.now_ms();
            self.budgets.settle_shared(&self, 0, 0, now);
            return;
        }
        let mut ledger = self.budgets.lock();
        for scope in &self.scopes {
            if let Some(a) = ledger.get_mut(scope) {
                a.reserved = (a.reserved - self.amount).max(0);
            }
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            let record = self.budgets.settle(self, self.prompt_tokens, 0);
            self.budgets.charger.charge_later(record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::store::sqlite::SqliteStore;
    use crate::store::{ManualClock, NewKey, NewTeam};

    const CONFIG: &str = "sovereign_id = \"t\"\nregion = \"r\"\ndefault_model = \"m\"\n\
        [[models]]\nid = \"m\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\ninput_cost_per_mtok = 0.0\noutput_cost_per_mtok = 1000.0\n";

    async fn setup(budget: Micros) -> (tempfile::TempDir, Arc<Budgets>, Events, ChargeTo) {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_800_000_000_000));
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("s.db"), clock.clone())
                .await
                .unwrap(),
        );
        let team = store
            .create_team(NewTeam {
                name: "t".into(),
                budget: Some(budget),
                ..NewTeam::default()
            })
            .await
            .unwrap();
        let key = store
            .create_key(NewKey::new(team.id.clone(), crate::domain::Role::Member))
            .await
            .unwrap();
        let config = Config::parse(CONFIG).unwrap();
        let events = Events::default();
        let (charger, _task) = Charger::start(store.clone(), None);
        let budgets = Arc::new(Budgets::new(
            store,
            charger,
            Arc::default(),
            events.clone(),
            config.budgets.clone(),
            clock,
        ));
        let to = ChargeTo {
            team_id: team.id,
            key_id: key.info.id,
            actor: "alice".into(),
            request_id: "req-1".into(),
            model: config.models[0].clone(),
        };
        (dir, budgets, events, to)
    }

    /// Each settlement of 10 tokens costs 10,000 micros against a budget of 100,000: the 50 %,
    /// 80 % and 100 % thresholds are announced once each, when crossed, in order.
    #[tokio::test]
    async fn thresholds_are_announced_once_each() {
        let (_dir, budgets, events, to) = setup(100_000).await;
        let mut rx = events.subscribe();
        for _ in 0..10 {
            let r = budgets.reserve(to.clone(), 0, 10_000).await.unwrap();
            r.settle_then_wait(0, 10).await;
        }
        // The eleventh cannot be covered.
        let refused = budgets.reserve(to.clone(), 0, 10_000).await;
        assert!(matches!(refused, Err(BudgetError::Insufficient(_))));
        let mut seen = Vec::new();
        while let Ok(e) = rx.try_recv() {
            assert_eq!(e.event, "cost.threshold");
            assert_eq!(e.metadata.user_id.as_deref(), Some("alice"));
            seen.push((
                e.details["scope"].as_str().unwrap().to_string(),
                e.details["threshold"].as_u64().unwrap(),
                e.details["spend"].as_f64().unwrap(),
            ));
        }
        // The key has no budget of its own: only the team's thresholds.
        assert_eq!(
            seen,
            vec![
                ("team".into(), 50, 0.05),
                ("team".into(), 80, 0.08),
                ("team".into(), 100, 0.1)
            ]
        );
        // Raising the budget re-arms the thresholds above the spend.
        budgets
            .set_limit(&BudgetScope::Team(to.team_id.clone()), Some(1_000_000))
            .await;
        let r = budgets.reserve(to.clone(), 0, 10_000).await.unwrap();
        r.release();
        assert!(rx.try_recv().is_err());
    }

    /// Released reservations cost nothing; dropped ones (client gone mid-request) are charged for
    /// the prompt the upstream had.
    #[tokio::test]
    async fn release_and_drop() {
        let (_dir, budgets, _events, to) = setup(1_000_000).await;
        let scope = BudgetScope::Team(to.team_id.clone());
        budgets
            .reserve(to.clone(), 7, 50_000)
            .await
            .unwrap()
            .release();
        let s = budgets.state(&scope).await.unwrap().unwrap();
        assert_eq!((s.spent, s.reserved), (0, 0));
        drop(budgets.reserve(to.clone(), 7, 50_000).await.unwrap());
        let s = budgets.state(&scope).await.unwrap().unwrap();
        // Input is free in this config: the prompt costs 0, but the reservation is gone.
        assert_eq!((s.spent, s.reserved), (0, 0));
        budgets.charger().flush().await;
        let rows = budgets
            .store
            .usage(crate::store::UsageFilter::default())
            .await
            .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].tokens_in, 7);
    }
}

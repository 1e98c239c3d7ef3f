//! Router policies: a component of the `router-policy` world, pre-instantiated once, called in a
//! fresh store per request. Its answers are checked against the candidates before use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::ArcSwapOption;
use wasmtime::Store;

use super::bindings::{self, CallState, ModelInfo, RouterPolicyPre};
use super::pool::{Warm, WarmPool};
use super::{CallLimits, PolicyError, PolicyHost, PoolMode};
use crate::domain::ModelConfig;

/// The world every router component must export.
pub const WORLD: &str = "sovereign:policy/router-policy@0.1.0";
/// Longest `rule` or `policy` name accepted from a router, in bytes.
const MAX_NAME_BYTES: usize = 256;

/// What the host tells a router or a guardrail about a request: the WIT `request-facts` itself,
/// so a call lowers it into the guest without a copy first. Never the prompt.
pub use super::bindings::sovereign::policy::types::RequestFacts as RouteFacts;

/// A model the router may choose, with its live state.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub model: Arc<ModelConfig>,
    pub healthy: bool,
    pub latency_p50_ms: Option<f64>,
}

/// A router's checked answer: every model named is one of the candidates.
#[derive(Debug, Clone)]
pub struct RouterDecision {
    pub model: Arc<ModelConfig>,
    pub fallbacks: Vec<Arc<ModelConfig>>,
    /// The rule that decided, as the policy names it.
    pub rule: String,
    /// The routing policy's name, for `X-Route-Policy`.
    pub policy: String,
}

/// A loaded router policy. Cheap to share (`Arc`); calls run concurrently.
pub struct RouterPolicy {
    host: PolicyHost,
    id: Arc<str>,
    sha256: String,
    pre: RouterPolicyPre<CallState>,
    settings: Arc<HashMap<String, String>>,
    limits: CallLimits,
    /// The policy name the smoke call answered with (`None` if it rejected the golden request).
    name: Option<Arc<str>>,
    /// Idle instances, with [`PoolMode::Warm`].
    warm: Option<WarmPool<bindings::RouterPolicy>>,
    /// The WIT candidates of the last call, rebuilt only when the candidates change (which
    /// models, their health or latency): most calls offer the same models in the same state.
    offered: ArcSwapOption<Offered>,
}

/// Candidates as last offered: what they were made from (holding each model, so its address is
/// not reused while compared), and their WIT form.
struct Offered {
    from: Vec<Candidate>,
    wit: Vec<ModelInfo>,
}

impl Offered {
    fn of(candidates: &[Candidate]) -> Offered {
        Offered {
            from: candidates.to_vec(),
            wit: candidates.iter().map(ModelInfo::from).collect(),
        }
    }

    fn is_for(&self, candidates: &[Candidate]) -> bool {
        self.from.len() == candidates.len()
            && self.from.iter().zip(candidates).all(|(a, b)| {
                Arc::ptr_eq(&a.model, &b.model)
                    && a.healthy == b.healthy
                    && a.latency_p50_ms == b.latency_p50_ms
            })
    }
}

impl std::fmt::Debug for RouterPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouterPolicy")
            .field("id", &self.id)
            .field("sha256", &self.sha256)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl RouterPolicy {
    /// Compiles (or reads from the cache), checks the exports against the `router-policy` world,
    /// pre-instantiates, and smoke-calls the policy with golden input under `limits`, all on a
    /// blocking thread. `candidates` are the models the smoke call offers; the golden request is an
    /// English `auto-router` request of 100 tokens. A smoke call that fails, answers badly or
    /// rejects with a 5xx status fails the load; a 4xx rejection is a legitimate answer.
    pub async fn load(
        host: &PolicyHost,
        id: &str,
        wasm: Vec<u8>,
        settings: HashMap<String, String>,
        limits: CallLimits,
        candidates: Vec<Candidate>,
    ) -> Result<RouterPolicy, PolicyError> {
        let host = host.clone();
        let id: Arc<str> = id.into();
        let mut policy = tokio::task::spawn_blocking(move || {
            Self::load_blocking(host, id, &wasm, settings, limits)
        })
        .await
        .map_err(|e| PolicyError::Cancelled(e.to_string()))??;
        policy.name = policy.smoke_call(&candidates).await?.map(Arc::from);
        Ok(policy)
    }

    fn load_blocking(
        host: PolicyHost,
        id: Arc<str>,
        wasm: &[u8],
        settings: HashMap<String, String>,
        limits: CallLimits,
    ) -> Result<RouterPolicy, PolicyError> {
        let started = Instant::now();
        let (sha256, instance_pre) = super::call::compile_and_link(&host, wasm, WORLD)?;
        let pre =
            RouterPolicyPre::new(instance_pre).map_err(|e| super::call::wrong_world(WORLD, &e))?;
        tracing::info!(policy = &*id, sha256, elapsed = ?started.elapsed(), "router policy compiled");
        let limits = super::call::capped(&host, limits);
        let warm = (limits.pool == PoolMode::Warm).then(|| WarmPool::new(limits.warm_max_calls));
        Ok(RouterPolicy {
            host: host.clone(),
            id,
            sha256,
            pre,
            settings: Arc::new(settings),
            limits,
            name: None,
            warm,
            offered: ArcSwapOption::empty(),
        })
    }

    /// Returns the policy name the router answered with, if it routed the golden request.
    async fn smoke_call(&self, candidates: &[Candidate]) -> Result<Option<String>, PolicyError> {
        let facts = RouteFacts {
            request_id: "smoke-call".into(),
            team_id: "smoke".into(),
            key_id: "smoke".into(),
            actor_id: "smoke".into(),
            requested_model: crate::domain::AUTO_ROUTER.into(),
            language: "en".into(),
            prompt_tokens: 100,
            ..RouteFacts::default()
        };
        match self.route(&facts, candidates).await {
            Ok(d) => Ok(Some(d.policy)),
            Err(PolicyError::Rejected { status, .. }) if (400..500).contains(&status) => Ok(None),
            Err(e) => Err(PolicyError::SmokeCall {
                policy: self.id.to_string(),
                cause: Box::new(e),
            }),
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// sha256 of the component, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The policy name the router gave in its smoke call (what `X-Route-Policy` will show).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub fn limits(&self) -> CallLimits {
        self.limits
    }

    /// With a warm pool: (instances made, calls served by a reused instance, idle instances).
    pub fn pool_stats(&self) -> Option<(u64, u64, usize)> {
        self.warm.as_ref().map(WarmPool::stats)
    }

    /// Asks the policy to route a request, under the memory cap and the deadline: in a fresh
    /// instance and store, dropped afterwards whatever happened, or (warm pool) in an idle
    /// instance, given back only if the call returned normally.
    ///
    /// The guest runs on the calling task. Every epoch tick it yields to the runtime, so a
    /// looping guest cannot hold a worker thread, and once the deadline has passed it is stopped.
    pub async fn route(
        &self,
        facts: &RouteFacts,
        candidates: &[Candidate],
    ) -> Result<RouterDecision, PolicyError> {
        let offered = match self.offered.load_full() {
            Some(o) if o.is_for(candidates) => o,
            _ => {
                let o = Arc::new(Offered::of(candidates));
                self.offered.store(Some(o.clone()));
                o
            }
        };
        let budget = self.host.ticks(self.limits.deadline);
        let mut w = match self.warm.as_ref().and_then(|p| p.take_for(budget)) {
            Some(w) => w,
            // A new instance's call shares one budget with its instantiation, as before pools.
            None => self.instantiate(budget).await?,
        };
        let answer = match w
            .instance
            .sovereign_policy_router()
            .call_route(&mut w.store, facts, &offered.wit)
            .await
        {
            Ok(a) => a,
            // The store is dropped here: never entered again after a trap.
            Err(e) => return Err(self.classify(&w.store, e, false)),
        };
        if let Some(pool) = &self.warm {
            pool.give_back(w);
        }
        match answer {
            Ok(decision) => self.check(decision, candidates),
            Err(r) => {
                if !(400..600).contains(&r.status) {
                    return Err(self
                        .bad_answer(format!("rejection status {} is not a 4xx or 5xx", r.status)));
                }
                Err(PolicyError::Rejected {
                    policy: self.id.to_string(),
                    status: r.status,
                    code: truncate(r.code, MAX_NAME_BYTES),
                    message: truncate(r.message, 1024),
                })
            }
        }
    }

    /// A new store (limiter, epoch callback) and instance. Instantiation runs under the first
    /// call's budget (`budget` ticks).
    async fn instantiate(&self, budget: u64) -> Result<Warm<bindings::RouterPolicy>, PolicyError> {
        let mut store = super::call::new_store(
            &self.host,
            self.id.clone(),
            self.settings.clone(),
            self.limits,
            budget,
        );
        let instance = match self.pre.instantiate_async(&mut store).await {
            Ok(i) => i,
            Err(e) => return Err(self.classify(&store, e, true)),
        };
        if let Some(pool) = &self.warm {
            pool.made_one();
        }
        Ok(Warm {
            store,
            instance,
            calls: 0,
        })
    }

    fn classify(
        &self,
        store: &Store<CallState>,
        e: wasmtime::Error,
        instantiating: bool,
    ) -> PolicyError {
        super::call::classify(&self.id, self.limits, store, e, instantiating)
    }

    fn bad_answer(&self, reason: String) -> PolicyError {
        PolicyError::BadAnswer {
            policy: self.id.to_string(),
            reason,
        }
    }

    /// Every model named must be a candidate; names must be short.
    fn check(
        &self,
        d: bindings::RouteDecision,
        candidates: &[Candidate],
    ) -> Result<RouterDecision, PolicyError> {
        let find = |id: &str| {
            candidates
                .iter()
                .find(|c| c.model.id.0 == id)
                .map(|c| c.model.clone())
                .ok_or_else(|| {
                    self.bad_answer(format!(
                        "`{}` is not a candidate model",
                        truncate(id.to_string(), 64)
                    ))
                })
        };
        let model = find(&d.model)?;
        let fallbacks = d
            .fallbacks
            .iter()
            .map(|f| find(f))
            .collect::<Result<Vec<_>, _>>()?;
        if d.rule.len() > MAX_NAME_BYTES || d.policy.len() > MAX_NAME_BYTES {
            return Err(self.bad_answer(format!(
                "rule and policy names must be at most {MAX_NAME_BYTES} bytes"
            )));
        }
        Ok(RouterDecision {
            model,
            fallbacks,
            rule: d.rule,
            policy: d.policy,
        })
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

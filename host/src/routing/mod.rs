//! The routing step: which configured model serves a request. An explicit model id names the
//! model and bypasses the rules; `auto-router` asks the router policy — a Wasm component (the
//! built-in rules router unless the config names another) — and falls back to the default model
//! when the policy fails. The decision records the policy and rule that made it. The router's
//! versions and hot swap live in [`registry`].

pub mod breaker;
pub mod registry;

use std::sync::Arc;

use crate::config::Config;
use crate::domain::{AUTO_ROUTER, ModelConfig, ModelKind};
use crate::policy::{CallLimits, Candidate, HostConfig, PolicyError, PolicyHost, RouteFacts};
use crate::residency::Boundary;
use crate::upstream::health::Health;
use registry::{PolicyRegistry, WatchedFiles};

/// `X-Route-Policy` when no router policy decided: none is configured, or it failed.
pub const DEFAULT_POLICY: &str = "default";
/// `X-Route-Policy` when the client named a model itself.
pub const EXPLICIT_POLICY: &str = "explicit-model";

#[derive(Debug, Clone)]
pub struct Route {
    pub model: Arc<ModelConfig>,
    /// Models to try, in order, if `model` fails (used by the fallback issue).
    pub fallbacks: Vec<Arc<ModelConfig>>,
    /// The routing policy applied (`X-Route-Policy`).
    pub policy: Arc<str>,
    /// The rule that decided, as the policy names it.
    pub rule: Arc<str>,
}

impl crate::residency::Guarded for Route {
    fn model(&self) -> &Arc<ModelConfig> {
        &self.model
    }

    fn set_model(&mut self, model: Arc<ModelConfig>) {
        self.model = model;
    }

    fn fallbacks_mut(&mut self) -> &mut Vec<Arc<ModelConfig>> {
        &mut self.fallbacks
    }

    fn is_default(&self) -> bool {
        &*self.policy == DEFAULT_POLICY
    }
}

impl Route {
    /// The router policy chose the model (not an explicit model id, not the default fallback):
    /// what a `routing.rule` event reports.
    pub fn decided_by_policy(&self) -> bool {
        &*self.policy != EXPLICIT_POLICY && &*self.policy != DEFAULT_POLICY
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RoutingError {
    #[error("The model `{0}` does not exist or you do not have access to it.")]
    UnknownModel(String),
    #[error("The model `{model}` is {actual} model; this endpoint needs {expected} model.")]
    WrongKind {
        model: String,
        actual: &'static str,
        expected: &'static str,
    },
    #[error("`auto-router` routes chat completions only; name an embedding model.")]
    AutoNotSupported,
    /// The router policy refused the request (its status is 4xx).
    #[error("{message}")]
    Rejected {
        status: u16,
        code: String,
        message: String,
    },
}

/// The routing step, with its policy versions when routing is configured.
pub struct Router {
    registry: Option<Arc<PolicyRegistry>>,
    breaker: breaker::Breaker,
}

impl Router {
    /// Loads the configured router policy: compiled off the runtime, checked against its world
    /// and smoke-called before the gateway serves a request. Starts watching the configured
    /// files (reloaded on change, [`registry::watch`]).
    pub async fn from_config(config: &Config) -> Result<Router, PolicyError> {
        let Some(r) = &config.routing else {
            return Ok(Router {
                registry: None,
                breaker: breaker::Breaker::default(),
            });
        };
        let host = PolicyHost::new(HostConfig {
            cache_dir: r.cache_dir.clone(),
            ..HostConfig::default()
        })?;
        let wasm: Arc<[u8]> = match &r.component {
            Some((_, bytes)) => bytes.clone(),
            None => Arc::from(policy_artifacts::RULES_ROUTER_COMPONENT),
        };
        let limits = CallLimits {
            deadline: r.deadline,
            memory_bytes: r.memory_bytes,
            pool: r.pool,
            warm_max_calls: r.warm_max_calls,
        };
        let registry = Arc::new(
            PolicyRegistry::new(
                host,
                limits,
                candidates(config, &Boundary::OPEN, |_| true),
                wasm,
                r.document.as_deref().map(Arc::from),
            )
            .await?,
        );
        let files = WatchedFiles {
            document: r.document_path.clone(),
            component: r.component.as_ref().map(|(path, _)| path.clone()),
        };
        registry::watch(&registry, files, registry::FILE_POLL);
        Ok(Router {
            registry: Some(registry),
            breaker: breaker::Breaker::default(),
        })
    }

    /// The router's versions (`None` when routing is not configured).
    pub fn registry(&self) -> Option<&Arc<PolicyRegistry>> {
        self.registry.as_ref()
    }

    /// Chooses the model for a request to an endpoint serving models of `kind`.
    /// The router policy sees only the candidates inside `boundary` (the residency guard,
    /// `crate::residency`, checks the answer again), each marked healthy or not by its circuit
    /// breaker (`health`).
    pub async fn route(
        &self,
        config: &Config,
        facts: &RouteFacts,
        kind: ModelKind,
        boundary: &Boundary<'_>,
        health: &Health,
    ) -> Result<Route, RoutingError> {
        let requested = facts.requested_model.as_str();
        if requested != AUTO_ROUTER {
            let model = lookup(config, requested, kind)?;
            return Ok(Route {
                model,
                fallbacks: Vec::new(),
                policy: EXPLICIT_POLICY.into(),
                rule: EXPLICIT_POLICY.into(),
            });
        }
        if kind != ModelKind::Chat {
            return Err(RoutingError::AutoNotSupported);
        }
        if let Some(registry) = &self.registry {
            // One load per request: a swap meanwhile does not change the version it runs on.
            let active = registry.active();
            let policy = &active.policy;
            let now = std::time::Instant::now();
            let candidates = candidates(config, boundary, |m| health.healthy(&m.id.0, now));
            if candidates.is_empty() || !self.breaker.allow(policy.id(), now) {
                return self.default_route(config, kind);
            }
            match policy.route(facts, &candidates).await {
                Ok(d) => {
                    self.breaker.success(policy.id());
                    return Ok(Route {
                        model: d.model,
                        fallbacks: d.fallbacks,
                        policy: d.policy.into(),
                        rule: d.rule.into(),
                    });
                }
                Err(PolicyError::Rejected {
                    status,
                    code,
                    message,
                    ..
                }) => {
                    // A refusal is the policy working, not failing.
                    self.breaker.success(policy.id());
                    return Err(RoutingError::Rejected {
                        status,
                        code,
                        message,
                    });
                }
                // Fail mode for routers: the default route, never a failed request.
                Err(e) => {
                    tracing::warn!(
                        request_id = %facts.request_id,
                        policy = policy.id(),
                        error = %e,
                        "router policy failed; using the default model"
                    );
                    if self.breaker.failure(policy.id(), now) {
                        tracing::error!(
                            policy = policy.id(),
                            failures = breaker::TRIP_AFTER,
                            cool_down = ?breaker::COOL_DOWN,
                            "router policy tripped off: it failed repeatedly; requests take the \
                             default route until it is tried again (or another version is activated)"
                        );
                    }
                }
            }
        }
        self.default_route(config, kind)
    }

    /// The policy host routing runs on, when routing is configured (other policies share it:
    /// one engine per process).
    pub fn policy_host(&self) -> Option<PolicyHost> {
        self.registry.as_ref().map(|r| r.host().clone())
    }

    /// The crash-loop breaker's state (the admin API reports it).
    pub fn breaker_status(&self) -> breaker::BreakerStatus {
        self.breaker.status(std::time::Instant::now())
    }

    fn default_route(&self, config: &Config, kind: ModelKind) -> Result<Route, RoutingError> {
        Ok(Route {
            model: lookup(config, &config.default_model.0, kind)?,
            fallbacks: Vec::new(),
            policy: DEFAULT_POLICY.into(),
            rule: "default-model".into(),
        })
    }
}

/// The models a router may choose: every chat model, with what the gateway knows of its health
/// (a model whose circuit breaker is open is unhealthy).
fn candidates(
    config: &Config,
    boundary: &Boundary<'_>,
    healthy: impl Fn(&ModelConfig) -> bool,
) -> Vec<Candidate> {
    config
        .models
        .iter()
        .filter(|m| m.kind == ModelKind::Chat && boundary.admits(m))
        .map(|m| Candidate {
            model: m.clone(),
            healthy: healthy(m),
            latency_p50_ms: None,
        })
        .collect()
}

fn lookup(config: &Config, id: &str, kind: ModelKind) -> Result<Arc<ModelConfig>, RoutingError> {
    let model = config
        .model(id)
        .ok_or_else(|| RoutingError::UnknownModel(id.to_string()))?;
    if model.kind != kind {
        let article = |k: ModelKind| match k {
            ModelKind::Chat => "a chat",
            ModelKind::Embedding => "an embedding",
        };
        return Err(RoutingError::WrongKind {
            model: id.to_string(),
            actual: article(model.kind),
            expected: article(kind),
        });
    }
    Ok(model.clone())
}

#[cfg(test)]
mod tests;

//! What the request path and the domain read of [`AppState`], one accessor per part, named for
//! what it is. The store and the replicas' channel are crate-private and named by no endpoint
//! (`api/` and `admin/` read stored records through `stored.rs`; host/tests/it/writers.rs keeps
//! it so); writes of keys, teams, certificate identities, policies and webhook subscriptions go
//! through the services (`services.rs`).

use std::sync::Arc;

use http::HeaderValue;

use super::AppState;
use crate::access::Access;
use crate::budget::Budgets;
use crate::config::Config;
use crate::events::Events;
use crate::facts::FactsEngine;
use crate::journal::Journal;
use crate::metrics::Metrics;
use crate::policy::guardrail::GuardrailSlot;
use crate::policy::retrieval::RetrievalPolicies;
use crate::policy::shaper::Shapers;
use crate::policy::tool::ToolPolicies;
use crate::rag::Library;
use crate::routing::Router;
use crate::shared::Shared;
use crate::store::Store;
use crate::traces::Traces;
use crate::upstream::Upstreams;
use crate::upstream::health::Health;
use crate::webhooks::Webhooks;

impl AppState {
    /// The validated configuration the gateway started with.
    pub fn config(&self) -> &Config {
        &self.0.config
    }

    /// The MCP gateway: the catalogue rule, upstream calls, sessions, the tool-call quota
    /// (its writes go through `AppState::mcp_servers`).
    pub fn mcp(&self) -> &crate::mcp::Mcp {
        &self.0.mcp
    }

    /// Authentication and admission: the key cache, certificate identities, rate limits, quotas.
    pub fn access(&self) -> &Access {
        &self.0.access
    }

    /// Budget reservations, settlements and the charger.
    pub fn budgets(&self) -> &Arc<Budgets> {
        &self.0.budgets
    }

    pub fn events(&self) -> &Events {
        &self.0.events
    }

    /// The request facts (tokens, languages, sensitive data).
    pub fn facts(&self) -> &FactsEngine {
        &self.0.facts
    }

    /// The router policy.
    pub fn router(&self) -> &Router {
        &self.0.router
    }

    /// The guardrail (`[guardrail]`), checked before routing and on answers.
    pub fn guardrail(&self) -> Option<&GuardrailSlot> {
        self.0.guardrail.as_ref()
    }

    /// The named webhook shapers (the built-in `default` and uploads).
    pub fn shapers(&self) -> &Arc<Shapers> {
        &self.0.shapers
    }

    /// The tool policy deciding MCP tool calls (`policy::tool`).
    pub fn tool_policies(&self) -> &ToolPolicies {
        &self.0.tool_policies
    }

    /// The retrieval policy filtering and re-ranking retrieved chunks (`policy::retrieval`).
    pub fn retrieval_policies(&self) -> &RetrievalPolicies {
        &self.0.retrieval_policies
    }

    pub fn upstreams(&self) -> &Upstreams {
        &self.0.upstreams
    }

    /// The document library and retrieval (`[documents]`); `None` when disabled.
    pub fn library(&self) -> Option<&Arc<Library>> {
        self.0.library.as_ref()
    }

    /// Every model's circuit breaker.
    pub fn health(&self) -> &Health {
        &self.0.health
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.0.metrics
    }

    /// OpenTelemetry traces; `None` when off.
    pub fn traces(&self) -> Option<&Traces> {
        self.0.traces.as_ref()
    }

    /// Webhook subscriptions (read), the outbox and delivery.
    pub fn webhooks(&self) -> &Webhooks {
        &self.0.webhooks
    }

    /// The activity journal's appender; `None` when `[journal] enabled = false`.
    pub fn journal(&self) -> Option<&Journal> {
        self.0.journal.as_ref()
    }

    /// This gateway's `sovereign_id`, as a response header value.
    pub fn sovereign_id(&self) -> &HeaderValue {
        &self.0.sovereign_id
    }

    /// Unix time the gateway started (the `created` of listed models).
    pub fn started_unix(&self) -> u64 {
        self.0.started_unix
    }

    /// The admin key start-up created because the store had none: given out once.
    pub fn take_bootstrap_admin_secret(&self) -> Option<String> {
        self.0
            .bootstrap_admin_secret
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// The store, for the pipeline and the gateway's wiring; never named under `api/` or
    /// `admin/` (host/tests/it/writers.rs).
    pub(crate) fn store(&self) -> &Arc<dyn Store> {
        &self.0.store
    }

    /// What replicas share at once: the gateway's wiring listens to it.
    pub(crate) fn shared(&self) -> &Shared {
        &self.0.shared
    }
}

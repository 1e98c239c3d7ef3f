//! The gateway's shared state: [`AppState`], one cheap handle on every subsystem, built once at
//! start (`start.rs` holds the start-up steps: data-directory lock, journal, guardrail) and shut
//! down after the last request. It knows no HTTP route; the pipeline and the endpoints read it
//! through its accessors (`accessors.rs`, `stored.rs`), its parts private to this module.

mod accessors;
mod journal_index;
mod replicas;
mod services;
mod start;
mod stored;
mod tlog_replicas;

pub use stored::{JournalIndex, StoredResponses};

use std::sync::Arc;
use std::time::SystemTime;

use http::HeaderValue;

use crate::access::{Access, AccessParts, LimitClock};
use crate::budget::{Budgets, Charger};
use crate::config::Config;
use crate::events::Events;
use crate::facts::FactsEngine;
use crate::journal::Journal;
use crate::metrics::Metrics;
use crate::routing;
use crate::shared::{Change, Notice, Shared};
use crate::store::{BudgetScope, Clock, KeyId, Store, SystemClock, TeamId};
use crate::upstream::Upstreams;
use crate::upstream::health::Health;
use start::{
    journal_config_revocations, load_guardrail, lock_data_dir, open_journal, private_database,
    retention_task,
};

/// One cheap handle on everything the handlers share.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The parts, private to `state`: the request path and the domain read them through the
/// accessors (`accessors.rs`), endpoints write through the services (`services.rs`).
struct Inner {
    config: Config,
    store: Arc<dyn Store>,
    /// What replicas share at once (`[shared]`): request rates, changes to cached trust.
    shared: Shared,
    access: Access,
    budgets: Arc<Budgets>,
    events: Events,
    facts: FactsEngine,
    router: routing::Router,
    /// The guardrail (`[guardrail]`), checked before routing and on answers.
    guardrail: Option<crate::policy::guardrail::GuardrailSlot>,
    /// The named webhook shapers (the built-in `default` and uploads), for webhook delivery.
    shapers: Arc<crate::policy::shaper::Shapers>,
    /// The tool policy deciding MCP tool calls (the built-in one until one is installed).
    tool_policies: crate::policy::tool::ToolPolicies,
    /// The retrieval policy filtering and re-ranking retrieved chunks (likewise).
    retrieval_policies: crate::policy::retrieval::RetrievalPolicies,
    upstreams: Upstreams,
    /// The document library and retrieval (`[documents]`); `None` when disabled.
    library: Option<Arc<crate::rag::Library>>,
    /// Every model's circuit breaker (passive health, `crate::upstream::health`).
    health: Health,
    metrics: Arc<Metrics>,
    /// OpenTelemetry traces (`[traces]` or the OTLP variables); `None` when off.
    traces: Option<crate::traces::Traces>,
    /// Webhook subscriptions, the outbox and delivery.
    webhooks: crate::webhooks::Webhooks,
    /// The MCP gateway's upstream servers, allowlists, sessions and quota (`[mcp]`).
    mcp: Arc<crate::mcp::Mcp>,
    /// The activity journal's appender; `None` when `[journal] enabled = false`.
    journal: Option<Journal>,
    /// The retention task, stopped at shutdown.
    retention: Option<tokio::task::JoinHandle<()>>,
    /// Replicas: how far this replica's journal was copied into the shared store.
    journal_index: journal_index::Indexer,
    /// Replicas: other replicas' transparency logs mirrored here, and this one's last published
    /// head.
    tlog_mirrors: tlog_replicas::Mirrors,
    sovereign_id: HeaderValue,
    /// Unix time the gateway started (the `created` of listed models).
    started_unix: u64,
    /// Set when start-up created the first admin key: shown to the operator once.
    bootstrap_admin_secret: std::sync::Mutex<Option<String>>,
    /// Held while the gateway runs: one gateway per data directory.
    _data_lock: std::fs::File,
}

/// What [`AppState::with_parts`] can be given instead of the real thing (tests).
pub struct Parts {
    pub clock: Arc<dyn Clock>,
    pub limit_clock: LimitClock,
}

impl Default for Parts {
    fn default() -> Self {
        Parts {
            clock: Arc::new(SystemClock),
            limit_clock: LimitClock::real(),
        }
    }
}

impl AppState {
    /// Builds everything the handlers share; loads the router policy (compiled, checked and
    /// smoke-called) and the facts engine (tokenizer, language models) before serving.
    pub async fn new(config: Config) -> anyhow::Result<AppState> {
        AppState::with_parts(config, Parts::default()).await
    }

    pub async fn with_parts(config: Config, parts: Parts) -> anyhow::Result<AppState> {
        let data_lock = lock_data_dir(&config.data_dir)?;
        // Durable state: SQLite in the data directory, or the PostgreSQL every replica shares.
        let (store, documents): (
            Arc<dyn Store>,
            Arc<dyn crate::store::documents::DocumentStore>,
        ) = match &config.store {
            crate::config::StoreConfig::Sqlite => {
                let path = config.data_dir.join("sovereign.db");
                private_database(&path)?;
                let sqlite = Arc::new(
                    crate::store::sqlite::SqliteStore::open(&path, parts.clock.clone()).await?,
                );
                (sqlite.clone(), sqlite)
            }
            crate::config::StoreConfig::Postgres(pg) => {
                let pg = Arc::new(
                    crate::store::postgres::PgStore::connect(
                        &pg.url,
                        pg.pool_size,
                        parts.clock.clone(),
                    )
                    .await?,
                );
                (pg.clone(), pg)
            }
        };
        // The journal before anything reads usage or budget counters: the charges it carries
        // that a power failure took from the store are applied again first.
        let journal = match &config.journal {
            Some(settings) => {
                let journal = open_journal(&settings.open).await?;
                crate::budget::recover::charges(&store, &journal, &settings.open).await?;
                Some(journal)
            }
            None => None,
        };
        let shared = Shared::connect(&config.shared, &config.sovereign_id).await?;
        let metrics = Arc::new(Metrics::default());
        metrics
            .recent
            .init(config.models.iter().map(|m| m.id.0.as_str()));
        let bootstrap = crate::access::bootstrap::run(store.as_ref(), &config).await?;
        let access = Access::new(
            store.clone(),
            parts.clock.clone(),
            parts.limit_clock,
            config.access.clone(),
            config.plans,
            AccessParts {
                shared: shared.clone(),
                metrics: metrics.clone(),
                key_cache_ttl: key_cache_ttl(&config),
            },
        )
        .await?;
        // Keys the config file stopped declaring: out of every replica's cache, and journaled.
        for key in &bootstrap.revoked_config_keys {
            access.invalidate_key(&key.id.0).await;
        }
        if let Some(journal) = &journal {
            journal_config_revocations(journal, &bootstrap.revoked_config_keys).await?;
        }
        let channel = crate::webhooks::Channel::new();
        let events = Events::new(Some(channel.outbox.clone()));
        let (charger, _writer) = Charger::start(store.clone(), journal.clone());
        if let Some(grace) = config.store.outage_grace() {
            charger.tolerate_outages(grace);
        }
        let budgets = Arc::new(
            Budgets::new(
                store.clone(),
                charger,
                access.quota.clone(),
                events.clone(),
                config.budgets.clone(),
                parts.clock.clone(),
            )
            .shared(&shared, metrics.clone()),
        );
        let router = routing::Router::from_config(&config).await?;
        // One policy engine per process: the router's when routing is configured.
        let policy_host = match router.policy_host() {
            Some(h) => h,
            None => crate::policy::PolicyHost::new(crate::policy::HostConfig::default())?,
        };
        let guardrail = match &config.guardrail {
            Some(g) => Some(load_guardrail(&policy_host, g).await?),
            None => None,
        };
        // The tool and retrieval policies: the built-in ones, or the ones an admin installed before
        // this start (kept in `<data_dir>/policies`).
        let kept = config.data_dir.join("policies");
        let tool_policies = crate::policy::tool::ToolPolicies::builtin(policy_host.clone())
            .await?
            .kept_in(kept.clone())
            .await?;
        let retrieval_policies =
            crate::policy::retrieval::RetrievalPolicies::builtin(policy_host.clone())
                .await?
                .kept_in(kept)
                .await?;
        let shapers = crate::policy::shaper::Shapers::new(
            policy_host,
            crate::policy::shaper::limits(config.webhooks.shaper_deadline),
        )
        .await?
        .persisted_in(config.data_dir.join("shapers"))
        .await?;
        let shapers = Arc::new(shapers);
        let webhooks = crate::webhooks::Webhooks::start(
            store.clone(),
            config.webhooks.clone(),
            parts.clock,
            channel,
            shapers.clone(),
            metrics.clone(),
            // Replicas on one database lease each subscription's deliveries.
            config
                .store
                .is_shared()
                .then(|| config.sovereign_id.clone()),
        )
        .await?;
        let facts = tokio::task::spawn_blocking({
            let config = config.clone();
            move || FactsEngine::new(&config)
        })
        .await??;
        let library = match config.documents.enabled {
            true => Some(Arc::new(
                crate::rag::Library::open(
                    &config.documents,
                    &config.models,
                    documents,
                    facts.shared_tokens(),
                )
                .await?
                .with_replicas(config.store.is_shared(), &shared, metrics.clone()),
            )),
            false => None,
        };
        let upstreams = Upstreams::new(&config.models, config.server.threads)?;
        let traces = tokio::task::spawn_blocking({
            let c = config.traces.clone();
            move || crate::traces::Traces::start(&c)
        })
        .await??;
        let health = Health::new(&config.models, config.health, metrics.clone());
        let mcp = Arc::new(crate::mcp::Mcp::new(&config.mcp)?);
        let sovereign_id = HeaderValue::from_str(&config.sovereign_id)?;
        let journal_index = journal_index::Indexer::new();
        let retention = config.journal.as_ref().and_then(|settings| {
            settings.retention.prunes().then(|| {
                let index = config
                    .store
                    .is_shared()
                    .then(|| journal_index.pruner(store.clone()));
                retention_task(settings.clone(), index)
            })
        });
        let started_unix = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let state = AppState(Arc::new(Inner {
            config,
            store,
            shared,
            access,
            budgets,
            events,
            facts,
            router,
            guardrail,
            shapers,
            tool_policies,
            retrieval_policies,
            upstreams,
            library,
            health,
            metrics,
            traces,
            webhooks,
            mcp,
            journal,
            retention,
            journal_index,
            tlog_mirrors: tlog_replicas::Mirrors::default(),
            sovereign_id,
            started_unix,
            bootstrap_admin_secret: std::sync::Mutex::new(bootstrap.new_admin_secret),
            _data_lock: data_lock,
        }));
        state.check_journal_index().await?;
        // The MCP servers and key allowlists registered through the admin API.
        state
            .mcp_servers()
            .reload()
            .await
            .map_err(|e| anyhow::anyhow!("loading the stored MCP servers: {e}"))?;
        // A replica starting into a running cluster takes its router versions and guardrail.
        if let Err(e) = state.follow_policies().await {
            tracing::warn!(error = %e, "loading the replicas' policy versions failed; this replica's config versions apply");
        }
        Ok(state)
    }
}

/// How long a replica trusts a cached key without news: Redis's setting; on PostgreSQL without
/// Redis (no notices between replicas) 5 s, so a revocation still reaches every replica; on
/// the embedded store, until invalidated (one process).
fn key_cache_ttl(config: &Config) -> Option<std::time::Duration> {
    match &config.shared {
        crate::config::SharedConfig::Redis(r) => Some(r.key_cache_ttl),
        crate::config::SharedConfig::Local if config.store.is_shared() => {
            Some(std::time::Duration::from_secs(5))
        }
        crate::config::SharedConfig::Local => None,
    }
}

impl AppState {
    /// Another replica's change (or a gap in hearing them): what this replica holds in memory
    /// follows the store.
    pub async fn hear(&self, notice: Notice) {
        let webhooks = matches!(notice, Notice::Changed(Change::Webhooks) | Notice::Resync);
        let policies = matches!(
            notice,
            Notice::Changed(Change::Policies | Change::Guardrail) | Notice::Resync
        );
        if policies && let Err(e) = self.follow_policies().await {
            tracing::warn!(error = %e, "following the replicas' policy versions failed");
        }
        if matches!(notice, Notice::Changed(Change::Mcp) | Notice::Resync)
            && let Err(e) = self.mcp_servers().reload().await
        {
            tracing::warn!(error = %e, "reloading the MCP servers failed");
        }
        if let (Notice::Resync, Some(library)) = (&notice, &self.0.library) {
            library.reconcile().await;
        }
        if let (Notice::Changed(Change::Document { team, id }), Some(library)) =
            (&notice, &self.0.library)
            && let Err(e) = library.sync_document(team, id).await
        {
            tracing::warn!(error = %e, document = %id, "indexing another replica's document change failed");
        }
        match &notice {
            Notice::Changed(Change::Team(id)) => self
                .0
                .budgets
                .changed(&BudgetScope::Team(TeamId(id.clone()))),
            Notice::Changed(Change::Key(id)) => {
                self.0.budgets.changed(&BudgetScope::Key(KeyId(id.clone())));
            }
            _ => {}
        }
        self.0.access.hear(notice).await;
        if webhooks && let Err(e) = self.0.webhooks.reload().await {
            tracing::warn!(error = %e, "reloading webhook subscriptions failed");
        }
    }

    /// Stops retention and closes the journal (flush, final checkpoint). Called after the last
    /// request has been answered.
    pub async fn shut_down(&self) {
        if let Some(task) = &self.0.retention {
            task.abort();
        }
        // Stdio MCP servers' processes killed.
        self.0.mcp.shut_down().await;
        // Every event emitted by a finished request persisted before the process ends.
        self.0.webhooks.shut_down().await;
        // Settlements written and leased budget headroom given back, for the other replicas.
        self.0.budgets.flush_settlements().await;
        if let Some(journal) = &self.0.journal {
            match journal.clone().close().await {
                Ok(seq) => tracing::info!(head_seq = seq, "journal closed"),
                Err(e) => tracing::error!(error = %e, "journal close failed"),
            }
        }
        // The last spans exported.
        if let Some(traces) = self.0.traces.clone() {
            let _ = tokio::task::spawn_blocking(move || traces.shut_down()).await;
        }
    }
}

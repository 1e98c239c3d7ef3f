//! The HTTP face of the gateway: the shared [`AppState`], the route table, and the one middleware
//! stack every request passes through (request context → panic guard → authentication). Each
//! endpoint's request path lives in its own module.

mod activity;
mod admin;
pub mod audit;
mod body;
mod chat;
mod embeddings;
pub mod error;
mod fallback;
mod guard;
mod keys;
mod models;
mod params;
pub mod serve;
mod shapers;
mod spend;
mod teams;
mod usage;
mod validate;
mod webhooks;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderName, HeaderValue, StatusCode};
use tokio::time::Instant;

use crate::access::limits::X_RATELIMIT_LIMIT;
use crate::access::{Access, CachedKey, LimitClock};
use crate::auth::Principal;
use crate::budget::{Budgets, Charger};
use crate::config::{Config, Role};
use crate::events::Events;
use crate::facts::FactsEngine;
use crate::journal::{Journal, retention};
use crate::metrics::Metrics;
use crate::routing;
use crate::store::{Clock, Store, SystemClock};
use crate::upstream::Upstreams;
use crate::upstream::health::Health;
use error::ApiError;

pub const X_SOVEREIGN_ID: HeaderName = HeaderName::from_static("x-sovereign-id");
pub const X_AUDIT_TRACE_ID: HeaderName = HeaderName::from_static("x-audit-trace-id");
pub const X_ROUTE_POLICY: HeaderName = HeaderName::from_static("x-route-policy");
pub const X_DATA_RESIDENCY: HeaderName = HeaderName::from_static("x-data-residency");

/// One cheap handle on everything the handlers share.
#[derive(Clone)]
pub struct AppState(pub Arc<Inner>);

pub struct Inner {
    pub config: Config,
    pub store: Arc<dyn Store>,
    pub access: Access,
    pub budgets: Arc<Budgets>,
    pub events: Events,
    pub facts: FactsEngine,
    pub router: routing::Router,
    /// The guardrail (`[guardrail]`), checked before routing and on answers.
    pub guardrail: Option<crate::policy::guardrail::GuardrailSlot>,
    /// The named webhook shapers (the built-in `default` and uploads), for webhook delivery.
    pub shapers: Arc<crate::policy::shaper::Shapers>,
    pub upstreams: Upstreams,
    /// Every model's circuit breaker (passive health, `crate::upstream::health`).
    pub health: Health,
    pub metrics: Arc<Metrics>,
    /// Webhook subscriptions, the outbox and delivery.
    pub webhooks: crate::webhooks::Webhooks,
    /// The activity journal's appender; `None` when `[journal] enabled = false`.
    pub journal: Option<Journal>,
    /// The retention task, stopped at shutdown.
    pub retention: Option<tokio::task::JoinHandle<()>>,
    pub sovereign_id: HeaderValue,
    /// Unix time the gateway started (the `created` of listed models).
    pub started_unix: u64,
    /// Set when start-up created the first admin key: shown to the operator once.
    pub bootstrap_admin_secret: std::sync::Mutex<Option<String>>,
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
        let store: Arc<dyn Store> = Arc::new(
            crate::store::sqlite::SqliteStore::open(
                &config.data_dir.join("sovereign.db"),
                parts.clock.clone(),
            )
            .await?,
        );
        let bootstrap = crate::access::bootstrap::run(store.as_ref(), &config).await?;
        let access = Access::new(
            store.clone(),
            parts.clock.clone(),
            parts.limit_clock,
            config.access.clone(),
            config.plans,
        )
        .await?;
        let channel = crate::webhooks::Channel::new();
        let events = Events::new(Some(channel.outbox.clone()));
        let (charger, _writer) = Charger::start(store.clone());
        let budgets = Arc::new(Budgets::new(
            store.clone(),
            charger,
            access.quota.clone(),
            events.clone(),
            config.budgets.clone(),
            parts.clock.clone(),
        ));
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
        let shapers = crate::policy::shaper::Shapers::new(
            policy_host,
            crate::policy::shaper::default_limits(),
        )
        .await?
        .persisted_in(config.data_dir.join("shapers"))
        .await?;
        let shapers = Arc::new(shapers);
        let metrics = Arc::new(Metrics::default());
        let webhooks = crate::webhooks::Webhooks::start(
            store.clone(),
            config.webhooks.clone(),
            parts.clock,
            channel,
            shapers.clone(),
            metrics.clone(),
        )
        .await?;
        let facts = tokio::task::spawn_blocking({
            let config = config.clone();
            move || FactsEngine::new(&config)
        })
        .await??;
        let upstreams = Upstreams::new(&config.models)?;
        let health = Health::new(&config.models, config.health, metrics.clone());
        let sovereign_id = HeaderValue::from_str(&config.sovereign_id)?;
        let (journal, retention) = match &config.journal {
            Some(settings) => {
                let journal = open_journal(&settings.open).await?;
                let task = settings
                    .retention
                    .prunes()
                    .then(|| retention_task(settings.clone()));
                (Some(journal), task)
            }
            None => (None, None),
        };
        let started_unix = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Ok(AppState(Arc::new(Inner {
            config,
            store,
            access,
            budgets,
            events,
            facts,
            router,
            guardrail,
            shapers,
            upstreams,
            health,
            metrics,
            webhooks,
            journal,
            retention,
            sovereign_id,
            started_unix,
            bootstrap_admin_secret: std::sync::Mutex::new(bootstrap.new_admin_secret),
            _data_lock: data_lock,
        })))
    }
}

/// Creates the data directory and takes an exclusive lock on `LOCK` in it: two gateways on one
/// store would each keep budget counters the other cannot see.
fn lock_data_dir(dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the data directory {}", dir.display()))?;
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another gateway is using the data directory {} (one gateway per data_dir)",
            dir.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}

/// Opens (recovers and verifies) the journal before serving: a torn final record is cut and
/// logged; a chain that fails verification stops the start unless `[journal] force`.
async fn open_journal(cfg: &crate::journal::JournalConfig) -> anyhow::Result<Journal> {
    let (journal, report) = Journal::open_async(cfg.clone())
        .await
        .map_err(|e| anyhow::anyhow!("activity journal {}: {e}", cfg.dir.display()))?;
    if let Some(torn) = &report.torn_tail {
        tracing::warn!(file = %torn.file.display(), bytes = torn.bytes, "journal: a torn final record (a crash mid-write) was cut off");
    }
    if let Some(problem) = &report.forced_past {
        tracing::error!(%problem, "journal: the chain fails verification; appending anyway because [journal] force = true");
    }
    tracing::info!(dir = %cfg.dir.display(), head_seq = report.head_seq, durability = ?cfg.durability, "journal open");
    Ok(journal)
}

/// Runs a retention pass at start and then every `interval`, on the blocking pool.
fn retention_task(settings: crate::config::JournalSettings) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.retention.interval);
        loop {
            tick.tick().await;
            let s = settings.clone();
            let pass = tokio::task::spawn_blocking(move || {
                retention::prune(&s.open, &s.retention, SystemTime::now())
            })
            .await;
            match pass {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "journal retention pass failed"),
                Err(e) => tracing::error!(error = %e, "journal retention task failed"),
            }
        }
    })
}

impl AppState {
    /// Stops retention and closes the journal (flush, final checkpoint). Called after the last
    /// request has been answered.
    pub async fn shut_down(&self) {
        if let Some(task) = &self.0.retention {
            task.abort();
        }
        // Every event emitted by a finished request persisted before the process ends.
        self.0.webhooks.shut_down().await;
        if let Some(journal) = &self.0.journal {
            match journal.clone().close().await {
                Ok(seq) => tracing::info!(head_seq = seq, "journal closed"),
                Err(e) => tracing::error!(error = %e, "journal close failed"),
            }
        }
    }
}

/// Loads the guardrail on the process's policy host: compiled, world-checked and smoke-called
/// before serving.
async fn load_guardrail(
    host: &crate::policy::PolicyHost,
    g: &crate::config::GuardrailConfig,
) -> anyhow::Result<crate::policy::guardrail::GuardrailSlot> {
    use crate::policy::CallLimits;
    use crate::policy::guardrail::GuardrailSlot;
    let host = host.clone();
    let wasm: Arc<[u8]> = match &g.component {
        Some(bytes) => bytes.clone(),
        None => Arc::from(policy_artifacts::PII_GUARDRAIL_COMPONENT),
    };
    let limits = CallLimits {
        deadline: g.deadline,
        memory_bytes: g.memory_bytes,
        ..CallLimits::default()
    };
    Ok(GuardrailSlot::load(host, limits, wasm, g.settings.clone()).await?)
}

/// The client's address as `access` resolved it (socket peer, or behind trusted proxies).
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

/// What the phases of one request share: filled in by the middleware, read by handlers.
#[derive(Debug, Clone)]
pub struct RequestCtx {
    /// Also the response's `id` and the `X-Audit-Trace-ID` header.
    pub id: Arc<str>,
    pub started: Instant,
}

/// The route table and the middleware stack, outermost first:
/// 1. `request_context` — request id, `X-Sovereign-ID`/`X-Audit-Trace-ID` on every response,
///    request counters;
/// 2. `catch_panic` — a bug in a handler becomes a 500 in the error shape, not a dropped socket;
/// 3. `authenticate` — per-address rate limit, then the key (401), on everything except
///    `/healthz` and `/metrics`;
/// 4. `audit::journal` — one activity-journal entry per authenticated request, durable before
///    the response completes. Inside `authenticate` (no entry without a valid key: those are
///    counted in metrics) and outside every other layer and handler, so refusals by later inner
///    layers (403, 429) and handlers (400, 404, 451, 5xx) all get their entry. New inner
///    layers go *above* it in the list of `route_layer` calls below;
/// 5. `admit` — the key's address allow-list (403), request rate and tokens per day (429);
/// 6. `require` — per route group, the key's role (403).
///
/// Body size and read-time limits are applied where bodies are read (`body::read_json_object`).
pub fn router(state: AppState) -> Router {
    // Route groups by who may call them (admin may call everything).
    let inference = Router::new()
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route_layer(middleware::from_fn_with_state(
            state.0.events.clone(),
            events_persisted,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| require(s, &[Role::Member], req, next),
        ));
    let catalog = Router::new()
        .route("/v1/models", get(models::list_models))
        .route("/v1/models/{id}", get(models::get_model));
    let reading = Router::new()
        .route("/v1/admin/usage", get(usage::usage))
        // The journal's read API (an auditor sees its own team only: checked in the handler).
        .route("/v1/activity/logs", post(activity::logs))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| require(s, &[Role::Auditor], req, next),
        ));
    let admin = Router::new()
        .route("/v1/admin/policies", get(admin::list).post(admin::upload))
        .route("/v1/admin/policies/{id}/activate", post(admin::activate))
        .route("/v1/admin/teams", get(teams::list).post(teams::create))
        .route(
            "/v1/admin/teams/{id}",
            get(teams::get).patch(teams::update).delete(teams::delete),
        )
        .route("/v1/admin/keys", get(keys::list).post(keys::create))
        .route("/v1/admin/keys/{id}", get(keys::get))
        .route("/v1/admin/keys/{id}/rotate", post(keys::rotate))
        .route("/v1/admin/keys/{id}/revoke", post(keys::revoke))
        .route("/v1/admin/journal/verify", get(activity::verify))
        .route(
            "/v1/admin/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route(
            "/v1/admin/webhooks/{id}",
            get(webhooks::get).delete(webhooks::delete),
        )
        .route("/v1/admin/webhooks/{id}/test", post(webhooks::test))
        .route("/v1/admin/webhooks/{id}/rotate", post(webhooks::rotate))
        .route(
            "/v1/admin/webhooks/{id}/deliveries",
            get(webhooks::deliveries),
        )
        .route(
            "/v1/admin/webhooks/{id}/deliveries/redrive",
            post(webhooks::redrive),
        )
        .route(
            "/v1/admin/guardrail",
            get(admin::guardrail_get).post(admin::guardrail_swap),
        )
        .route(
            "/v1/admin/webhook-shapers",
            get(shapers::list).post(shapers::put),
        )
        .route("/v1/admin/webhook-shapers/{name}", get(shapers::get))
        .route(
            "/v1/admin/webhook-shapers/{name}/shape",
            post(shapers::try_shape),
        )
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| require(s, &[], req, next),
        ));
    let authenticated = Router::new()
        .merge(inference)
        .merge(catalog)
        .merge(reading)
        .merge(admin)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn_with_state(state.clone(), admit))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            audit::journal,
        ))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .merge(authenticated)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            panic_response,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            request_context,
        ))
        .with_state(state)
}

/// The events a request emitted (`routing.rule`, `model.fallback`, `guardrail.violation`, …) are
/// persisted in the webhook outbox before its response is returned: an event counts as emitted
/// once it is durable. Nothing waits when no event was handed to the outbox meanwhile (no
/// subscription, or none emitted); delivery itself is never waited for.
async fn events_persisted(State(events): State<Events>, req: Request, next: Next) -> Response {
    let Some(outbox) = events.outbox() else {
        return next.run(req).await;
    };
    let before = outbox.mark();
    let res = next.run(req).await;
    let after = outbox.mark();
    if after > before {
        outbox.persisted_to(after).await;
    }
    res
}

async fn request_context(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let ctx = RequestCtx {
        id: format!("req-{}", uuid::Uuid::now_v7().simple()).into(),
        started: Instant::now(),
    };
    let trace = HeaderValue::from_str(&ctx.id).ok();
    req.extensions_mut().insert(ctx);
    let m = &app.0.metrics;
    Metrics::inc(&m.requests_total);
    Metrics::inc(&m.requests_inflight);
    let mut res = next.run(req).await;
    Metrics::dec(&m.requests_inflight);
    let h = res.headers_mut();
    h.insert(X_SOVEREIGN_ID, app.0.sovereign_id.clone());
    if let Some(trace) = trace {
        h.insert(X_AUDIT_TRACE_ID, trace);
    }
    res
}

/// Per-address rate limit, then the key (401). Unauthenticated requests stop here, so they are
/// neither journaled nor counted against any key.
async fn authenticate(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let access = &app.0.access;
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), |c| c.0);
    let ip = access.client_ip(peer, req.headers());
    let address = access.check_address(ip);
    let mut res = match address {
        Some(s) if !s.allowed() => {
            Metrics::inc(&app.0.metrics.rate_limited_total);
            body::discard(req.into_body(), &app.0.config.server).await;
            ApiError::rate_limited(format!(
                "Too many requests from {ip}: {} per minute. Retry after {} s.",
                s.limit,
                s.retry_after
                    .map_or(1, crate::access::limits::retry_after_secs)
            ))
            .into_response()
        }
        _ => match access.authenticate(req.headers()).await {
            Ok(key) => {
                req.extensions_mut().insert(key.principal.clone());
                req.extensions_mut().insert(ClientIp(ip));
                req.extensions_mut().insert(key);
                next.run(req).await
            }
            Err(e) => {
                Metrics::inc(&app.0.metrics.unauthenticated_total);
                body::discard(req.into_body(), &app.0.config.server).await;
                ApiError::from(e).into_response()
            }
        },
    };
    // The key's limit, when it has one, is what the headers describe; else the address's.
    if let Some(s) = address
        && !res.headers().contains_key(X_RATELIMIT_LIMIT)
    {
        s.write_headers(res.headers_mut(), access.now_ms());
    }
    res
}

/// After authentication (and inside the journal): the key's address allow-list (403), request
/// rate and tokens per day (429).
async fn admit(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let (Some(key), Some(ClientIp(ip))) = (
        req.extensions().get::<Arc<CachedKey>>().cloned(),
        req.extensions().get::<ClientIp>().copied(),
    ) else {
        return ApiError::from(crate::auth::AuthError::Missing).into_response();
    };
    let access = &app.0.access;
    let (rate, verdict) = access.admit(&key, ip);
    let mut res = match verdict {
        Ok(()) => next.run(req).await,
        Err(refusal) => {
            Metrics::inc(&app.0.metrics.rate_limited_total);
            body::discard(req.into_body(), &app.0.config.server).await;
            let retry = match &refusal {
                crate::access::Refusal::Tokens(q) => Some(std::time::Duration::from_millis(
                    u64::try_from(q.resets_at - access.now_ms()).unwrap_or(0),
                )),
                _ => None,
            };
            let mut res = ApiError::from(refusal).into_response();
            if let Some(wait) = retry {
                res.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    HeaderValue::from(crate::access::limits::retry_after_secs(wait)),
                );
            }
            res
        }
    };
    if let Some(s) = rate {
        s.write_headers(res.headers_mut(), access.now_ms());
    }
    res
}

/// The innermost check of a route group: the key's role (admin passes every group).
async fn require(
    State(app): State<AppState>,
    roles: &'static [Role],
    req: Request,
    next: Next,
) -> Response {
    let refusal = match req.extensions().get::<Arc<Principal>>() {
        Some(p) if p.may(roles) => return next.run(req).await,
        Some(p) => ApiError::forbidden(format!(
            "A key with the role `{}` may not call {} {}.",
            p.role.as_str(),
            req.method(),
            req.uri().path()
        )),
        None => ApiError::from(crate::auth::AuthError::Missing),
    };
    body::discard(req.into_body(), &app.0.config.server).await;
    refusal.into_response()
}

async fn metrics(State(app): State<AppState>) -> impl IntoResponse {
    (
        [(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.0.metrics.render(),
    )
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!("Unknown path `{}`.", req.uri().path()))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!(
            "Method {} is not allowed on `{}`.",
            req.method(),
            req.uri().path()
        ),
    )
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "The gateway hit an internal error; the request was not completed.",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::events::Event;
    use crate::webhooks::{Channel, PERSIST_WAIT};
    use tower::ServiceExt as _;

    /// A route behind the `events_persisted` layer whose handler emits (or not), over an outbox
    /// that has a subscription but whose writer never runs: an emitting request can only be
    /// answered once the layer gives up waiting.
    fn app(events: &Events) -> Router {
        let emitting = events.clone();
        Router::new()
            .route(
                "/emit",
                post(move || async move {
                    emitting.emit(|| {
                        Event::now("routing.rule", "req-1", serde_json::json!({}), "t", "u")
                    });
                    "ok"
                }),
            )
            .route("/quiet", post(|| async { "ok" }))
            .route_layer(middleware::from_fn_with_state(
                events.clone(),
                events_persisted,
            ))
    }

    async fn took(router: &Router, path: &str) -> std::time::Duration {
        let t = Instant::now();
        let req = Request::post(path).body(axum::body::Body::empty()).unwrap();
        let res = router.clone().oneshot(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        t.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn a_response_waits_until_the_events_its_request_emitted_are_persisted() {
        let channel = Channel::stalled_for_tests();
        let events = Events::new(Some(channel.outbox.clone()));
        let router = app(&events);
        // Paused clock: the wait is virtual time, and exactly the layer's bound.
        assert!(took(&router, "/emit").await >= PERSIST_WAIT);
        assert_eq!(took(&router, "/quiet").await, std::time::Duration::ZERO);
    }
}

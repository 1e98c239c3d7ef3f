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
mod models;
pub mod serve;
mod validate;

use std::sync::Arc;
use std::time::SystemTime;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderName, HeaderValue, StatusCode};
use tokio::time::Instant;

use crate::auth::Keys;
use crate::config::Config;
use crate::facts::FactsEngine;
use crate::journal::{Journal, retention};
use crate::metrics::Metrics;
use crate::routing;
use crate::upstream::Upstreams;
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
    pub keys: Keys,
    pub facts: FactsEngine,
    pub router: routing::Router,
    pub upstreams: Upstreams,
    pub metrics: Arc<Metrics>,
    /// The activity journal's appender; `None` when `[journal] enabled = false`.
    pub journal: Option<Journal>,
    /// The retention task, stopped at shutdown.
    pub retention: Option<tokio::task::JoinHandle<()>>,
    pub sovereign_id: HeaderValue,
    /// Unix time the gateway started (the `created` of listed models).
    pub started_unix: u64,
}

impl AppState {
    /// Builds everything the handlers share; loads the router policy (compiled, checked and
    /// smoke-called) and the facts engine (tokenizer, language models) before serving.
    pub async fn new(config: Config) -> anyhow::Result<AppState> {
        let keys = Keys::from_config(&config.keys);
        let router = routing::Router::from_config(&config).await?;
        let facts = tokio::task::spawn_blocking({
            let config = config.clone();
            move || FactsEngine::new(&config)
        })
        .await??;
        let upstreams = Upstreams::new(&config.models)?;
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
            keys,
            facts,
            router,
            upstreams,
            metrics: Arc::new(Metrics::default()),
            journal,
            retention,
            sovereign_id,
            started_unix,
        })))
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
        if let Some(journal) = &self.0.journal {
            match journal.clone().close().await {
                Ok(seq) => tracing::info!(head_seq = seq, "journal closed"),
                Err(e) => tracing::error!(error = %e, "journal close failed"),
            }
        }
    }
}

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
/// 3. `authenticate` — on everything except the allow-list (`/healthz`, `/metrics`);
/// 4. `audit::journal` — one activity-journal entry per authenticated request, durable before
///    the response completes. Inside `authenticate` (no entry without a valid key: those are
///    counted in metrics) and outside every other layer and handler, so refusals by later inner
///    layers (limits, 429) and handlers (400, 403, 404, 5xx) all get their entry. New inner
///    layers go *above* it in the list of `route_layer` calls below.
///
/// Body size and read-time limits are applied where bodies are read (`body::read_json_object`).
pub fn router(state: AppState) -> Router {
    let authenticated = Router::new()
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route("/v1/models", get(models::list_models))
        .route("/v1/models/{id}", get(models::get_model))
        // Admin only ([`admin::AdminOnly`] in each handler's signature).
        .route("/v1/admin/policies", get(admin::list).post(admin::upload))
        .route("/v1/admin/policies/{id}/activate", post(admin::activate))
        .route("/v1/admin/journal/verify", get(activity::verify))
        // Auditor or admin (checked in the handler: an auditor sees its own team only).
        .route("/v1/activity/logs", post(activity::logs))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
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

async fn authenticate(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    match app.0.keys.authenticate(req.headers()) {
        Ok(principal) => {
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        Err(e) => {
            Metrics::inc(&app.0.metrics.unauthenticated_total);
            ApiError::from(e).into_response()
        }
    }
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

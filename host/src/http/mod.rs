//! The HTTP face of the gateway: the shared [`AppState`], the route table, and the one middleware
//! stack every request passes through (request context → panic guard → authentication). Each
//! endpoint's request path lives in its own module.

mod admin;
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
            sovereign_id,
            started_unix,
        })))
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
/// 3. `authenticate` — on everything except the allow-list (`/healthz`, `/metrics`).
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
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
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

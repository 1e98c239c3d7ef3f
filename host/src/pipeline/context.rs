//! The per-request context every phase shares: the request id (also `X-Audit-Trace-ID`), its
//! start, the client's address; the outermost layer that makes it (`request_context`) and the
//! panic guard's response.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use tokio::time::Instant;

use super::audit;
use super::{X_AUDIT_TRACE_ID, X_SOVEREIGN_ID};
use crate::metrics::Metrics;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::traces::Trace;

/// The client's address as `access` resolved it (socket peer, or behind trusted proxies).
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

/// What the phases of one request share: filled in by the middleware, read by handlers.
#[derive(Debug, Clone)]
pub struct RequestCtx {
    /// Also the response's `id` and the `X-Audit-Trace-ID` header.
    pub id: Arc<str>,
    pub started: Instant,
    /// The route-table operation (`audit::operation`), found once for the journal, the metrics
    /// and the trace; `None` off the route table.
    pub operation: Option<&'static str>,
    /// The request's root span, when traces are on (`crate::traces`).
    pub trace: Option<Trace>,
}

/// Request id, `X-Sovereign-ID`/`X-Audit-Trace-ID` on every response, request counters.
pub async fn request_context(
    State(app): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let id: Arc<str> = format!("req-{}", uuid::Uuid::now_v7().simple()).into();
    let operation = audit::operation(req.method(), req.uri().path());
    let span = app.traces().map(|t| {
        let span = t.request(req.headers(), &id, operation.unwrap_or("request"));
        span.set("http.request.method", req.method().as_str().to_string());
        span
    });
    let ctx = RequestCtx {
        id,
        started: Instant::now(),
        operation,
        trace: span.clone(),
    };
    let trace = HeaderValue::from_str(&ctx.id).ok();
    req.extensions_mut().insert(ctx);
    let m = app.metrics();
    Metrics::inc(&m.requests_total);
    Metrics::inc(&m.requests_inflight);
    let mut res = next.run(req).await;
    Metrics::dec(&m.requests_inflight);
    if let Some(span) = span {
        let status = res.status();
        span.set("http.response.status_code", i64::from(status.as_u16()));
        if status.is_server_error() {
            span.fail(status.to_string());
        }
    }
    let h = res.headers_mut();
    h.insert(X_SOVEREIGN_ID, app.sovereign_id().clone());
    if let Some(trace) = trace {
        h.insert(X_AUDIT_TRACE_ID, trace);
    }
    res
}

/// A bug in a handler becomes a 500 in the error shape, not a dropped socket.
pub fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "The gateway hit an internal error; the request was not completed.",
    )
    .into_response()
}

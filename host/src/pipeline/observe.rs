//! The metrics of a request, recorded when it ends: the layer that gives every request its
//! [`Audit`] slot (the handlers fill it; the journal layer, further in, reads it too) and, once
//! the answer is out — a stream's: once it ended or its client left — counts it by route, team,
//! model, policy and outcome, with its time, the upstream's share, its tokens and its spend
//! (`metrics::labelled`, docs/OPERATIONS.md).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;
use tokio::time::Instant;

use super::RequestCtx;
use super::audit::Audit;
use crate::metrics::Metrics;
use crate::metrics::labelled::RequestLabels;
use crate::server::error::ErrorKind;
use crate::state::AppState;

/// The layer: inside `request_context` and outside the panic guard and authentication, so a
/// handler's panic (500) and refusals of every kind (401, 429 per address) are counted too.
pub async fn observe(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let audit = Audit::default();
    req.extensions_mut().insert(audit.clone());
    let (started, operation) = req
        .extensions()
        .get::<RequestCtx>()
        .map_or((Instant::now(), None), |c| (c.started, c.operation));
    let route = operation.unwrap_or("other");
    let response = next.run(req).await;
    let ended = Ended {
        metrics: app.metrics().clone(),
        audit,
        started,
        route,
        status: response.status(),
        error_type: response.extensions().get::<ErrorKind>().map(|k| k.0),
    };
    if ended.audit.is_stream() && ended.status.is_success() {
        // Counted when the body is done with: at its end, or when the client went away.
        let (parts, body) = response.into_parts();
        let frames = futures_util::stream::unfold(
            (body.into_data_stream(), ended),
            |(mut inner, ended)| async move {
                futures_util::StreamExt::next(&mut inner)
                    .await
                    .map(|f| (f, (inner, ended)))
            },
        );
        return Response::from_parts(parts, Body::from_stream(frames));
    }
    drop(ended);
    response
}

/// A request whose answer is out (or whose stream is being relayed): recorded when dropped.
struct Ended {
    metrics: Arc<Metrics>,
    audit: Audit,
    started: Instant,
    route: &'static str,
    status: StatusCode,
    error_type: Option<&'static str>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        let status = match self.status.as_u16() {
            100..=199 => "1xx",
            200..=299 => "2xx",
            300..=399 => "3xx",
            400..=499 => "4xx",
            _ => "5xx",
        };
        let m = &self.metrics.by;
        self.audit.observed(|o| {
            let routed = o.served.map_or("", |m| m.id.0.as_str());
            let labels = RequestLabels {
                route: self.route,
                team: o.team,
                model: o.requested,
                routed_model: routed,
                policy: o.policy,
                status,
                error_type: self.error_type.unwrap_or(""),
            };
            let took = self.started.elapsed();
            m.request(&labels, took, o.upstream, o.streamed);
            // A request that named a model, in the console's per-minute view (served model,
            // else the one asked for).
            let model = if routed.is_empty() {
                o.requested
            } else {
                routed
            };
            if !model.is_empty() {
                self.metrics
                    .recent
                    .request(model, self.status.as_u16(), took);
            }
            if let Some(model) = o.served
                && (o.prompt_tokens > 0 || o.completion_tokens > 0)
            {
                let micros = crate::budget::cost(model, o.prompt_tokens, o.completion_tokens);
                m.usage(o.team, routed, o.prompt_tokens, o.completion_tokens, micros);
            }
        });
    }
}

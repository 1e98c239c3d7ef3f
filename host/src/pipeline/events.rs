//! Events on the request path: the `events_persisted` layer (a request's events are durable in
//! the webhook outbox before its response is returned) and `request.completed`.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::call::Call;
use crate::domain::ModelId;
use crate::events::{Event, Events};

/// The events a request emitted (`routing.rule`, `model.fallback`, `guardrail.violation`, …) are
/// persisted in the webhook outbox before its response is returned: an event counts as emitted
/// once it is durable. Nothing waits when no event was handed to the outbox meanwhile (no
/// subscription, or none emitted); delivery itself is never waited for.
pub async fn events_persisted(State(events): State<Events>, req: Request, next: Next) -> Response {
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

/// `request.completed` for a request that reached an upstream, when it took at least
/// `[webhooks] request_completed_after_ms` (0: every request).
pub fn completed(call: &Call, model: &ModelId, status: u16, tokens: Option<(u64, u64)>) {
    let latency = call.ctx.started.elapsed();
    let app = &call.app;
    if latency < app.config().webhooks.request_completed_after {
        return;
    }
    app.events().emit(|| {
        let tokens = tokens.map(|(prompt, completion)| {
            serde_json::json!({
                "prompt": prompt,
                "completion": completion,
                "total": prompt + completion,
            })
        });
        Event::now(
            "request.completed",
            &call.ctx.id,
            serde_json::json!({
                "model": model.0,
                "status": status,
                "tokens": tokens,
                "latency_ms": u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            }),
            &call.principal.team_id,
            &call.actor,
        )
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::webhooks::{Channel, PERSIST_WAIT};
    use axum::Router;
    use axum::middleware;
    use axum::routing::post;
    use http::StatusCode;
    use tokio::time::Instant;
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

//! The route phase: an explicit model, or the router policy's choice (Wasm, offered only models
//! inside the request's residency boundary), then the residency guard no policy overrides (451
//! `sovereignty_error`); a `routing.rule` event when a policy decided. And, once a model has
//! answered, the response labelled with it (`X-Route-Policy`, `X-Data-Residency`).

use std::sync::Arc;
use std::time::Instant;

use axum::response::Response;
use http::HeaderValue;

use super::call::Call;
use super::{X_DATA_RESIDENCY, X_ROUTE_POLICY};
use crate::domain::{ModelConfig, ModelKind};
use crate::events::Event;
use crate::facts::Facts;
use crate::policy::RouteFacts;
use crate::residency;
use crate::routing::Route;
use crate::server::error::ApiError;

/// What the router is told of a request (its facts, the caller) and whether the request is
/// sensitive: flagged by the guardrail (the router then sees `classification: sensitive`) or
/// classified so by the client.
pub fn facts_for(call: &Call, facts: &Facts, flagged: bool) -> (RouteFacts, bool) {
    let mut route_facts = facts.route_facts(RouteFacts {
        request_id: call.ctx.id.to_string(),
        team_id: call.principal.team_id.clone(),
        key_id: call.principal.key_id.clone(),
        actor_id: call.actor.clone(),
        allowed_regions: call.principal.allowed_regions.clone(),
        ..RouteFacts::default()
    });
    if flagged {
        route_facts.classification = Some("sensitive".into());
    }
    let sensitive = flagged
        || facts
            .classification
            .as_deref()
            .is_some_and(residency::is_sensitive_label);
    (route_facts, sensitive)
}

/// Where a request goes, and the boundary it was routed inside.
pub struct Routed {
    pub route: Route,
    /// Local models only (the guardrail flagged it, or it is classified sensitive).
    pub sensitive: bool,
}

/// Routes the request described by `facts` to a model of `kind` inside the call's boundary.
pub async fn route(
    call: &Call,
    kind: ModelKind,
    facts: &RouteFacts,
    sensitive: bool,
) -> Result<Routed, ApiError> {
    let app = &call.app;
    let boundary = call.boundary(sensitive);
    let span = call.ctx.trace.as_ref().map(|t| t.child("route"));
    let started = Instant::now();
    let route = app
        .router()
        .route(app.config(), facts, kind, &boundary, app.health())
        .await?;
    if route.decided_by_policy() {
        app.metrics().by.policy_call("router", started.elapsed());
    }
    // It resolved: a configured model, alias or policy name, safe as a metrics label.
    call.audit.requested(&facts.requested_model);
    let route = residency::guard(route, &boundary, app.config(), kind)?;
    call.audit.route(&route);
    if let Some(s) = span {
        s.set("sovereign.policy", route.policy.to_string());
        s.set("sovereign.model", route.model.id.0.clone());
    }
    if route.decided_by_policy() {
        app.events().emit(|| {
            Event::now(
                "routing.rule",
                &call.ctx.id,
                serde_json::json!({"policy": &*route.policy, "rule": &*route.rule, "model": route.model.id.0}),
                &call.principal.team_id,
                &call.actor,
            )
        });
    }
    Ok(Routed { route, sensitive })
}

/// `X-Route-Policy` (the policy that routed) and `X-Data-Residency` (the region of `model`, the
/// one that served or failed last) on the response.
pub fn label(mut response: Response, routed: &Routed, model: &Arc<ModelConfig>) -> Response {
    let h = response.headers_mut();
    if let Ok(policy) = HeaderValue::from_str(&routed.route.policy) {
        h.insert(X_ROUTE_POLICY, policy);
    }
    if let Ok(region) = HeaderValue::from_str(&model.region) {
        h.insert(X_DATA_RESIDENCY, region);
    }
    response
}

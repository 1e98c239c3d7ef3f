//! Fallback on the request path: which models may serve a request, in order, and the upstream
//! call tried on each until one answers.
//!
//! The candidates are the routed model, then the router's fallbacks, then the routed model's
//! configured `fallbacks` — deduplicated, each checked against the request's residency
//! boundary (a forbidden one is skipped, never tried). A model whose circuit breaker is open is
//! passed over. The next candidate is tried when the upstream refused the connection, timed out,
//! answered 5xx or 429 — always before the client has received a byte, since only the call up
//! to the response headers ([`Upstreams::post`]) is retried; other 4xx are the client's answer.
//! Each hop sends a `model.fallback` event; the reservation follows the model (released and made
//! again at the fallback's prices), so the charge matches the model that served.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderValue, StatusCode};

use super::call::Call;
use super::route::Routed;
use super::spend;
use crate::budget::Reservation;
use crate::config::{Config, MAX_FALLBACKS};
use crate::domain::ModelConfig;
use crate::events::Event;
use crate::metrics::Metrics;
use crate::residency::{Boundary, Breach};
use crate::routing::Route;
use crate::server::error::ApiError;
use crate::upstream::health::{Admission, Ticket};
use crate::upstream::{Exchange, Outbound, UpstreamError};

/// Most candidates kept for one request (the routed model, the router's fallbacks, the
/// configured ones); `health.max_attempts` bounds how many are tried.
const MAX_CANDIDATES: usize = 1 + 2 * MAX_FALLBACKS;

/// The models that may serve a request, in the order they are tried.
#[derive(Debug)]
pub struct Candidates {
    pub models: Vec<Arc<ModelConfig>>,
    /// The first residency breach among the candidates skipped (none were tried).
    pub forbidden: Option<Breach>,
}

/// The routed model, the router's fallbacks, the routed model's configured fallbacks: each once,
/// each inside `boundary`.
pub fn candidates(route: &Route, config: &Config, boundary: &Boundary<'_>) -> Candidates {
    let configured = route
        .model
        .fallbacks
        .iter()
        .filter_map(|id| config.model(&id.0));
    let all = std::iter::once(&route.model)
        .chain(&route.fallbacks)
        .chain(configured);
    let mut out = Candidates {
        models: Vec::with_capacity(1 + route.fallbacks.len() + route.model.fallbacks.len()),
        forbidden: None,
    };
    for m in all {
        if out.models.len() == MAX_CANDIDATES {
            break;
        }
        if out.models.iter().any(|c| c.id == m.id) {
            continue;
        }
        match boundary.check(m) {
            Ok(()) => out.models.push(m.clone()),
            Err(breach) => {
                tracing::info!(model = %m.id, reason = %breach, "fallback skipped: outside the request's residency boundary");
                out.forbidden.get_or_insert(breach);
            }
        }
    }
    out
}

/// Why a failed call moves on to the next candidate (`None`: it does not), as the
/// `model.fallback` event says it, with the upstream's status when it sent one.
pub fn retry_reason(e: &UpstreamError) -> Option<(&'static str, Option<u16>)> {
    match e {
        UpstreamError::Connect { .. } => Some(("connect_error", None)),
        UpstreamError::Timeout { .. } => Some(("timeout", None)),
        UpstreamError::ServerError { status, .. } => Some(("server_error", Some(status.as_u16()))),
        UpstreamError::Rejected { status, .. } if *status == StatusCode::TOO_MANY_REQUESTS => {
            Some(("rate_limited", Some(status.as_u16())))
        }
        UpstreamError::Rejected { .. } | UpstreamError::Protocol { .. } => None,
    }
}

/// A candidate answered: its response headers are in, with a success status.
pub struct Served {
    pub model: Arc<ModelConfig>,
    pub exchange: Exchange,
    /// Report the rest of the exchange (the whole answer read, the stream's end) through it.
    pub ticket: Ticket,
    /// Made at the serving model's prices.
    pub reservation: Reservation,
}

/// No candidate answered.
pub struct NotServed {
    pub error: ApiError,
    /// The last model tried (the routed one when none was): the response's headers name it.
    pub model: Arc<ModelConfig>,
    /// Every candidate was out of rotation: when one is tried again.
    pub retry_after: Option<Duration>,
}

impl NotServed {
    fn by(model: &Arc<ModelConfig>, error: ApiError) -> NotServed {
        NotServed {
            error,
            model: model.clone(),
            retry_after: None,
        }
    }

    /// The model the response names: the last one tried, else the routed one.
    pub fn model(&self) -> &Arc<ModelConfig> {
        &self.model
    }
}

impl IntoResponse for NotServed {
    fn into_response(self) -> Response {
        let mut res = self.error.into_response();
        if let Some(wait) = self.retry_after {
            res.headers_mut().insert(
                http::header::RETRY_AFTER,
                HeaderValue::from(crate::access::limits::retry_after_secs(wait)),
            );
        }
        res
    }
}

/// The route as it turned out: `model` served (or was the last tried).
pub fn served_route(route: &Route, model: &Arc<ModelConfig>) -> Route {
    Route {
        model: model.clone(),
        fallbacks: Vec::new(),
        policy: route.policy.clone(),
        rule: route.rule.clone(),
    }
}

/// The upstream phase: tries the request's candidates (see the module's comment) in order until
/// one answers. `request_for` makes the upstream request for a model (its endpoint, the body
/// with its upstream name in it: a request converts to what each candidate speaks at this last
/// step);
/// `reservation` was made at the routed model's prices; `max_out` is what it reserved for the
/// answer (0 for embeddings). A model other than the routed one that served (or failed last) is
/// what the journal entry names.
pub async fn serve(
    call: &Call,
    routed: &Routed,
    max_out: u64,
    reservation: Reservation,
    request_for: impl FnMut(&ModelConfig) -> Result<Outbound, ApiError>,
) -> Result<Served, NotServed> {
    let app = &call.app;
    let candidates = candidates(
        &routed.route,
        app.config(),
        &call.boundary(routed.sensitive),
    );
    let hop = Hop { call, max_out };
    let outcome = hop.try_in_order(candidates, reservation, request_for).await;
    let model = match &outcome {
        Ok(s) => &s.model,
        Err(n) => &n.model,
    };
    if !Arc::ptr_eq(model, &routed.route.model) {
        call.audit.route(&served_route(&routed.route, model));
    }
    outcome
}

/// Who is asking, for what: what trying a candidate needs besides the candidate.
struct Hop<'a> {
    call: &'a Call,
    max_out: u64,
}

impl Hop<'_> {
    async fn try_in_order(
        &self,
        candidates: Candidates,
        reservation: Reservation,
        mut request_for: impl FnMut(&ModelConfig) -> Result<Outbound, ApiError>,
    ) -> Result<Served, NotServed> {
        let app = &self.call.app;
        let request_id = &self.call.ctx.id;
        let prompt_tokens = reservation.prompt_tokens();
        let mut tally = Tally::new(reservation.model().clone());
        let mut reservation = Some(reservation);
        let mut tried = 0;
        for model in &candidates.models {
            if tried == app.config().health.max_attempts {
                break;
            }
            let ticket = match app.health().admit(&model.id.0, Instant::now()) {
                Admission::Go(t) => t,
                Admission::Open { retry_after } => {
                    tracing::debug!(%request_id, model = %model.id, "model out of rotation (breaker open): skipped");
                    tally.out_of_rotation(model, retry_after);
                    continue;
                }
            };
            // The reservation follows the model: what is charged is the price of the one that
            // served.
            let r = match self.follow(reservation.take(), model, prompt_tokens).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::info!(%request_id, model = %model.id, error = %e.message, "fallback skipped: the budget does not cover it");
                    tally.refused = Some(e);
                    continue;
                }
            };
            if let Some((from, reason, status)) = tally.hop.take() {
                self.fallback_event(&from, model, reason, status);
            }
            tried += 1;
            let outbound = match request_for(model) {
                Ok(b) => b,
                Err(error) => {
                    r.release();
                    return Err(NotServed::by(model, error));
                }
            };
            let span = self.call.ctx.trace.as_ref().map(|t| t.child("upstream"));
            if let Some(s) = &span {
                s.set("sovereign.model", model.id.0.clone());
                s.set(
                    "server.address",
                    model.base_url.host_str().unwrap_or_default().to_string(),
                );
            }
            let traceparent = span.as_ref().and_then(crate::traces::Trace::traceparent);
            let started = Instant::now();
            let posted = app.upstreams().post(model, outbound, traceparent).await;
            self.call.audit.upstream_time(started.elapsed());
            if let (Some(s), Err(e)) = (&span, &posted) {
                s.fail(e.to_string());
            }
            let e = match posted {
                Ok(exchange) => {
                    return Ok(Served {
                        model: model.clone(),
                        exchange,
                        ticket,
                        reservation: r,
                    });
                }
                Err(e) => e,
            };
            let Some((reason, status)) = retry_reason(&e) else {
                // The upstream is up and said no (4xx): the client's answer, not the model's
                // health.
                if matches!(e, UpstreamError::Rejected { .. }) {
                    ticket.success();
                } else {
                    ticket.failure(Instant::now());
                }
                r.release();
                return Err(NotServed::by(model, e.into()));
            };
            ticket.failure(Instant::now());
            tracing::info!(%request_id, model = %model.id, reason, error = %e, "upstream failed before answering");
            reservation = Some(r);
            tally.hop = Some((model.clone(), reason, status));
            tally.failed = Some((e, model.clone()));
        }
        // Nobody answered: nothing billable happened.
        if let Some(r) = reservation {
            r.release();
        }
        Err(tally.give_up(candidates))
    }

    /// The reservation for `model`: the one held when it was made for `model`, else that one
    /// released and a new one made at `model`'s prices.
    async fn follow(
        &self,
        held: Option<Reservation>,
        model: &Arc<ModelConfig>,
        prompt_tokens: u64,
    ) -> Result<Reservation, ApiError> {
        match held {
            Some(r) if r.model().id == model.id => Ok(r),
            old => {
                if let Some(old) = old {
                    old.release();
                }
                spend::reserve(self.call, model, prompt_tokens, self.max_out).await
            }
        }
    }

    fn fallback_event(
        &self,
        from: &ModelConfig,
        to: &ModelConfig,
        reason: &'static str,
        status: Option<u16>,
    ) {
        let call = self.call;
        Metrics::inc(&call.app.metrics().fallbacks_total);
        call.app.metrics().by.fallback(&from.id.0, &to.id.0);
        tracing::info!(request_id = %call.ctx.id, primary = %from.id, fallback = %to.id, reason, "falling back");
        call.app.events().emit(|| {
            let mut details = serde_json::json!({
                "primary": from.id.0,
                "fallback": to.id.0,
                "reason": reason,
            });
            if let (Some(s), Some(o)) = (status, details.as_object_mut()) {
                o.insert("status".into(), s.into());
            }
            Event::now(
                "model.fallback",
                &call.ctx.id,
                details,
                &call.principal.team_id,
                &call.actor,
            )
        });
    }
}

/// What trying the candidates learned, for the answer when none served.
struct Tally {
    /// The routed model (the response names it when no candidate was tried).
    primary: Arc<ModelConfig>,
    /// The last failure, and the model it came from.
    failed: Option<(UpstreamError, Arc<ModelConfig>)>,
    /// The model passed over and why, until the next one is tried (the `model.fallback` event).
    hop: Option<(Arc<ModelConfig>, &'static str, Option<u16>)>,
    /// The soonest an out-of-rotation candidate is tried again.
    open: Option<Duration>,
    /// A fallback the budget could not cover at its prices.
    refused: Option<ApiError>,
}

impl Tally {
    fn new(primary: Arc<ModelConfig>) -> Tally {
        Tally {
            primary,
            failed: None,
            hop: None,
            open: None,
            refused: None,
        }
    }

    fn out_of_rotation(&mut self, model: &Arc<ModelConfig>, retry_after: Duration) {
        self.open = Some(self.open.map_or(retry_after, |d| d.min(retry_after)));
        self.hop
            .get_or_insert_with(|| (model.clone(), "circuit_open", None));
    }

    /// The answer when no candidate served: the last upstream failure (a 451 when the routed
    /// model failed and every fallback was outside the boundary), else 503 when all were out of
    /// rotation, else the budget's refusal or the boundary's.
    fn give_up(self, candidates: Candidates) -> NotServed {
        let only_one = candidates.models.len() == 1;
        if let Some((e, model)) = self.failed {
            if let (true, Some(breach)) = (only_one, candidates.forbidden) {
                let mut error = ApiError::from(breach);
                let failure = e.to_string();
                error.message = format!(
                    "{}. No fallback may serve this request: {}",
                    failure.trim_end_matches('.'),
                    error.message
                );
                return NotServed::by(&model, error);
            }
            return NotServed::by(&model, e.into());
        }
        if let Some(wait) = self.open {
            let names: Vec<&str> = candidates.models.iter().map(|m| m.id.0.as_str()).collect();
            let error = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "upstream_error",
                format!(
                    "No model can serve this request right now: {} failed repeatedly and {} out \
                     of rotation; retry after {} s.",
                    names.join(", "),
                    if names.len() == 1 { "is" } else { "are" },
                    crate::access::limits::retry_after_secs(wait)
                ),
            )
            .with_code("model_unavailable");
            return NotServed {
                error,
                model: self.primary,
                retry_after: Some(wait),
            };
        }
        let error = match (self.refused, candidates.forbidden) {
            (Some(e), _) => e,
            (None, Some(breach)) => breach.into(),
            (None, None) => Breach::NoCandidate.into(),
        };
        NotServed::by(&self.primary, error)
    }
}

/// The JSON bytes sent upstream.
pub fn encode_body(body: &serde_json::Map<String, serde_json::Value>) -> Result<Bytes, ApiError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| ApiError::bad_request(format!("The request could not be encoded: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::EXPLICIT_POLICY;

    const CONFIG: &str = "sovereign_id = \"t\"\nregion = \"sa\"\ndefault_model = \"a\"\n\
        [[models]]\nid = \"a\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"sa\"\nlocal = true\n\
        base_url = \"http://127.0.0.1:9/v1\"\nfallbacks = [\"eu\", \"b\", \"c\"]\n\
        [[models]]\nid = \"b\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"sa\"\nlocal = true\n\
        base_url = \"http://127.0.0.1:9/v1\"\n\
        [[models]]\nid = \"c\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"sa\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n\
        [[models]]\nid = \"eu\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"eu\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n";

    fn ids(c: &Candidates) -> Vec<&str> {
        c.models.iter().map(|m| m.id.0.as_str()).collect()
    }

    #[test]
    fn candidates_are_the_route_then_router_then_configured_fallbacks_once_each() {
        let config = Config::parse(CONFIG).unwrap();
        let m = |id: &str| config.model(id).unwrap().clone();
        let route = Route {
            model: m("a"),
            fallbacks: vec![m("c"), m("a")],
            policy: EXPLICIT_POLICY.into(),
            rule: EXPLICIT_POLICY.into(),
        };
        let c = candidates(&route, &config, &Boundary::OPEN);
        assert_eq!(ids(&c), ["a", "c", "eu", "b"]);
        assert!(c.forbidden.is_none());
    }

    #[test]
    fn candidates_outside_the_boundary_are_skipped() {
        let config = Config::parse(CONFIG).unwrap();
        let route = Route {
            model: config.model("a").unwrap().clone(),
            fallbacks: Vec::new(),
            policy: EXPLICIT_POLICY.into(),
            rule: EXPLICIT_POLICY.into(),
        };
        let sa = vec!["sa".to_string()];
        let regions = Boundary {
            allowed_regions: &sa,
            allowed_models: &[],
            sensitive: false,
        };
        let c = candidates(&route, &config, &regions);
        assert_eq!(ids(&c), ["a", "b", "c"]);
        assert!(matches!(c.forbidden, Some(Breach::Region { ref model, .. }) if model == "eu"));
        let sensitive = Boundary {
            allowed_regions: &sa,
            allowed_models: &[],
            sensitive: true,
        };
        let c = candidates(&route, &config, &sensitive);
        assert_eq!(ids(&c), ["a", "b"], "sensitive: local models only");
    }

    #[test]
    fn only_connection_timeout_5xx_and_429_move_on() {
        let model = crate::domain::ModelId("m".into());
        let rejected = |status: u16| UpstreamError::Rejected {
            model: model.clone(),
            status: StatusCode::from_u16(status).unwrap(),
            message: String::new(),
            param: None,
        };
        assert_eq!(
            retry_reason(&UpstreamError::Connect {
                model: model.clone(),
                detail: String::new()
            }),
            Some(("connect_error", None))
        );
        assert_eq!(
            retry_reason(&UpstreamError::Timeout {
                model: model.clone(),
                what: String::new()
            }),
            Some(("timeout", None))
        );
        assert_eq!(
            retry_reason(&UpstreamError::ServerError {
                model: model.clone(),
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: String::new()
            }),
            Some(("server_error", Some(503)))
        );
        assert_eq!(
            retry_reason(&rejected(429)),
            Some(("rate_limited", Some(429)))
        );
        assert_eq!(retry_reason(&rejected(400)), None);
        assert_eq!(retry_reason(&rejected(404)), None);
    }
}

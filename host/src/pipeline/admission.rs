//! Whether a request may run at all, in three layers: `authenticate` (per-address rate limit,
//! then the key: 401), `admit` (the key's address allow-list: 403; request rate and tokens per
//! day: 429) and `require` (the route group's role: 403), plus the [`AdminOnly`] extractor.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use http::StatusCode;
use http::request::Parts;

use super::audit::Audit;
use super::{ClientIp, RequestCtx};
use crate::access::CachedKey;
use crate::access::Principal;
use crate::access::limits::X_RATELIMIT_LIMIT;
use crate::domain::Role;
use crate::metrics::Metrics;
use crate::server::body;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::tls::PeerCert;

/// Per-address rate limit, then the key (401). Unauthenticated requests stop here, so they are
/// neither journaled nor counted against any key.
pub async fn authenticate(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    let access = app.access();
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), |c| c.0);
    let ip = access.client_ip(peer, req.headers());
    let address = access.check_address(ip).await;
    let mut res = match &address {
        Err(refusal) => {
            body::discard(req.into_body(), &app.config().server).await;
            refused(refusal.clone(), access)
        }
        Ok(Some(s)) if !s.allowed() => {
            Metrics::inc(&app.metrics().rate_limited_total);
            app.metrics().by.limit_refused("", "address_rpm");
            body::discard(req.into_body(), &app.config().server).await;
            ApiError::rate_limited(format!(
                "Too many requests from {ip}: {} per minute. Retry after {} s.",
                s.limit,
                s.retry_after
                    .map_or(1, crate::access::limits::retry_after_secs)
            ))
            .into_response()
        }
        _ => match authenticated(
            access,
            req.headers(),
            req.extensions().get::<Arc<PeerCert>>().map(AsRef::as_ref),
            req.extensions()
                .get::<RequestCtx>()
                .and_then(|c| c.trace.as_ref()),
        )
        .await
        {
            Ok(key) => {
                if let Some(audit) = req.extensions().get::<Audit>() {
                    audit.principal(&key.principal);
                }
                req.extensions_mut().insert(key.principal.clone());
                req.extensions_mut().insert(ClientIp(ip));
                req.extensions_mut().insert(key);
                next.run(req).await
            }
            Err(e) => {
                Metrics::inc(&app.metrics().unauthenticated_total);
                body::discard(req.into_body(), &app.config().server).await;
                ApiError::from(e).into_response()
            }
        },
    };
    // The key's limit, when it has one, is what the headers describe; else the address's.
    if let Ok(Some(s)) = address
        && !res.headers().contains_key(X_RATELIMIT_LIMIT)
    {
        s.write_headers(res.headers_mut(), access.now_ms());
    }
    res
}

/// The key (or certificate) of a request, in an `authenticate` span when traces are on.
async fn authenticated(
    access: &crate::access::Access,
    headers: &http::HeaderMap,
    peer: Option<&PeerCert>,
    trace: Option<&crate::traces::Trace>,
) -> Result<Arc<CachedKey>, crate::auth::AuthError> {
    let span = trace.map(|t| t.child("authenticate"));
    let key = access.authenticate(headers, peer).await;
    match (span, &key) {
        (Some(s), Ok(k)) => s.set("sovereign.team", k.principal.team_id.clone()),
        (Some(s), Err(e)) => s.fail(e.to_string()),
        (None, _) => {}
    }
    key
}

/// The routes that only count a prompt (`count_tokens`): tokens per day do not refuse them.
pub const COUNT_ONLY_PATHS: [&str; 1] = ["/v1/messages/count_tokens"];

/// After authentication (and inside the journal): the key's address allow-list (403), request
/// rate and tokens per day (429; not on [`COUNT_ONLY_PATHS`]).
pub async fn admit(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let (Some(key), Some(ClientIp(ip))) = (
        req.extensions().get::<Arc<CachedKey>>().cloned(),
        req.extensions().get::<ClientIp>().copied(),
    ) else {
        return ApiError::from(crate::auth::AuthError::Missing).into_response();
    };
    let access = app.access();
    if let Some(refusal) = store_outage(&app) {
        body::discard(req.into_body(), &app.config().server).await;
        return refusal;
    }
    let (rate, mut verdict) = access.admit(&key, ip).await;
    // Counting generates nothing: the day's tokens do not refuse it (its request rate does).
    if matches!(verdict, Err(crate::access::Refusal::Tokens(_)))
        && COUNT_ONLY_PATHS.contains(&req.uri().path())
    {
        verdict = Ok(());
    }
    let mut res = match verdict {
        Ok(()) => next.run(req).await,
        Err(refusal) => {
            if !matches!(refusal, crate::access::Refusal::Unavailable(_)) {
                Metrics::inc(&app.metrics().rate_limited_total);
            }
            if let Some(limit) = refusal.limit() {
                app.metrics()
                    .by
                    .limit_refused(&key.principal.team_id, limit);
            }
            body::discard(req.into_body(), &app.config().server).await;
            refused(refusal, access)
        }
    };
    if let Some(s) = rate {
        s.write_headers(res.headers_mut(), access.now_ms());
    }
    res
}

/// 503 once the shared store has been failing for longer than `[store] outage_grace_ms`: until
/// then requests go on with their usage queued; past it, nothing more is served that could not
/// be recorded.
fn store_outage(app: &AppState) -> Option<Response> {
    let grace = app.config().store.outage_grace()?;
    let down = app.budgets().charger().outage()?;
    if down <= grace {
        return None;
    }
    let mut res = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        format!(
            "The gateway's database has not accepted writes for {} s; requests are refused until it does.",
            down.as_secs()
        ),
    )
    .with_code("store_unavailable")
    .into_response();
    res.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from(5));
    Some(res)
}

/// A refusal as its response: the error, and `Retry-After` where the wait is known (tokens per
/// day: until midnight UTC; shared limits unavailable: a second).
fn refused(refusal: crate::access::Refusal, access: &crate::access::Access) -> Response {
    let retry = match &refusal {
        crate::access::Refusal::Tokens(q) => Some(std::time::Duration::from_millis(
            u64::try_from(q.resets_at - access.now_ms()).unwrap_or(0),
        )),
        crate::access::Refusal::Unavailable(_) => Some(std::time::Duration::from_secs(1)),
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

/// The innermost check of a route group: the key's role (admin passes every group).
pub async fn require(
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
    body::discard(req.into_body(), &app.config().server).await;
    refusal.into_response()
}

/// An extractor that admits admin keys only; others get 403 `permission_error`. Runs after
/// authentication, which put the [`Principal`] in the request's extensions.
pub struct AdminOnly;

impl<S: Send + Sync> FromRequestParts<S> for AdminOnly {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        match parts.extensions.get::<std::sync::Arc<Principal>>() {
            Some(p) if p.role == Role::Admin => Ok(AdminOnly),
            Some(p) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "permission_error",
                format!(
                    "This endpoint needs an admin key; this key's role is `{}`.",
                    p.role.as_str()
                ),
            )
            .with_code("insufficient_permissions")),
            None => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "authentication_error",
                "Missing API key.",
            )),
        }
    }
}

//! The one place where failures become HTTP responses: [`ApiError`] renders the chat-completions
//! convention's error body `{"error": {"message", "type", "param", "code"}}` (all four keys, `param`
//! and `code` may be null) so that the OpenAI SDKs raise their matching exception classes.

use std::borrow::Cow;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use crate::access::Refusal;
use crate::auth::AuthError;
use crate::budget::BudgetError;
use crate::facts::FactsError;
use crate::rag::RagError;
use crate::routing::RoutingError;
use crate::routing::registry::RegistryError;
use crate::upstream::UpstreamError;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub code: Option<Cow<'static, str>>,
    pub param: Option<String>,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            code: None,
            param: None,
            message: message.into(),
        }
    }

    pub fn with_code(mut self, code: impl Into<Cow<'static, str>>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// 400 `invalid_request_error`, naming the offending parameter.
    pub fn invalid(param: &str, message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message).with_param(param)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    pub fn model_not_found(model: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("The model `{model}` does not exist or you do not have access to it."),
        )
        .with_param("model")
        .with_code("model_not_found")
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "invalid_request_error", message)
            .with_code("not_found")
    }

    pub fn payload_too_large(limit: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("Request body is larger than the limit of {limit} bytes."),
        )
        .with_code("request_too_large")
    }

    /// The JSON body as the convention writes it; also used for SSE error events.
    /// The activity journal is off in this gateway's configuration (409).
    pub fn journal_disabled() -> Self {
        ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            "The activity journal is disabled in this gateway's configuration.",
        )
        .with_code("journal_disabled")
    }

    /// Reading the activity journal failed (500; the cause is logged, not sent).
    pub fn journal_unreadable(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "reading the activity journal failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "The activity journal could not be read.",
        )
    }

    pub fn body(&self) -> serde_json::Value {
        json!({
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.code,
            }
        })
    }
}

/// The error `type` of a refusal, left on its response for the metrics (`pipeline::observe`).
#[derive(Debug, Clone, Copy)]
pub struct ErrorKind(pub &'static str);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let no_retry = self.kind == "insufficient_quota";
        let mut res = (self.status, Json(self.body())).into_response();
        res.extensions_mut().insert(ErrorKind(self.kind));
        if no_retry {
            // The SDKs retry 429s by default; an exhausted budget does not come back by waiting.
            res.headers_mut().insert(
                http::HeaderName::from_static("x-should-retry"),
                http::HeaderValue::from_static("false"),
            );
        }
        res
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        let message = e.to_string();
        match e {
            AuthError::Unavailable(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", message)
                    .with_code("store_unavailable")
            }
            AuthError::Expired => {
                ApiError::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
                    .with_code("expired_api_key")
            }
            AuthError::Revoked => {
                ApiError::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
                    .with_code("revoked_api_key")
            }
            AuthError::CertificateUnmapped(_) => {
                ApiError::new(StatusCode::FORBIDDEN, "permission_error", message)
                    .with_code("certificate_not_mapped")
            }
            AuthError::Repeated => {
                ApiError::bad_request(message).with_code("repeated_authorization")
            }
            AuthError::TeamMismatch { .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "permission_error", message)
                    .with_code("identity_mismatch")
            }
            _ => ApiError::new(StatusCode::UNAUTHORIZED, "authentication_error", message)
                .with_code("invalid_api_key"),
        }
    }
}

impl ApiError {
    /// 403 `permission_error`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "permission_error", message)
            .with_code("insufficient_permissions")
    }

    /// 429 `rate_limit_exceeded` (the `Retry-After` and `X-RateLimit-*` headers are added by
    /// whoever knows the limiter's state).
    pub fn rate_limited(message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            message,
        )
        .with_code("rate_limit_exceeded")
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Address(ip) => ApiError::forbidden(format!(
                "This key may not be used from the address {ip}."
            ))
            .with_code("ip_not_allowed"),
            Refusal::Rate(s) => ApiError::rate_limited(format!(
                "Rate limit reached: {} requests per minute for this key. Retry after {} s.",
                s.limit,
                s.retry_after.map_or(1, crate::access::limits::retry_after_secs)
            )),
            Refusal::Tokens(q) => ApiError::rate_limited(format!(
                "Token quota reached: {} of {} tokens per day used by {}. It resets at midnight UTC.",
                q.used,
                q.cap,
                q.scope.describe()
            ))
            .with_code("tokens_per_day_exceeded"),
            Refusal::Unavailable(why) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                format!(
                    "The shared rate limits are unavailable ({why}); the gateway refuses rather than admit requests past them. Retry shortly."
                ),
            )
            .with_code("shared_state_unavailable"),
        }
    }
}

impl From<BudgetError> for ApiError {
    fn from(e: BudgetError) -> Self {
        match e {
            BudgetError::Insufficient(i) => {
                let (kind, id) = match &i.scope {
                    crate::store::BudgetScope::Team(t) => ("team", t.0.clone()),
                    crate::store::BudgetScope::Key(k) => ("key", k.0.clone()),
                };
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "insufficient_quota",
                    format!(
                        "The {kind} {id} has not enough budget left for this request: it needs up \
                         to {:.6} and {:.6} remains. Lower max_tokens or raise the budget.",
                        crate::budget::units(i.needed),
                        crate::budget::units(i.remaining)
                    ),
                )
                .with_code("insufficient_quota")
            }
            BudgetError::Unavailable(m) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", m)
                    .with_code("store_unavailable")
            }
        }
    }
}

impl From<crate::residency::Breach> for ApiError {
    fn from(b: crate::residency::Breach) -> Self {
        if let crate::residency::Breach::ModelNotAllowed { .. } = b {
            // A team's own policy, not residency: 403.
            return ApiError::forbidden(b.to_string()).with_code("model_not_allowed");
        }
        let code = match b {
            crate::residency::Breach::ModelNotAllowed { .. } => "model_not_allowed",
            crate::residency::Breach::Region { .. } => "region_not_allowed",
            crate::residency::Breach::NotLocal { .. } => "sensitive_requires_local",
            crate::residency::Breach::NoCandidate => "no_compliant_model",
        };
        ApiError::new(
            StatusCode::UNAVAILABLE_FOR_LEGAL_REASONS,
            "sovereignty_error",
            b.to_string(),
        )
        .with_code(code)
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        use crate::store::StoreError as S;
        let message = e.to_string();
        match e {
            S::TeamNotFound(_) | S::KeyNotFound(_) => ApiError::not_found(message),
            S::Invalid { field, .. } => ApiError::invalid(field, message),
            S::KeyNotRotatable(..) => {
                ApiError::new(StatusCode::CONFLICT, "invalid_request_error", message)
                    .with_code("key_not_rotatable")
            }
            _ => {
                tracing::error!(error = %message, "store call failed");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "server_error",
                    "The gateway's store failed; the change was not made.",
                )
                .with_code("store_unavailable")
            }
        }
    }
}

impl From<UpstreamError> for ApiError {
    fn from(e: UpstreamError) -> Self {
        let message = e.to_string();
        match e {
            UpstreamError::Rejected { status, param, .. } => {
                let kind = match status.as_u16() {
                    401 | 403 => "upstream_auth_error",
                    404 => "invalid_request_error",
                    429 => "rate_limit_exceeded",
                    _ => "invalid_request_error",
                };
                // The client did nothing wrong if the upstream refuses the gateway's own
                // credentials: surface that as a gateway fault, not as the client's 401.
                let status = match status.as_u16() {
                    401 | 403 => StatusCode::BAD_GATEWAY,
                    _ => status,
                };
                let e = ApiError::new(status, kind, message).with_code("upstream_rejected");
                match param {
                    Some(p) => e.with_param(p),
                    None => e,
                }
            }
            UpstreamError::Timeout { .. } => {
                ApiError::new(StatusCode::GATEWAY_TIMEOUT, "upstream_error", message)
                    .with_code("upstream_timeout")
            }
            UpstreamError::Connect { .. }
            | UpstreamError::ServerError { .. }
            | UpstreamError::Protocol { .. } => {
                ApiError::new(StatusCode::BAD_GATEWAY, "upstream_error", message)
                    .with_code("upstream_unavailable")
            }
        }
    }
}

impl From<RagError> for ApiError {
    fn from(e: RagError) -> Self {
        match e {
            RagError::Unavailable(why) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                format!("Documents and retrieval are unavailable on this gateway: {why}."),
            )
            .with_code("retrieval_unavailable"),
            RagError::Extract(e) => {
                let status = StatusCode::from_u16(e.status_hint())
                    .unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
                let code = match e {
                    sovereign_documents::ExtractError::Unsupported { .. } => {
                        "unsupported_file_type".to_string()
                    }
                    _ => serde_json::to_value(&e)
                        .ok()
                        .and_then(|v| {
                            v.get("error")
                                .and_then(serde_json::Value::as_str)
                                .map(str::to_owned)
                        })
                        .unwrap_or_else(|| "unreadable_document".into()),
                };
                let kind = if status.is_server_error() {
                    "server_error"
                } else {
                    "invalid_request_error"
                };
                let mut message = e.to_string();
                if let Some(first) = message.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                ApiError::new(status, kind, format!("{message}."))
                    .with_code(code)
                    .with_param("file")
            }
            RagError::Invalid { param, message } => ApiError::invalid(param, message),
            RagError::NoSuchFile(id) => {
                let shown: String = id.chars().take(80).collect();
                ApiError::not_found(format!("No file `{shown}` in your team's files."))
            }
            RagError::Store(e) => ApiError::from(e),
            RagError::Upstream(e) => ApiError::from(e),
            e @ (RagError::Embed(_) | RagError::Worker(_)) => {
                tracing::error!(error = %e, "document library failure");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "The document library failed to process the request.",
                )
            }
        }
    }
}

impl From<RoutingError> for ApiError {
    fn from(e: RoutingError) -> Self {
        match e {
            RoutingError::UnknownModel(m) => ApiError::model_not_found(&m),
            RoutingError::Rejected {
                status,
                code,
                message,
            } => {
                let status = StatusCode::from_u16(status)
                    .ok()
                    .filter(StatusCode::is_client_error)
                    .unwrap_or(StatusCode::BAD_REQUEST);
                ApiError::new(status, "routing_rejected", message).with_code(code)
            }
            e => ApiError::invalid("model", e.to_string()),
        }
    }
}

impl From<FactsError> for ApiError {
    fn from(e: FactsError) -> Self {
        ApiError::invalid(e.param(), e.to_string())
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> Self {
        let message = e.to_string();
        match e {
            RegistryError::Invalid { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
                    .with_code("invalid_policy")
            }
            RegistryError::UnknownVersion(_) => ApiError::not_found(message),
            RegistryError::NotActivatable { .. } => {
                ApiError::new(StatusCode::CONFLICT, "invalid_request_error", message)
                    .with_code("policy_failed_validation")
            }
        }
    }
}

//! The one place where failures become HTTP responses: [`ApiError`] renders the chat-completions
//! convention's error body `{"error": {"message", "type", "param", "code"}}` (all four keys, `param`
//! and `code` may be null) so that the OpenAI SDKs raise their matching exception classes.

use std::borrow::Cow;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use crate::auth::AuthError;
use crate::facts::FactsError;
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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            e.to_string(),
        )
        .with_code("invalid_api_key")
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

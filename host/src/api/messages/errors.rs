//! Errors in the Anthropic shape on the Messages routes. Every refusal on the way — the
//! authentication and admission layers (401, 403, 429), the phases and the handler (400, 404,
//! 413, 451, 5xx) — is made once, as the convention's `ApiError`; this layer, outermost on
//! the Messages routes, re-tells it as `{"type": "error", "error": {"type", "message"},
//! "request_id"}` with the type the Anthropic SDKs expect for the status, and puts the request id
//! in a `request-id` header as the Messages API does. The status is kept.

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderName, HeaderValue, header};
use serde_json::{Value, json};

use crate::pipeline::X_AUDIT_TRACE_ID;

/// The Messages API's request id header.
pub const REQUEST_ID: HeaderName = HeaderName::from_static("request-id");

/// Longest error body re-told (the convention's bodies are a few hundred bytes).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The Messages error type of a status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 | 451 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// The Anthropic error body for a convention error body (`{"error": {"message", …}}`).
pub fn anthropic_body(status: u16, convention: &Value, request_id: &str) -> Value {
    let message = convention
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("The request failed.");
    json!({
        "type": "error",
        "error": {"type": error_type(status), "message": message},
        "request_id": request_id,
    })
}

/// Whether a path is one of the Messages routes.
pub fn is_messages_path(path: &str) -> bool {
    path == "/v1/messages" || path.starts_with("/v1/messages/")
}

/// The layer, for every route (it leaves the others alone): on the Messages routes the
/// `request-id` header on every answer, error bodies re-told.
pub async fn anthropic_errors(request: Request, next: Next) -> Response {
    if !is_messages_path(request.uri().path()) {
        return next.run(request).await;
    }
    let response = next.run(request).await;
    let id = response.headers().get(X_AUDIT_TRACE_ID).cloned();
    let (mut parts, body) = response.into_parts();
    if let Some(id) = &id {
        parts.headers.insert(REQUEST_ID, id.clone());
    }
    if !(parts.status.is_client_error() || parts.status.is_server_error()) {
        return Response::from_parts(parts, body);
    }
    let bytes = axum::body::to_bytes(body, MAX_ERROR_BODY)
        .await
        .unwrap_or_default();
    let convention = serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null);
    let request_id = id
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let body = anthropic_body(parts.status.as_u16(), &convention, request_id).to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_the_sdk_error_types_and_the_message_is_kept() {
        let body = json!({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                    "param": null, "code": "invalid_api_key"}});
        assert_eq!(
            anthropic_body(401, &body, "req-1"),
            json!({"type": "error", "error": {"type": "authentication_error",
                   "message": "Incorrect API key provided."}, "request_id": "req-1"})
        );
        for (status, kind) in [
            (400, "invalid_request_error"),
            (403, "permission_error"),
            (404, "not_found_error"),
            (413, "request_too_large"),
            (422, "invalid_request_error"),
            (429, "rate_limit_error"),
            (451, "permission_error"),
            (500, "api_error"),
            (502, "api_error"),
            (503, "overloaded_error"),
        ] {
            assert_eq!(error_type(status), kind, "{status}");
        }
        assert_eq!(
            anthropic_body(500, &Value::Null, "r")["error"]["message"],
            "The request failed."
        );
    }
}

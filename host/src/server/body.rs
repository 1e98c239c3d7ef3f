//! Reading a JSON request body under the gateway's limits: the content type must be JSON, the
//! body must fit the size limit (checked from `Content-Length` before reading, and while reading)
//! and must arrive within the body-read timeout; the result is a JSON object.

use axum::body::Body;
use http::{HeaderMap, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Map, Value};

use crate::config::ServerConfig;
use crate::server::error::ApiError;

pub async fn read_json_object(
    headers: &HeaderMap,
    body: Body,
    server: &ServerConfig,
) -> Result<Map<String, Value>, ApiError> {
    read_json_object_within(headers, body, server.max_body_bytes, server).await
}

/// [`read_json_object`] with a size limit of its own (the admin policy upload's, which is larger
/// than `server.max_body_bytes`); the body-read timeout still applies.
pub async fn read_json_object_within(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    server: &ServerConfig,
) -> Result<Map<String, Value>, ApiError> {
    check_content_type(headers)?;
    let bytes = read_bytes_within(headers, body, limit, server).await?;
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "The request body is empty; a JSON object is required.",
        ));
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Err(ApiError::bad_request(
            "The request body is not valid UTF-8.",
        ));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request(
            "The request body must be a JSON object.",
        )),
        Err(e) => Err(ApiError::bad_request(format!(
            "The request body is not valid JSON: {e}."
        ))),
    }
}

/// The raw body (any content type, e.g. a multipart upload) under `limit` bytes (checked from
/// `Content-Length` before reading, and while reading) and the body-read timeout.
pub async fn read_bytes_within(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    server: &ServerConfig,
) -> Result<bytes::Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::payload_too_large(limit));
    }
    let read = Limited::new(body, limit).collect();
    match tokio::time::timeout(server.body_read_timeout, read).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            "The request body did not arrive in time.",
        )
        .with_code("request_timeout")),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::payload_too_large(limit))
        }
        Ok(Err(_)) => Err(ApiError::bad_request("The request body could not be read.")),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = ct.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else if ct.is_empty() {
        Err(ApiError::bad_request(
            "Missing Content-Type header; send `Content-Type: application/json`.",
        ))
    } else {
        Err(ApiError::bad_request(format!(
            "Unsupported Content-Type `{ct}`; send `Content-Type: application/json`."
        )))
    }
}

/// A JSON body read under the server's limits and decoded into `T` (whose serde attributes
/// refuse unknown fields); a decoding failure is a 400 naming `what` and serde's reason.
pub async fn read_json<T: serde::de::DeserializeOwned>(
    headers: &HeaderMap,
    body: Body,
    server: &ServerConfig,
    what: &str,
) -> Result<T, ApiError> {
    let map = read_json_object(headers, body, server).await?;
    serde_json::from_value(Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid {what}: {e}.")))
}

/// [`read_json`] for actions whose body is optional (`POST …/rotate`): without a
/// `Content-Type`, the defaults.
pub async fn read_json_or_default<T: serde::de::DeserializeOwned + Default>(
    headers: &HeaderMap,
    body: Body,
    server: &ServerConfig,
    what: &str,
) -> Result<T, ApiError> {
    if headers.contains_key(header::CONTENT_TYPE) {
        read_json(headers, body, server, what).await
    } else {
        Ok(T::default())
    }
}

/// Reads and throws away a request body the gateway refuses before looking at it (401, 403,
/// 429), within the server's size and time limits. Answering with the body unread would make
/// hyper close the connection with the client's bytes still unread, and the kernel then resets
/// it — which can destroy the error response before the client reads it.
pub async fn discard(body: Body, server: &ServerConfig) {
    let drain = async {
        let mut body = Limited::new(body, server.max_body_bytes);
        while let Some(frame) = body.frame().await {
            if frame.is_err() {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(server.body_read_timeout, drain).await;
}

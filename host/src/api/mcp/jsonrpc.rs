//! The MCP door's JSON-RPC: one message read from a POST body (a request, a notification, or a
//! client's response, which is acknowledged and dropped), and answers rendered as JSON — a
//! result, or an error whose HTTP status follows the 2026-07-28 table in that era (400 for
//! parse, request, params, header and version errors, 404 for an unknown method) and is 200 in
//! the session era, as its clients expect.

use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, StatusCode};
use serde_json::{Map, Value, json};

use crate::mcp::wire;

/// Longest method name read.
const MAX_METHOD: usize = 128;

/// One message from the client.
pub struct Message {
    /// `None`: a notification (or a client's response): acknowledged with 202.
    pub id: Option<Value>,
    pub method: String,
    pub params: Map<String, Value>,
}

impl Message {
    /// The message in `body`, or the error that answers it.
    pub fn parse(mut body: Map<String, Value>) -> Result<Message, Failure> {
        let id = match body.remove("id") {
            None => None,
            Some(v @ (Value::String(_) | Value::Number(_))) => Some(v),
            Some(_) => {
                return Err(Failure::new(
                    wire::INVALID_REQUEST,
                    "`id` must be a string or a number",
                ));
            }
        };
        if body.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(Failure::new(wire::INVALID_REQUEST, "`jsonrpc` must be \"2.0\"").id(id));
        }
        let method = match body.remove("method") {
            Some(Value::String(m)) if !m.is_empty() && m.len() <= MAX_METHOD => m,
            // A client's response to a server request (the gateway sends none): dropped.
            None if body.contains_key("result") || body.contains_key("error") => {
                return Ok(Message {
                    id: None,
                    method: String::new(),
                    params: Map::new(),
                });
            }
            _ => {
                return Err(Failure::new(
                    wire::INVALID_REQUEST,
                    "`method` must be a string of 1 to 128 bytes",
                )
                .id(id));
            }
        };
        let params = match body.remove("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => {
                return Err(
                    Failure::new(wire::INVALID_PARAMS, "`params` must be an object").id(id),
                );
            }
        };
        Ok(Message { id, method, params })
    }

    /// The `_meta` member of the params, if any.
    pub fn meta(&self, key: &str) -> Option<&Value> {
        self.params.get("_meta").and_then(|m| m.get(key))
    }
}

/// A JSON-RPC error answer (boxed: it rides every `Result` of the door).
#[derive(Debug)]
pub struct Failure(Box<Error>);

#[derive(Debug)]
struct Error {
    id: Option<Value>,
    code: i64,
    message: String,
    data: Option<Value>,
    /// The HTTP status (set from the era when answered).
    status: Option<StatusCode>,
}

impl Failure {
    pub fn new(code: i64, message: impl Into<String>) -> Failure {
        Failure(Box::new(Error {
            id: None,
            code,
            message: message.into(),
            data: None,
            status: None,
        }))
    }

    pub fn id(mut self, id: Option<Value>) -> Failure {
        self.0.id = id;
        self
    }

    pub fn data(mut self, data: Value) -> Failure {
        self.0.data = Some(data);
        self
    }

    /// The HTTP status of this error in the stateless era.
    pub fn modern_status(mut self) -> Failure {
        self.0.status = Some(match self.0.code {
            wire::PARSE_ERROR
            | wire::INVALID_REQUEST
            | wire::INVALID_PARAMS
            | wire::HEADER_MISMATCH
            | wire::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
            wire::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        });
        self
    }

    pub fn with_status(mut self, status: StatusCode) -> Failure {
        self.0.status = Some(status);
        self
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let Error {
            id,
            code,
            message,
            data,
            status,
        } = *self.0;
        let mut error = json!({"code": code, "message": message});
        if let Some(d) = data {
            error["data"] = d;
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
        json_response(status.unwrap_or(StatusCode::OK), &body, None)
    }
}

/// A result answer, with the session id header when one was opened.
pub fn result(id: Option<Value>, result: Value, session: Option<&str>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    json_response(StatusCode::OK, &body, session)
}

fn json_response(status: StatusCode, body: &Value, session: Option<&str>) -> Response {
    let mut r = (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    if let Some(v) = session.and_then(|s| HeaderValue::from_str(s).ok()) {
        r.headers_mut()
            .insert(HeaderName::from_static(wire::SESSION_HEADER), v);
    }
    r
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]
    use super::*;

    fn parse(v: Value) -> Result<Message, Failure> {
        Message::parse(v.as_object().unwrap().clone())
    }

    #[test]
    fn requests_notifications_and_bad_messages() {
        let m = parse(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .ok()
            .unwrap();
        assert_eq!((m.id, m.method.as_str()), (Some(json!(1)), "tools/list"));
        let n = parse(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .ok()
            .unwrap();
        assert!(n.id.is_none());
        for bad in [
            json!({"jsonrpc": "1.0", "id": 1, "method": "x"}),
            json!({"jsonrpc": "2.0", "id": {}, "method": "x"}),
            json!({"jsonrpc": "2.0", "id": 1}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "x".repeat(200)}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
        let f = Failure::new(wire::METHOD_NOT_FOUND, "no").modern_status();
        assert_eq!(f.0.status, Some(StatusCode::NOT_FOUND));
    }
}

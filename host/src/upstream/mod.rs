//! Calls to OpenAI-compatible model servers (vLLM, Ollama, llama.cpp server, TGI, the simulator):
//! one pooled HTTP client per model with its connect timeout, a first-byte timeout around the
//! request, a total deadline for the whole exchange, and failures sorted into what the client
//! should see (upstream 4xx passed on; 5xx and connection errors → 502; timeouts → 504).

pub mod client;
pub mod health;
pub mod messages;
mod sse;
mod tokenize;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, USER_AGENT};
use http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::domain::{ModelConfig, ModelId};

pub use sse::{CountUsage, RelayOptions, StreamOutcome, StreamSummary, relay_sse};

/// Upstream answers larger than this are refused (a non-streamed chat or embeddings response).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// How much of an upstream error body is read to find its message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

const USER_AGENT_VALUE: &str = concat!("sovereign-gateway/", env!("CARGO_PKG_VERSION"));
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    #[error("Could not connect to the upstream of model `{model}`: {detail}")]
    Connect { model: ModelId, detail: String },
    #[error("The upstream of model `{model}` did not answer in time: {what}.")]
    Timeout { model: ModelId, what: String },
    #[error("The upstream of model `{model}` failed with status {status}: {message}")]
    ServerError {
        model: ModelId,
        status: StatusCode,
        message: String,
    },
    #[error("The upstream of model `{model}` refused the request: {message}")]
    Rejected {
        model: ModelId,
        status: StatusCode,
        message: String,
        /// The parameter the upstream blamed, when it said.
        param: Option<String>,
    },
    #[error("The upstream of model `{model}` sent an invalid response: {detail}")]
    Protocol { model: ModelId, detail: String },
}

/// Token usage as the upstream reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    pub fn from_json(v: &serde_json::Value) -> Option<Usage> {
        let u = v.get("usage")?;
        Some(Usage {
            prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
            completion_tokens: u
                .get("completion_tokens")
                .and_then(|c| c.as_u64())
                .unwrap_or(0),
        })
    }
}

/// The upstream endpoints the gateway calls, relative to a model's base URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    ChatCompletions,
    /// Legacy text completions (`/completions`).
    Completions,
    Embeddings,
    /// The server's tokenizer (`count_tokens`): vLLM's and llama.cpp's `/tokenize`, beside
    /// `/v1` (`tokenize.rs`).
    Tokenize,
    /// llama.cpp server's `/apply-template` (the chat template applied, nothing generated).
    ApplyTemplate,
    /// The Anthropic Messages API (`/messages`), on models declared `messages = "native"`.
    Messages,
}

/// One upstream request: the endpoint, the encoded body and the headers it carries besides the
/// gateway's own (a Messages request's `anthropic-version` / `anthropic-beta`).
#[derive(Debug, Clone)]
pub struct Outbound {
    pub endpoint: Endpoint,
    pub body: Bytes,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Outbound {
    pub fn new(endpoint: Endpoint, body: Bytes) -> Outbound {
        Outbound {
            endpoint,
            body,
            headers: Vec::new(),
        }
    }
}

/// A model's pooled clients and what it needs to address the upstream.
struct ModelClient {
    /// Pool 0 off the serving lanes, then one per lane (`server::lanes`, [`use_pool`]): a
    /// lane's requests reuse connections whose tasks run on the same thread.
    pools: Box<[client::HttpClient]>,
    /// `Bearer <key>`, marked sensitive (kept out of debug output).
    authorization: Option<HeaderValue>,
    chat_url: Uri,
    completions_url: Uri,
    embeddings_url: Uri,
    tokenize_url: Uri,
    apply_template_url: Uri,
    messages_url: Uri,
}

thread_local! {
    /// The connection pool this thread's calls use (0 unless [`use_pool`] said otherwise).
    static POOL: Cell<usize> = const { Cell::new(0) };
}

/// Points this thread's upstream calls at pool `pool` of each model (a serving lane's, `1 +` its
/// number; one past the last falls back to pool 0).
pub fn use_pool(pool: usize) {
    POOL.set(pool);
}

/// All upstream clients, built once at start-up.
pub struct Upstreams {
    clients: HashMap<ModelId, ModelClient>,
}

/// An upstream call under way: the response headers have arrived with a success status.
pub struct Exchange {
    pub response: http::Response<Incoming>,
    /// The instant by which the whole exchange must be over.
    pub deadline: Instant,
    /// The answer is a Messages answer (read back as chat: `messages.rs`).
    pub messages: bool,
}

impl Upstreams {
    /// The models' clients, with a connection pool for each of `lanes` serving lanes (pools
    /// `1..=lanes`, [`use_pool`]) besides the one used off them (pool 0).
    pub fn new(models: &[Arc<ModelConfig>], lanes: usize) -> anyhow::Result<Upstreams> {
        let mut clients = HashMap::new();
        for m in models {
            let authorization = match &m.api_key_env {
                Some(var) => Some(authorization(&m.id, var)?),
                None => None,
            };
            let uri = |path: &str| -> anyhow::Result<Uri> {
                Ok(m.base_url.join(path)?.as_str().parse::<Uri>()?)
            };
            clients.insert(
                m.id.clone(),
                ModelClient {
                    pools: client::build(m, 1 + lanes)?.into(),
                    authorization,
                    chat_url: uri("chat/completions")?,
                    completions_url: uri("completions")?,
                    embeddings_url: uri("embeddings")?,
                    tokenize_url: tokenize::server_uri(&m.base_url, "tokenize")?,
                    apply_template_url: tokenize::server_uri(&m.base_url, "apply-template")?,
                    messages_url: uri("messages")?,
                },
            );
        }
        Ok(Upstreams { clients })
    }

    /// POSTs the request to the model's endpoint (with the caller's W3C `traceparent`, if any)
    /// and waits for the response headers. Non-success statuses are read and turned into an
    /// [`UpstreamError`].
    pub async fn post(
        &self,
        model: &ModelConfig,
        outbound: Outbound,
        traceparent: Option<HeaderValue>,
    ) -> Result<Exchange, UpstreamError> {
        let Outbound {
            endpoint,
            body,
            headers: extra,
        } = outbound;
        let start = Instant::now();
        let deadline = start + model.timeouts.total;
        let mc = self
            .clients
            .get(&model.id)
            .ok_or_else(|| UpstreamError::Protocol {
                model: model.id.clone(),
                detail: "no client configured".into(),
            })?;
        let uri = match endpoint {
            Endpoint::ChatCompletions => mc.chat_url.clone(),
            Endpoint::Completions => mc.completions_url.clone(),
            Endpoint::Embeddings => mc.embeddings_url.clone(),
            Endpoint::Tokenize => mc.tokenize_url.clone(),
            Endpoint::ApplyTemplate => mc.apply_template_url.clone(),
            Endpoint::Messages => mc.messages_url.clone(),
        };
        let mut req = http::Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = uri;
        let headers = req.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
        if let Some(auth) = &mc.authorization {
            headers.insert(AUTHORIZATION, auth.clone());
        }
        if let Some(tp) = traceparent {
            headers.insert(TRACEPARENT, tp);
        }
        for (name, value) in extra {
            headers.insert(name, value);
        }
        let first_byte = model.timeouts.first_byte.min(model.timeouts.total);
        let client = mc.pools.get(POOL.get()).unwrap_or(&mc.pools[0]);
        let response = match tokio::time::timeout(first_byte, client.request(req)).await {
            Err(_) => {
                return Err(UpstreamError::Timeout {
                    model: model.id.clone(),
                    what: format!("no response within {first_byte:?}"),
                });
            }
            Ok(Err(e)) => return Err(classify(&model.id, &e)),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(Exchange {
                response,
                deadline,
                messages: endpoint == Endpoint::Messages,
            });
        }
        let body = read_limited(
            &model.id,
            response.into_body(),
            MAX_ERROR_BODY_BYTES,
            deadline,
        )
        .await
        .unwrap_or_default();
        let message = error_message(&body);
        let model = model.id.clone();
        Err(if status.is_client_error() {
            UpstreamError::Rejected {
                model,
                status,
                message,
                param: error_param(&body),
            }
        } else {
            UpstreamError::ServerError {
                model,
                status,
                message,
            }
        })
    }

    /// Reads a whole (non-streamed) JSON answer within the exchange's deadline (a Messages
    /// answer read as a chat completion).
    pub async fn read_json(
        &self,
        model: &ModelConfig,
        exchange: Exchange,
    ) -> Result<serde_json::Value, UpstreamError> {
        let messages = exchange.messages;
        let body = read_limited(
            &model.id,
            exchange.response.into_body(),
            MAX_RESPONSE_BYTES,
            exchange.deadline,
        )
        .await?;
        let answer: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| UpstreamError::Protocol {
                model: model.id.clone(),
                detail: format!("the body is not JSON ({e})"),
            })?;
        Ok(if messages {
            messages::whole_to_chat(&answer)
        } else {
            answer
        })
    }
}

/// `Bearer <key>` from the environment variable a model's `api_key_env` names, kept out of debug
/// output.
fn authorization(model: &ModelId, var: &str) -> anyhow::Result<HeaderValue> {
    let key = std::env::var(var).map_err(|_| {
        anyhow::anyhow!("model `{model}`: environment variable `{var}` (api_key_env) is not set")
    })?;
    let mut value = HeaderValue::try_from(format!("Bearer {key}")).map_err(|_| {
        anyhow::anyhow!("model `{model}`: environment variable `{var}` (api_key_env) is not a valid header value")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

async fn read_limited(
    model: &ModelId,
    mut body: Incoming,
    limit: usize,
    deadline: Instant,
) -> Result<Vec<u8>, UpstreamError> {
    let read = async {
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| classify(model, &e))?;
            let Ok(chunk) = frame.into_data() else {
                continue; // trailers
            };
            if out.len() + chunk.len() > limit {
                return Err(UpstreamError::Protocol {
                    model: model.clone(),
                    detail: format!("the response is larger than {limit} bytes"),
                });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    };
    match tokio::time::timeout_at(deadline, read).await {
        Ok(r) => r,
        Err(_) => Err(UpstreamError::Timeout {
            model: model.clone(),
            what: "the response was not complete by the total timeout".into(),
        }),
    }
}

/// Sorts a failed call or body read: a connection that could not be made (refused, unreachable,
/// a failed TLS handshake) is `Connect`; one not made within the model's connect timeout (TCP and
/// TLS together) `Timeout`; anything after it (a connection cut mid-answer, a malformed response)
/// `Protocol`. The innermost cause is the detail.
fn classify(model: &ModelId, e: &(dyn std::error::Error + 'static)) -> UpstreamError {
    let connect = e
        .downcast_ref::<hyper_util::client::legacy::Error>()
        .is_some_and(hyper_util::client::legacy::Error::is_connect);
    // The innermost cause says what actually happened ("Connection refused", ...).
    let mut detail = e.to_string();
    let mut timed_out = false;
    let mut source = e.source();
    while let Some(s) = source {
        detail = s.to_string();
        timed_out |= s.is::<client::ConnectTimedOut>();
        source = s.source();
    }
    match (connect, timed_out) {
        (true, true) => UpstreamError::Timeout {
            model: model.clone(),
            what: "could not connect within the connect timeout".into(),
        },
        (true, false) => UpstreamError::Connect {
            model: model.clone(),
            detail,
        },
        (false, _) => UpstreamError::Protocol {
            model: model.clone(),
            detail,
        },
    }
}

/// The message of an upstream error body in the convention's shape, else the body's text.
fn error_message(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let m = v
            .pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"));
        if let Some(s) = m.and_then(|m| m.as_str()) {
            return s.to_string();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        "(no message)".to_string()
    } else {
        text.chars().take(500).collect()
    }
}

/// The `param` of an upstream error body in the convention's shape.
fn error_param(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v.pointer("/error/param")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_found_in_common_shapes() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad","type":"x"}}"#),
            "bad"
        );
        assert_eq!(error_message(br#"{"error":"ollama says"}"#), "ollama says");
        assert_eq!(error_message(br#"{"detail":"tgi"}"#), "tgi");
        assert_eq!(error_message(b"plain text\n"), "plain text");
        assert_eq!(error_message(b""), "(no message)");
        assert_eq!(
            error_param(br#"{"error":{"message":"m","param":"n"}}"#).as_deref(),
            Some("n")
        );
    }
}

//! One upstream MCP server over Streamable HTTP, either era, negotiated once and pooled: a
//! `server/discover` at 2026-07-28 first; anything but a modern answer (and not an outage) falls
//! back to `initialize` at 2025-11-25, whose `Mcp-Session-Id` is kept and reused by every call
//! (a 404 on it opens a new session once). Connections are hyper's keep-alive pool (the model
//! upstreams' client, `upstream::client`), resolved through the SSRF guard; the gateway's
//! credentials for the server (a bearer, headers) go on every request, the caller's never. Every
//! request has a deadline and a size limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::egress::GuardedResolver;
use crate::upstream::client::{ConnectTimedOut, HttpClient};

use super::failure::UpstreamError;
use super::wire::{self, Answer};

const USER_AGENT: &str = concat!("sovereign-gateway/", env!("CARGO_PKG_VERSION"), " (mcp)");

/// The era negotiated with the server.
#[derive(Debug, Clone)]
enum Era {
    Modern,
    Legacy {
        version: String,
        session: Option<HeaderValue>,
    },
}

pub struct HttpLink {
    uri: Uri,
    /// The gateway's credentials for this server.
    auth: HeaderMap,
    client: HttpClient<GuardedResolver>,
    /// The era negotiated, read by every request without waiting on another.
    era: RwLock<Option<Arc<Era>>>,
    /// Held while the era is negotiated (one negotiation at a time).
    negotiating: tokio::sync::Mutex<()>,
    ids: AtomicU64,
}

impl HttpLink {
    /// Fails when `url` is no HTTP URI (a checked URL always is one).
    pub fn new(
        url: &url::Url,
        auth: HeaderMap,
        client: HttpClient<GuardedResolver>,
    ) -> Result<HttpLink, http::uri::InvalidUri> {
        Ok(HttpLink {
            uri: url.as_str().parse()?,
            auth,
            client,
            era: RwLock::new(None),
            negotiating: tokio::sync::Mutex::new(()),
            ids: AtomicU64::new(1),
        })
    }

    /// One request in the negotiated era; a legacy session the server forgot is opened again
    /// once.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
        deadline: Duration,
    ) -> Result<Value, UpstreamError> {
        let era = self.era(deadline).await?;
        match self
            .send(&era, method, params.clone(), name, deadline)
            .await
        {
            Err(UpstreamError::SessionExpired) => {
                self.forget(&era);
                let era = self.era(deadline).await?;
                self.send(&era, method, params, name, deadline).await
            }
            other => other,
        }
    }

    /// The negotiated era (negotiated now if not yet; one negotiation at a time).
    async fn era(&self, deadline: Duration) -> Result<Arc<Era>, UpstreamError> {
        if let Some(era) = self.current() {
            return Ok(era);
        }
        let _one = self.negotiating.lock().await;
        if let Some(era) = self.current() {
            return Ok(era);
        }
        let era = Arc::new(self.negotiate(deadline).await?);
        if let Ok(mut slot) = self.era.write() {
            *slot = Some(era.clone());
        }
        Ok(era)
    }

    fn current(&self) -> Option<Arc<Era>> {
        self.era.read().ok().and_then(|e| e.clone())
    }

    /// Forgets `era` (its session expired), unless another request has negotiated anew since.
    fn forget(&self, era: &Arc<Era>) {
        if let Ok(mut slot) = self.era.write()
            && slot.as_ref().is_some_and(|e| Arc::ptr_eq(e, era))
        {
            *slot = None;
        }
    }

    async fn negotiate(&self, deadline: Duration) -> Result<Era, UpstreamError> {
        match self
            .send(&Era::Modern, "server/discover", json!({}), None, deadline)
            .await
        {
            Ok(found)
                if found
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|v| v == wire::MODERN)) =>
            {
                return Ok(Era::Modern);
            }
            // An outage is no verdict on the era.
            Err(
                e @ (UpstreamError::Unreachable
                | UpstreamError::Refused(_)
                | UpstreamError::Timeout(_)),
            ) => return Err(e),
            _ => {}
        }
        let init = Era::Legacy {
            version: wire::LEGACY.into(),
            session: None,
        };
        let params = json!({
            "protocolVersion": wire::LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "sovereign-gateway", "version": env!("CARGO_PKG_VERSION")},
        });
        let (result, session) = self
            .exchange(&init, "initialize", params, None, deadline)
            .await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .filter(|v| wire::HANDSHAKE_VERSIONS.contains(v))
            .ok_or_else(|| UpstreamError::Malformed("initialize without a known version".into()))?
            .to_string();
        let era = Era::Legacy { version, session };
        self.notify(&era, "notifications/initialized", deadline)
            .await?;
        Ok(era)
    }

    async fn send(
        &self,
        era: &Era,
        method: &str,
        params: Value,
        name: Option<&str>,
        deadline: Duration,
    ) -> Result<Value, UpstreamError> {
        self.exchange(era, method, params, name, deadline)
            .await
            .map(|(v, _)| v)
    }

    /// The request's headers in `era`.
    fn headers(&self, era: &Era, method: &str, name: Option<&str>) -> HeaderMap {
        let mut h = self.auth.clone();
        h.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(USER_AGENT),
        );
        h.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        h.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let version = HeaderName::from_static(wire::PROTOCOL_VERSION_HEADER);
        match era {
            Era::Modern => {
                h.insert(version, HeaderValue::from_static(wire::MODERN));
                if let Ok(m) = HeaderValue::from_str(method) {
                    h.insert(HeaderName::from_static(wire::METHOD_HEADER), m);
                }
                if let Some(n) = name.and_then(|n| HeaderValue::from_str(n).ok()) {
                    h.insert(HeaderName::from_static(wire::NAME_HEADER), n);
                }
            }
            Era::Legacy {
                version: v,
                session,
            } => {
                if method != "initialize" {
                    if let Ok(v) = HeaderValue::from_str(v) {
                        h.insert(version, v);
                    }
                    if let Some(s) = session {
                        h.insert(HeaderName::from_static(wire::SESSION_HEADER), s.clone());
                    }
                }
            }
        }
        h
    }

    /// A notification (legacy: `notifications/initialized`); any 2xx is fine.
    async fn notify(
        &self,
        era: &Era,
        method: &str,
        deadline: Duration,
    ) -> Result<(), UpstreamError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let post = self.post(era, method, None, body.to_string());
        let sent = tokio::time::timeout(deadline, post)
            .await
            .map_err(|_| UpstreamError::Timeout(deadline.as_millis()))?
            .map_err(|e| failure(&e, deadline))?;
        if !sent.status().is_success() {
            return Err(UpstreamError::Status(sent.status().as_u16()));
        }
        Ok(())
    }

    /// The request, sent; its answer's head.
    async fn post(
        &self,
        era: &Era,
        method: &str,
        name: Option<&str>,
        body: String,
    ) -> Result<Response<Incoming>, hyper_util::client::legacy::Error> {
        let mut req = Request::new(Full::new(Bytes::from(body)));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers(era, method, name);
        self.client.request(req).await
    }

    /// One request and its answer (and the session id the server gave, if any).
    async fn exchange(
        &self,
        era: &Era,
        method: &str,
        params: Value,
        name: Option<&str>,
        deadline: Duration,
    ) -> Result<(Value, Option<HeaderValue>), UpstreamError> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let params = match era {
            Era::Modern => wire::modern_params(params),
            Era::Legacy { .. } => params,
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let work = async {
            let mut resp = self
                .post(era, method, name, body.to_string())
                .await
                .map_err(|e| failure(&e, deadline))?;
            let status = resp.status();
            if status == http::StatusCode::NOT_FOUND
                && matches!(
                    era,
                    Era::Legacy {
                        session: Some(_),
                        ..
                    }
                )
            {
                return Err(UpstreamError::SessionExpired);
            }
            let session = resp
                .headers()
                .get(wire::SESSION_HEADER)
                .filter(|v| v.len() <= 256)
                .cloned();
            let sse = resp
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/event-stream"));
            let mut buf = Vec::new();
            let mut read = 0usize;
            while let Some(frame) = resp.body_mut().frame().await {
                let Ok(chunk) = frame.map_err(|e| failure(&e, deadline))?.into_data() else {
                    continue;
                };
                read += chunk.len();
                if read > wire::MAX_ANSWER_BYTES {
                    return Err(UpstreamError::TooLarge(wire::MAX_ANSWER_BYTES));
                }
                buf.extend_from_slice(&chunk);
                if sse {
                    match wire::answer_in_events(&mut buf, id) {
                        Ok(Some(answer)) => return settle(answer, session),
                        Ok(None) => {}
                        Err(e) => return Err(UpstreamError::Malformed(e)),
                    }
                }
            }
            if sse {
                // A final event without its blank line.
                buf.extend_from_slice(b"\n\n");
                return match wire::answer_in_events(&mut buf, id) {
                    Ok(Some(answer)) => settle(answer, session),
                    Ok(None) if !status.is_success() => Err(UpstreamError::Status(status.as_u16())),
                    Ok(None) => Err(UpstreamError::Malformed(
                        "the stream ended without an answer".into(),
                    )),
                    Err(e) => Err(UpstreamError::Malformed(e)),
                };
            }
            match wire::answer_in_json(&buf, id) {
                Ok(answer) => settle(answer, session),
                Err(_) if !status.is_success() => Err(UpstreamError::Status(status.as_u16())),
                Err(e) => Err(UpstreamError::Malformed(e)),
            }
        };
        tokio::time::timeout(deadline, work)
            .await
            .map_err(|_| UpstreamError::Timeout(deadline.as_millis()))?
    }
}

fn settle(
    answer: Answer,
    session: Option<HeaderValue>,
) -> Result<(Value, Option<HeaderValue>), UpstreamError> {
    match answer {
        Answer::Result(v) if v.is_object() => Ok((v, session)),
        Answer::Result(_) => Err(UpstreamError::Malformed(
            "the result is not an object".into(),
        )),
        Answer::Error { code, message } => Err(UpstreamError::Rpc { code, message }),
    }
}

/// What a transport error is to the caller: the guard's refusal, a connection not made in time,
/// or (for anything else) "unreachable".
fn failure(e: &(dyn std::error::Error + 'static), deadline: Duration) -> UpstreamError {
    if let Some(r) = crate::egress::refused_in(e) {
        return UpstreamError::Refused(r.to_string());
    }
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<ConnectTimedOut>() {
            return UpstreamError::Timeout(deadline.as_millis());
        }
        cause = c.source();
    }
    // The caller is told only "unreachable"; the operator's log keeps the transport's cause.
    tracing::debug!(error = ?e, "MCP upstream unreachable");
    UpstreamError::Unreachable
}

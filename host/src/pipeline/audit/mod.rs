//! The activity journal on the request path: one entry per authenticated request, written by
//! the [`journal`] layer (inside `authenticate`, outside everything else), from facts the
//! handlers leave in the request's [`Audit`] slot. docs/JOURNAL.md, "On the request path".
//!
//! Durability before completion: a whole response is returned only once its entry is appended
//! (durable mode: fsynced; batched: queued) and its usage charge is durable: carried by the
//! entry itself ([`Audit::carry`], a durable journal on SQLite), or else committed by the store
//! ([`Audit::reply_after`]), waited for at once with the append. A streamed response is
//! passed through frame by frame, except its last one (the frame with `[DONE]` or the error
//! event), which waits for the append and the stream's charge alike. An append that fails turns the answer into a 500 (or, for
//! a stream, its last frame into an error event): nothing is served unrecorded. A request
//! abandoned by its client before its entry was written still gets one (status `error`),
//! appended from a drop guard.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use http::{HeaderName, StatusCode};
use serde_json::Value;
use tokio::time::Instant;

use crate::access::Principal;
use crate::domain::ModelConfig;
use crate::journal::{EntryDraft, Journal, JournalError, Status, ToolCallRecord, sha256_tagged};
use crate::metrics::Metrics;
use crate::pipeline::RequestCtx;
use crate::routing::Route;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::tls::PeerCert;
use crate::upstream::{StreamOutcome, StreamSummary, Usage};

mod operations;

use operations::action;
pub use operations::operation;

/// Names the actor a request is made for, when the body has no `user`.
pub const X_ACTOR_ID: HeaderName = HeaderName::from_static("x-actor-id");

/// Longest actor id kept (characters).
const MAX_ACTOR_CHARS: usize = 256;

/// What a handler knows that the entry records. A cheap clone shared between the handler (which
/// fills it as its phases run) and the [`journal`] layer (which reads it when the request ends).
#[derive(Clone, Default)]
pub struct Audit(Arc<Mutex<Facts>>);

#[derive(Default)]
struct Facts {
    actor: Option<String>,
    /// Who the key is, once authenticated (for the metrics' team; the entry takes the principal
    /// from the request).
    principal: Option<Arc<Principal>>,
    /// What the client asked for (a model, alias or routing policy), once it resolved.
    requested: Option<String>,
    /// The model that served, with its prices (for the metrics' spend).
    served: Option<Arc<ModelConfig>>,
    /// Time spent waiting on upstreams, summed over attempts.
    upstream: Option<Duration>,
    model: Option<String>,
    prompt_hash: Option<String>,
    routing_policy: Option<String>,
    residency_boundary: Option<String>,
    /// Chunks a retrieval policy removed, summed over the request's retrievals.
    retrieval_filtered: Option<u64>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    /// Set when the outcome is not read from the HTTP status: a stream's end, an upstream
    /// failure, or a guardrail's block.
    status: Option<Status>,
    stream: StreamState,
    /// An answer's usage charge, queued: the reply (a stream's last frame) waits for it beside
    /// the entry's append.
    charge: Option<BoxFuture<'static, ()>>,
    /// Charges the entry carries (`pipeline::spend::settle_durable`).
    charges: Vec<crate::journal::Charge>,
    /// The action, when the handler names it more finely than the route (an MCP method).
    action: Option<&'static str>,
    /// The MCP tool call the request made.
    mcp: Option<ToolCallRecord>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum StreamState {
    #[default]
    None,
    Open,
    Finished,
}

impl Audit {
    fn with<T>(&self, f: impl FnOnce(&mut Facts) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn read<T>(&self, f: impl FnOnce(&Facts) -> T) -> T {
        f(&self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The reply waits until `committed` (a whole answer's usage charge) completes, at the same
    /// time as its entry's append: one durable wait per request instead of two in a row.
    pub fn reply_after(&self, committed: impl Future<Output = ()> + Send + 'static) {
        self.with(|f| {
            // A second charge in one request (a handler calling another) waits with the first.
            f.charge = Some(match f.charge.take() {
                Some(earlier) => Box::pin(async move {
                    earlier.await;
                    committed.await;
                }),
                None => Box::pin(committed),
            });
        });
    }

    /// A charge the entry carries: its durable record (`budget::Charger::charge_carried`).
    pub fn carry(&self, charge: crate::journal::Charge) {
        self.with(|f| f.charges.push(charge));
    }

    /// What [`Audit::reply_after`] was given, taken (complete at once if nothing was).
    async fn committed(&self) {
        if let Some(charge) = self.with(|f| f.charge.take()) {
            charge.await;
        }
    }

    /// The prompt, as its hash (see [`prompt_hash`]); the prompt itself is never kept.
    pub fn prompt(&self, prompt: Option<&Value>) {
        let hash = prompt.and_then(prompt_hash);
        self.with(|f| f.prompt_hash = hash);
    }

    /// The hash of what a request carries when it is not a prompt: an uploaded document's bytes
    /// (`sha256:` + hex, as the document record's `sha256`).
    pub fn content(&self, sha256_hex: &str) {
        let hash = format!("sha256:{sha256_hex}");
        self.with(|f| f.prompt_hash = Some(hash));
    }

    /// Work done by a model inside the gateway (the built-in embedding model): its id and the
    /// tokens it read.
    pub fn local_model(&self, model: &str, tokens: u64) {
        let model = model.to_string();
        self.with(|f| {
            f.model = Some(model);
            f.prompt_tokens = Some(tokens);
        });
    }

    /// The actor the handler resolved (`pipeline::call::Call::identify`: the body's `user`, else the
    /// `X-Actor-ID` header, else the key id). Requests refused before a handler read their body
    /// fall back to the header, read by the layer itself.
    pub fn actor(&self, actor: &str) {
        let actor = actor.to_string();
        self.with(|f| f.actor = Some(actor));
    }

    /// The authenticated key's principal (`admission::authenticate`).
    pub fn principal(&self, principal: &Arc<Principal>) {
        let principal = principal.clone();
        self.with(|f| f.principal = Some(principal));
    }

    /// The name the client asked for, known to resolve (`pipeline::route`).
    pub fn requested(&self, name: &str) {
        let name = name.to_string();
        self.with(|f| f.requested = Some(name));
    }

    /// Time spent waiting on an upstream (each attempt, and reading a whole answer).
    pub fn upstream_time(&self, took: Duration) {
        self.with(|f| f.upstream = Some(f.upstream.unwrap_or_default() + took));
    }

    /// Whether the response is a stream (its entry and its metrics wait for its end).
    pub fn is_stream(&self) -> bool {
        self.read(|f| f.stream != StreamState::None)
    }

    /// Runs `record` on what the metrics need of a finished request (`pipeline::observe`),
    /// borrowed: nothing is copied.
    pub fn observed<T>(&self, record: impl FnOnce(Observed<'_>) -> T) -> T {
        self.read(|f| {
            record(Observed {
                team: f.principal.as_ref().map_or("", |p| p.team_id.as_str()),
                requested: f.requested.as_deref().unwrap_or(""),
                served: f.served.as_ref(),
                policy: f.routing_policy.as_deref().unwrap_or(""),
                upstream: f.upstream,
                prompt_tokens: f.prompt_tokens.unwrap_or(0),
                completion_tokens: f.completion_tokens.unwrap_or(0),
                streamed: f.stream != StreamState::None,
            })
        })
    }

    /// The model chosen, the policy that chose it and the region it runs in.
    pub fn route(&self, route: &Route) {
        self.with(|f| {
            f.served = Some(route.model.clone());
            f.model = Some(route.model.id.0.clone());
            f.routing_policy = Some(route.policy.to_string());
            f.residency_boundary = Some(route.model.region.clone());
        });
    }

    /// A retrieval policy removed `n` candidate chunks (nothing is recorded for none).
    pub fn retrieval_filtered(&self, n: u64) {
        if n > 0 {
            self.with(|f| f.retrieval_filtered = Some(f.retrieval_filtered.unwrap_or(0) + n));
        }
    }

    pub fn usage(&self, usage: Option<Usage>, completion: bool) {
        if let Some(u) = usage {
            self.with(|f| {
                f.prompt_tokens = Some(u.prompt_tokens);
                f.completion_tokens = completion.then_some(u.completion_tokens);
            });
        }
    }

    /// The upstream failed: the entry says `error` whatever status the client is answered with.
    pub fn upstream_failed(&self) {
        self.with(|f| f.status = Some(Status::Error));
    }

    /// The hook for guardrails (a later issue): a request refused by a guardrail policy is
    /// journaled as `blocked`, whatever 4xx it is answered with.
    pub fn blocked(&self) {
        self.with(|f| f.status = Some(Status::Blocked));
    }

    /// The action the entry records, named by the handler (an MCP door's `mcp.tools/call`)
    /// instead of the route's.
    pub fn action(&self, action: &'static str) {
        self.with(|f| f.action = Some(action));
    }

    /// The MCP tool call the request made, and how it ended (the HTTP status of a JSON-RPC
    /// answer says nothing of it).
    pub fn tool_call(&self, record: ToolCallRecord, status: Status) {
        self.with(|f| {
            f.mcp = Some(record);
            f.status = Some(status);
        });
    }

    /// The response is a stream: its entry is written when it ends, before its last frame.
    pub fn stream_opened(&self) {
        self.with(|f| f.stream = StreamState::Open);
    }

    /// The stream ended (its relay's `on_finish`): usage and outcome.
    pub fn stream_finished(&self, summary: &StreamSummary) {
        self.with(|f| {
            f.stream = StreamState::Finished;
            if let Some(u) = summary.usage {
                f.prompt_tokens = Some(u.prompt_tokens);
                f.completion_tokens = Some(u.completion_tokens);
            }
            f.status = Some(match summary.outcome {
                StreamOutcome::Completed => Status::Success,
                // Not completed: the client saw part of an answer at most.
                StreamOutcome::ClientGone | StreamOutcome::UpstreamFailed(_) => Status::Error,
            });
        });
    }
}

/// A finished request's facts, as the metrics read them (empty: not known).
pub struct Observed<'a> {
    pub team: &'a str,
    pub requested: &'a str,
    pub served: Option<&'a Arc<ModelConfig>>,
    pub policy: &'a str,
    pub upstream: Option<Duration>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub streamed: bool,
}

/// `prompt_hash`: `sha256:` + hex of the RFC 8785 (JCS) encoding of the prompt value — the chat
/// request's `messages` array, the embeddings request's `input` — as the client sent it. JCS
/// makes the bytes independent of key order and white space, so a client can recompute it.
pub fn prompt_hash(prompt: &Value) -> Option<String> {
    serde_json_canonicalizer::to_vec(prompt)
        .ok()
        .map(|bytes| sha256_tagged(&bytes))
}

fn truncate(s: &str) -> String {
    s.chars().take(MAX_ACTOR_CHARS).collect()
}

/// The middleware: gives the request its [`Audit`] slot, runs the rest of the stack, and
/// appends the entry before the response (or a stream's last frame) goes out.
pub async fn journal(State(app): State<AppState>, mut req: Request, next: Next) -> Response {
    // Made by `observe`, further out; a stack without it still gets one.
    let audit = match req.extensions().get::<Audit>() {
        Some(a) => a.clone(),
        None => {
            let a = Audit::default();
            req.extensions_mut().insert(a.clone());
            a
        }
    };
    let (Some(journal), Some(ctx), Some(principal)) = (
        app.journal().cloned(),
        req.extensions().get::<RequestCtx>().cloned(),
        req.extensions().get::<Arc<Principal>>().cloned(),
    ) else {
        if app.journal().is_some() {
            // Only a mis-ordered layer stack gets here (the journal layer must sit inside
            // `request_context` and `authenticate`): say so loudly rather than skip silently.
            tracing::error!("journal layer without a request context or principal; not journaled");
        }
        let response = next.run(req).await;
        audit.committed().await;
        return response;
    };
    let header_actor = req
        .headers()
        .get(X_ACTOR_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(truncate);
    let pending = Pending(Some(Unwritten {
        journal,
        metrics: app.metrics().clone(),
        audit: audit.clone(),
        request_id: ctx.id,
        started: ctx.started,
        trace: ctx.trace,
        principal,
        peer: req.extensions().get::<Arc<PeerCert>>().cloned(),
        action: action(ctx.operation, req.method(), req.uri().path()),
        header_actor,
    }));

    let response = next.run(req).await;
    let status = response.status();
    if audit.is_stream() && status.is_success() {
        let (parts, body) = response.into_parts();
        return Response::from_parts(parts, Body::from_stream(hold_back_last(body, pending)));
    }
    match pending.commit(Some(status)).await {
        Ok(()) => response,
        Err(e) => unrecorded(&e).into_response(),
    }
}

/// The 500 a request gets when its entry cannot be written (fail closed).
fn unrecorded(e: &JournalError) -> ApiError {
    tracing::error!(error = %e, "journal append failed; the request is refused");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "The request could not be recorded in the activity journal, so it was not completed.",
    )
    .with_code("journal_unavailable")
}

/// Relays `body` frame by frame; the frame during which the stream finished (it carries
/// `[DONE]` or the error event) waits until the entry is appended.
fn hold_back_last(
    body: Body,
    pending: Pending,
) -> impl futures_util::Stream<Item = Result<Bytes, axum::Error>> + Send + 'static {
    let state = (body.into_data_stream(), pending);
    futures_util::stream::unfold(state, |(mut inner, mut pending)| async move {
        match inner.next().await {
            Some(Ok(frame)) => {
                if pending.stream_finished() {
                    let out = match pending.take().commit(None).await {
                        Ok(()) => frame,
                        Err(e) => error_event(&e),
                    };
                    return Some((Ok(out), (inner, pending)));
                }
                Some((Ok(frame), (inner, pending)))
            }
            Some(Err(e)) => Some((Err(e), (inner, pending))),
            None => match pending.take().commit(None).await {
                Ok(()) => None,
                Err(e) => Some((Ok(error_event(&e)), (inner, pending))),
            },
        }
    })
}

/// The SSE error event that replaces a stream's last frame when its entry cannot be written.
fn error_event(e: &JournalError) -> Bytes {
    let body = unrecorded(e).body();
    Bytes::from(format!("data: {body}\n\n"))
}

/// A request whose entry is still to be written; written with status `error` when dropped
/// unwritten (the client went away mid-request).
struct Pending(Option<Unwritten>);

struct Unwritten {
    journal: Journal,
    metrics: Arc<Metrics>,
    audit: Audit,
    request_id: Arc<str>,
    started: Instant,
    /// The request's root span (traces on), for the `journal.append` span.
    trace: Option<crate::traces::Trace>,
    principal: Arc<Principal>,
    /// The verified client certificate of the connection, if any.
    peer: Option<Arc<PeerCert>>,
    action: String,
    header_actor: Option<String>,
}

impl Unwritten {
    /// The entry, made once (its caller has taken the request out of `Pending`): the charges
    /// move into it, as nothing reads them after; the facts the metrics read are copied.
    fn draft(&self, http: Option<StatusCode>) -> EntryDraft {
        let p = &self.principal;
        self.audit.with(|f| EntryDraft {
            timestamp: SystemTime::now(),
            request_id: self.request_id.to_string(),
            actor_id: f
                .actor
                .clone()
                .or_else(|| self.header_actor.clone())
                .unwrap_or_else(|| p.key_id.to_string()),
            team_id: p.team_id.to_string(),
            key_id: p.key_id.to_string(),
            auth: Some(p.credential.as_str().to_string()),
            cert_sha256: self.peer.as_ref().map(|c| c.fingerprint.clone()),
            charges: std::mem::take(&mut f.charges),
            action: f.action.map_or_else(|| self.action.clone(), str::to_string),
            model: f.model.clone(),
            prompt_hash: f.prompt_hash.clone(),
            routing_policy: f.routing_policy.clone(),
            residency_boundary: f.residency_boundary.clone(),
            retrieval_filtered: f.retrieval_filtered,
            status: outcome(f.status, http),
            prompt_tokens: f.prompt_tokens,
            completion_tokens: f.completion_tokens,
            latency_us: u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            mcp: f.mcp.take(),
        })
    }
}

/// The entry's status: what the handler set (a stream's end, an upstream failure, a block),
/// else from the HTTP status; no response at all (abandoned) is `error`.
fn outcome(set: Option<Status>, http: Option<StatusCode>) -> Status {
    set.unwrap_or(match http {
        Some(s) if s.is_server_error() => Status::Error,
        Some(s) if s.is_client_error() => Status::Rejected,
        Some(_) => Status::Success,
        None => Status::Error,
    })
}

fn count(metrics: &Metrics, appended: bool) {
    Metrics::inc(if appended {
        &metrics.journal_entries_total
    } else {
        &metrics.journal_append_failures_total
    });
}

impl Pending {
    fn take(&mut self) -> Pending {
        Pending(self.0.take())
    }

    fn stream_finished(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|r| r.audit.read(|f| f.stream == StreamState::Finished))
    }

    /// Appends the entry (once; later calls do nothing). The append runs as its own task, so
    /// a client that goes away while it waits cannot cancel it.
    async fn commit(mut self, http: Option<StatusCode>) -> Result<(), JournalError> {
        let Some(request) = self.0.take() else {
            return Ok(());
        };
        let draft = request.draft(http);
        let (journal, metrics) = (request.journal, request.metrics);
        let span = request.trace.as_ref().map(|t| t.child("journal.append"));
        let append = async {
            let started = Instant::now();
            let appended = tokio::spawn(async move { journal.append(draft).await })
                .await
                .map_err(|e| JournalError::Closed(Some(format!("append task failed: {e}"))))
                .and_then(|r| r.map(drop));
            metrics.by.journal_append(started.elapsed());
            appended
        };
        let (appended, ()) = tokio::join!(append, request.audit.committed());
        if let (Some(s), Err(e)) = (span, &appended) {
            s.fail(e.to_string());
        }
        count(&metrics, appended.is_ok());
        appended
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(request) = self.0.take() else { return };
        let draft = request.draft(None);
        let (journal, metrics) = (request.journal, request.metrics);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    let appended = journal.append(draft).await;
                    count(&metrics, appended.is_ok());
                    if let Err(e) = appended {
                        tracing::error!(error = %e, "journal append for an abandoned request failed");
                    }
                });
            }
            Err(_) => tracing::error!(
                request_id = %draft.request_id,
                "request abandoned outside the runtime; its journal entry is lost"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn status_comes_from_the_handler_else_the_http_status() {
        assert_eq!(outcome(None, Some(StatusCode::OK)), Status::Success);
        for code in [400, 403, 404, 413, 429] {
            let s = StatusCode::from_u16(code).unwrap();
            assert_eq!(outcome(None, Some(s)), Status::Rejected, "{code}");
        }
        assert_eq!(outcome(None, Some(StatusCode::BAD_GATEWAY)), Status::Error);
        assert_eq!(outcome(None, None), Status::Error, "abandoned");
        let passed_on_429 = Some(StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(outcome(Some(Status::Error), passed_on_429), Status::Error);
        let guardrail = Some(StatusCode::BAD_REQUEST);
        assert_eq!(outcome(Some(Status::Blocked), guardrail), Status::Blocked);
    }

    #[test]
    fn prompt_hash_is_sha256_of_the_canonical_prompt() {
        let a: Value = serde_json::from_str(r#"[{"role":"user","content":"مرحبا"}]"#).unwrap();
        let b: Value =
            serde_json::from_str("[ {\"content\": \"مرحبا\",\n \"role\": \"user\"} ]").unwrap();
        let want = sha256_tagged("[{\"content\":\"مرحبا\",\"role\":\"user\"}]".as_bytes());
        assert_eq!(prompt_hash(&a).unwrap(), want);
        assert_eq!(
            prompt_hash(&b).unwrap(),
            want,
            "key order and white space do not matter"
        );
    }
}

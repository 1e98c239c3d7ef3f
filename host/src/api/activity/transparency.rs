//! The journal as a transparency log over HTTP (issue 48; auditor and admin, a member gets 403):
//! `GET /v1/activity/checkpoint` (a C2SP checkpoint of the journal as it stands, signed now),
//! `…/checkpoint/key` (the note verifier key), `GET /v1/activity/proof?request_id=&tree_size=`
//! (an RFC 9162 inclusion proof; an auditor only for its own team's entries) and
//! `GET /v1/activity/consistency?from=&to=`. Reads run on the blocking pool. docs/JOURNAL.md,
//! "Transparency log".
//!
//! Replicas: each replica's chain is its own log. A request id another replica wrote is proved
//! from this replica's mirror of that log against the head that replica published
//! (`state::tlog_replicas`); `replica=` names another replica's log for the checkpoint, its key
//! and consistency proofs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use http::{StatusCode, header};
use serde_json::json;

use crate::access::Principal;
use crate::domain::Role;
use crate::journal::tlog::{Mirror, SignedHead, Tlog, TlogError, team_fingerprint, tree::Hash};
use crate::server::error::ApiError;
use crate::state::AppState;

/// Longest request id looked up (the gateway's are 36 characters).
const MAX_REQUEST_ID: usize = 256;

fn unavailable(reason: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %reason, "the transparency log cannot answer");
    ApiError::new(
        StatusCode::CONFLICT,
        "invalid_request_error",
        format!("The journal's transparency log is unavailable: {reason}"),
    )
    .with_code("tlog_unavailable")
}

fn failed(e: TlogError) -> ApiError {
    match e {
        TlogError::Io(_) => ApiError::journal_unreadable(e),
        other => unavailable(other),
    }
}

/// The log of this gateway's chain.
fn tlog(app: &AppState) -> Result<Tlog, ApiError> {
    let journal = app.journal().ok_or_else(ApiError::journal_disabled)?;
    journal.tlog().cloned().map_err(unavailable)
}

/// Runs a read of the log on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, TlogError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::journal_unreadable)?
        .map_err(failed)
}

/// Waits until this chain's tree holds every entry acknowledged before the call (the follower
/// runs just behind the writer: an entry answered a moment ago may not be in it yet).
async fn caught_up(app: &AppState, tlog: &Tlog) -> Result<u64, ApiError> {
    let journal = app.journal().ok_or_else(ApiError::journal_disabled)?;
    let durable = journal
        .flush()
        .await
        .map_err(ApiError::journal_unreadable)?;
    tlog.reach(durable).await.map_err(failed)?;
    Ok(durable)
}

/// A head signed over every entry acknowledged before the call (the latest one when the tree
/// has not moved since).
async fn head_now(app: &AppState, tlog: &Tlog) -> Result<SignedHead, ApiError> {
    let durable = caught_up(app, tlog).await?;
    if let Some(latest) = tlog.latest().filter(|l| l.size == durable) {
        return Ok(latest);
    }
    let t = tlog.clone();
    blocking(move || t.sign(durable)).await
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

fn hashes(list: &[Hash]) -> Vec<String> {
    list.iter().map(|h| B64.encode(h)).collect()
}

/// How long a proof of another replica's entry waits for that replica to publish a head
/// holding it (it publishes after each copy into the store, every half second).
const HEAD_WAIT: Duration = Duration::from_secs(5);

/// Another replica named by `replica=`, or `None` for this one's own log.
fn other_replica(app: &AppState, asked: Option<&str>) -> Result<Option<String>, ApiError> {
    match asked {
        None => Ok(None),
        Some(r) if r == app.config().sovereign_id => Ok(None),
        Some(r) if app.replicated() => Ok(Some(r.to_string())),
        Some(r) => Err(replica_unknown(r)),
    }
}

fn replica_unknown(replica: &str) -> ApiError {
    ApiError::not_found(format!(
        "No replica `{replica}` has published a transparency log in this deployment."
    ))
    .with_param("replica")
}

fn replica_failed(e: anyhow::Error) -> ApiError {
    unavailable(format!("{e:#}"))
}

/// The head another replica published last.
async fn published(app: &AppState, replica: &str) -> Result<crate::store::TlogHead, ApiError> {
    app.published_tlog_head(replica)
        .await
        .map_err(replica_failed)?
        .ok_or_else(|| replica_unknown(replica))
}

/// `GET /v1/activity/checkpoint[?replica=]`: the signed note, as text.
pub async fn checkpoint(
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = params(raw, &["replica"])?;
    if let Some(replica) = other_replica(&app, get(&params, "replica"))? {
        return Ok(text(published(&app, &replica).await?.note));
    }
    let tlog = tlog(&app)?;
    Ok(text(head_now(&app, &tlog).await?.note))
}

/// `GET /v1/activity/checkpoint/key[?replica=]`: the verifier key, one line.
pub async fn key(
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = params(raw, &["replica"])?;
    if let Some(replica) = other_replica(&app, get(&params, "replica"))? {
        return Ok(text(format!("{}\n", published(&app, &replica).await?.vkey)));
    }
    let tlog = tlog(&app)?;
    Ok(text(format!("{}\n", tlog.verifier_key())))
}

/// The log a proof comes from: this chain's own, or another replica's mirror.
enum Log {
    Own(Tlog),
    Other(String, Arc<Mirror>),
}

impl Log {
    fn size(&self) -> u64 {
        match self {
            Log::Own(t) => t.size(),
            Log::Other(_, m) => m.size(),
        }
    }

    async fn inclusion(&self, leaf: u64, size: u64) -> Result<Vec<Hash>, ApiError> {
        match self {
            Log::Own(t) => {
                let t = t.clone();
                blocking(move || t.inclusion(leaf, size)).await
            }
            Log::Other(_, m) => {
                let m = m.clone();
                blocking(move || m.inclusion(leaf, size)).await
            }
        }
    }

    async fn consistency(&self, from: u64, to: u64) -> Result<Vec<Hash>, ApiError> {
        match self {
            Log::Own(t) => {
                let t = t.clone();
                blocking(move || t.consistency(from, to)).await
            }
            Log::Other(_, m) => {
                let m = m.clone();
                blocking(move || m.consistency(from, to)).await
            }
        }
    }
}

/// Where a request id's entry is: this chain, else (replicas) another replica's log.
async fn locate(
    app: &AppState,
    request_id: &str,
) -> Result<Option<(Log, crate::journal::tlog::Found)>, ApiError> {
    let own = match app.journal().map(|j| j.tlog()) {
        Some(Ok(t)) => Some(t.clone()),
        _ => None,
    };
    if let Some(t) = &own {
        // Looked up again once the tree holds every acknowledged entry, when the first look
        // missed: the request may have been answered a moment ago.
        for attempt in 0..2 {
            if attempt == 1 {
                caught_up(app, t).await?;
            }
            let (t2, rid) = (t.clone(), request_id.to_string());
            if let Some(found) = blocking(move || t2.find(&rid)).await? {
                return Ok(Some((Log::Own(t.clone()), found)));
            }
        }
    }
    if app.replicated()
        && let Some((replica, mirror, found)) = app
            .find_in_replicas(request_id)
            .await
            .map_err(replica_failed)?
    {
        return Ok(Some((Log::Other(replica, mirror), found)));
    }
    if own.is_none() {
        // No log here to have found it in: say why rather than "not found".
        tlog(app)?;
    }
    Ok(None)
}

/// Another replica's newest head holding leaf `leaf`, waiting (bounded) for it to publish one.
async fn head_holding(app: &AppState, replica: &str, leaf: u64) -> Result<SignedHead, ApiError> {
    let deadline = Instant::now() + HEAD_WAIT;
    loop {
        let head = published(app, replica).await?;
        let size = u64::try_from(head.size).unwrap_or(0);
        if size > leaf {
            return Ok(SignedHead {
                size,
                note: head.note,
            });
        }
        if Instant::now() >= deadline {
            return Err(unavailable(format!(
                "replica {replica} has not yet published a signed head that holds this entry; retry shortly"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A query's parameters, each at most once; unknown ones refused.
fn params(raw: Option<String>, allowed: &[&str]) -> Result<Vec<(String, String)>, ApiError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        if !allowed.contains(&&*k) {
            return Err(ApiError::invalid(
                "query",
                format!("Unknown query parameter `{k}`; use {}.", allowed.join(", ")),
            ));
        }
        if out.iter().any(|(have, _)| *have == *k) {
            return Err(ApiError::invalid(&k, format!("`{k}` is given twice.")));
        }
        out.push((k.into_owned(), v.into_owned()));
    }
    Ok(out)
}

fn get<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn size_param(params: &[(String, String)], name: &str) -> Result<Option<u64>, ApiError> {
    get(params, name)
        .map(|v| {
            v.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                ApiError::invalid(
                    name,
                    format!("`{name}` must be a tree size: an integer ≥ 1."),
                )
            })
        })
        .transpose()
}

/// `GET /v1/activity/proof?request_id=R[&tree_size=N]`.
pub async fn proof(
    State(app): State<AppState>,
    Extension(principal): Extension<Arc<Principal>>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = params(raw, &["request_id", "tree_size"])?;
    let request_id = get(&params, "request_id")
        .filter(|r| !r.is_empty())
        .ok_or_else(|| ApiError::invalid("request_id", "`request_id` is required."))?
        .to_string();
    if request_id.len() > MAX_REQUEST_ID {
        return Err(ApiError::invalid(
            "request_id",
            format!("`request_id` is longer than {MAX_REQUEST_ID} bytes."),
        ));
    }
    let asked_size = size_param(&params, "tree_size")?;
    let not_found = || {
        ApiError::not_found(format!("No journal entry has request id `{request_id}`."))
            .with_param("request_id")
    };
    let (log, found) = locate(&app, &request_id).await?.ok_or_else(not_found)?;
    if let (Log::Own(t), Some(n)) = (&log, asked_size)
        && n > t.size()
    {
        caught_up(&app, t).await?;
    }
    if principal.role != Role::Admin && found.team != team_fingerprint(&principal.team_id) {
        // An auditor sees its own team's entries only: another team's is not there for it.
        return Err(not_found());
    }
    let leaf = found.seq - 1;
    let (mut log, size, note) = match asked_size {
        Some(n) if n <= leaf || n > log.size() => {
            return Err(ApiError::invalid(
                "tree_size",
                format!(
                    "`tree_size` must be between {} (the entry's leaf index + 1) and {} (the log's size).",
                    leaf + 1,
                    log.size()
                ),
            ));
        }
        Some(n) => (log, n, None),
        None => {
            let head = match &log {
                Log::Own(t) => match t.latest().filter(|l| l.size > leaf) {
                    Some(head) => head,
                    None => head_now(&app, t).await?,
                },
                Log::Other(replica, _) => head_holding(&app, replica, leaf).await?,
            };
            (log, head.size, Some(head.note))
        }
    };
    if let Log::Other(replica, mirror) = &log
        && mirror.size() < size
    {
        // The head is newer than the mirror: the store has its lines by now.
        let mirror = app.tlog_mirror(replica).await.map_err(replica_failed)?;
        log = Log::Other(replica.clone(), mirror);
    }
    if log.size() < size {
        return Err(unavailable(
            "the log's lines are not all in the shared store yet; retry shortly",
        ));
    }
    let path = log.inclusion(leaf, size).await?;
    let mut body = json!({"leaf_index": leaf, "tree_size": size, "hashes": hashes(&path)});
    if let Some(note) = note {
        body["checkpoint"] = json!(note);
    }
    if let Log::Other(replica, _) = &log {
        body["replica"] = json!(replica);
    }
    Ok(axum::Json(body).into_response())
}

/// `GET /v1/activity/consistency?from=M&to=N`.
pub async fn consistency(
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = params(raw, &["from", "to", "replica"])?;
    let from = size_param(&params, "from")?
        .ok_or_else(|| ApiError::invalid("from", "`from` is required."))?;
    let to =
        size_param(&params, "to")?.ok_or_else(|| ApiError::invalid("to", "`to` is required."))?;
    if from > to {
        return Err(ApiError::invalid("from", "`from` must not be above `to`."));
    }
    let log = match other_replica(&app, get(&params, "replica"))? {
        Some(replica) => {
            published(&app, &replica).await?;
            let mirror = app.tlog_mirror(&replica).await.map_err(replica_failed)?;
            Log::Other(replica, mirror)
        }
        None => {
            let t = tlog(&app)?;
            if to > t.size() {
                caught_up(&app, &t).await?;
            }
            Log::Own(t)
        }
    };
    if to > log.size() {
        return Err(ApiError::invalid(
            "to",
            format!("`to` must be at most the log's size, {}.", log.size()),
        ));
    }
    let proof = log.consistency(from, to).await?;
    Ok(axum::Json(json!({"from": from, "to": to, "hashes": hashes(&proof)})).into_response())
}

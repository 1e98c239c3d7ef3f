//! The journal as a transparency log over HTTP (issue 48; auditor and admin, a member gets 403):
//! `GET /v1/activity/checkpoint` (a C2SP checkpoint of the journal as it stands, signed now),
//! `…/checkpoint/key` (the note verifier key), `GET /v1/activity/proof?request_id=&tree_size=`
//! (an RFC 9162 inclusion proof; an auditor only for its own team's entries) and
//! `GET /v1/activity/consistency?from=&to=`. Reads run on the blocking pool. docs/JOURNAL.md,
//! "Transparency log".

use std::sync::Arc;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use http::{StatusCode, header};
use serde_json::json;

use crate::access::Principal;
use crate::config::Role;
use crate::journal::tlog::{SignedHead, Tlog, TlogError, team_fingerprint, tree::Hash};
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
    let journal = app
        .0
        .journal
        .as_ref()
        .ok_or_else(ApiError::journal_disabled)?;
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

/// A head signed over every entry acknowledged before the call (the latest one when the tree
/// has not moved since).
async fn head_now(app: &AppState, tlog: &Tlog) -> Result<SignedHead, ApiError> {
    let journal = app
        .0
        .journal
        .as_ref()
        .ok_or_else(ApiError::journal_disabled)?;
    let durable = journal
        .flush()
        .await
        .map_err(ApiError::journal_unreadable)?;
    tlog.reach(durable).await.map_err(failed)?;
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

/// `GET /v1/activity/checkpoint`: the signed note, as text.
pub async fn checkpoint(State(app): State<AppState>) -> Result<Response, ApiError> {
    let tlog = tlog(&app)?;
    Ok(text(head_now(&app, &tlog).await?.note))
}

/// `GET /v1/activity/checkpoint/key`: the verifier key, one line.
pub async fn key(State(app): State<AppState>) -> Result<Response, ApiError> {
    let tlog = tlog(&app)?;
    Ok(text(format!("{}\n", tlog.verifier_key())))
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
    let tlog = tlog(&app)?;
    let not_found = || {
        ApiError::not_found(format!(
            "No journal entry of this gateway has request id `{request_id}`."
        ))
        .with_param("request_id")
    };
    let t = tlog.clone();
    let rid = request_id.clone();
    let found = blocking(move || t.find(&rid))
        .await?
        .ok_or_else(not_found)?;
    if principal.role != Role::Admin && found.team != team_fingerprint(&principal.team_id) {
        // An auditor sees its own team's entries only: another team's is not there for it.
        return Err(not_found());
    }
    let leaf = found.seq - 1;
    let (size, note) = match asked_size {
        Some(n) if n <= leaf || n > tlog.size() => {
            return Err(ApiError::invalid(
                "tree_size",
                format!(
                    "`tree_size` must be between {} (the entry's leaf index + 1) and {} (the log's size).",
                    leaf + 1,
                    tlog.size()
                ),
            ));
        }
        Some(n) => (n, None),
        None => {
            let head = match tlog.latest().filter(|l| l.size > leaf) {
                Some(head) => head,
                None => head_now(&app, &tlog).await?,
            };
            (head.size, Some(head.note))
        }
    };
    let t = tlog.clone();
    let path = blocking(move || t.inclusion(leaf, size)).await?;
    let mut body = json!({"leaf_index": leaf, "tree_size": size, "hashes": hashes(&path)});
    if let Some(note) = note {
        body["checkpoint"] = json!(note);
    }
    Ok(axum::Json(body).into_response())
}

/// `GET /v1/activity/consistency?from=M&to=N`.
pub async fn consistency(
    State(app): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let params = params(raw, &["from", "to"])?;
    let from = size_param(&params, "from")?
        .ok_or_else(|| ApiError::invalid("from", "`from` is required."))?;
    let to =
        size_param(&params, "to")?.ok_or_else(|| ApiError::invalid("to", "`to` is required."))?;
    let tlog = tlog(&app)?;
    if from > to {
        return Err(ApiError::invalid("from", "`from` must not be above `to`."));
    }
    if to > tlog.size() {
        return Err(ApiError::invalid(
            "to",
            format!("`to` must be at most the log's size, {}.", tlog.size()),
        ));
    }
    let t = tlog.clone();
    let proof = blocking(move || t.consistency(from, to)).await?;
    Ok(axum::Json(json!({"from": from, "to": to, "hashes": hashes(&proof)})).into_response())
}

//! The document library's endpoints (`docs/DOCUMENTS.md`), scoped to the caller's team:
//!
//! - `POST /v1/documents/upload` — multipart `file` (+ `collection`, `metadata`), read top to
//!   bottom in [`upload`]: the form read under the upload limit (`api::multipart`), then
//!   `pipeline::library::enqueue`: a re-upload of the same bytes answered with the stored record
//!   (200); otherwise the file is kept in the ingestion queue and the document answered at once
//!   in `status: "in_progress"` (202, `openai-poll-after-ms`), ingested by
//!   `pipeline::library::ingestion`'s workers (extracted, the guardrail on the chunks, embedded, stored,
//!   indexed, usage recorded); the journal entry gets the file's hash, never its text.
//!   `?wait=true` waits for the end (at most `pipeline::library::MAX_WAIT`), answering as the
//!   synchronous upload did: 201 with the document, or the error it failed with.
//! - `GET /v1/documents` (completed documents; collection filter, newest first, `after`
//!   cursor), `GET /v1/documents/{id}` (a document in any state: `in_progress` with its
//!   progress, `completed`, `failed` with `last_error`, `cancelled`), `POST
//!   /v1/documents/{id}/cancel`, `DELETE /v1/documents/{id}` (another team's document is 404).

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use super::multipart::{read_multipart, unknown_field};
use crate::pipeline::call::Call;
use crate::pipeline::library::{
    Accepted, MAX_WAIT, cancel as cancel_job, enqueue, job, job_error, library, settle,
};
use crate::rag::{BUILTIN_MODEL, RagError, Upload, check_collection};
use crate::server::error::ApiError;
use crate::store::documents::DocumentRecord;
use crate::store::ingest_jobs::{IngestJob, JobState};

/// What a client polling an unfinished document is told to wait between polls.
const POLL_AFTER_MS: &str = "500";

const DEFAULT_LIST_LIMIT: u32 = 20;
const MAX_LIST_LIMIT: u32 = 100;

pub async fn upload(
    mut call: Call,
    RawQuery(query): RawQuery,
    body: Body,
) -> Result<Response, ApiError> {
    let wait = wait_param(query.as_deref())?;
    let library = library(&call)?;
    library.readiness().map_err(RagError::Unavailable)?;
    let upload = read_form(&call, body).await?;
    let (job, new) = match enqueue(&mut call, &library, upload).await? {
        Accepted::Stored(record) => {
            return Ok((StatusCode::OK, Json(record_json(&record))).into_response());
        }
        Accepted::Queued(job, new) if wait => (settle(&call, *job, MAX_WAIT).await?, new),
        Accepted::Queued(job, new) => (*job, new),
    };
    // Waited for: answered as the synchronous upload was (201 only to the upload that queued it).
    let created = match new {
        true => StatusCode::CREATED,
        false => StatusCode::OK,
    };
    match job.state {
        JobState::Completed => match library.get(&job.team_id.0, &job.id).await? {
            Some(record) => Ok((created, Json(record_json(&record))).into_response()),
            None => Ok(Json(job_json(&job)).into_response()),
        },
        JobState::Failed => {
            // The guardrail refused the chunks: the upload's journal entry says so.
            if job
                .error
                .as_ref()
                .is_some_and(|e| e.kind == "guardrail_violation")
            {
                call.audit.blocked();
            }
            Err(job.error.as_ref().map_or_else(
                || ApiError::bad_request("The upload could not be ingested."),
                job_error,
            ))
        }
        JobState::Cancelled => Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            "The upload was cancelled before it was ingested.",
        )
        .with_code("cancelled")),
        JobState::Queued | JobState::Running => Ok(pending(StatusCode::ACCEPTED, &job)),
    }
}

/// `?wait=true|false` (default false); any other parameter is refused.
fn wait_param(query: Option<&str>) -> Result<bool, ApiError> {
    let mut wait = false;
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match (&*k, &*v) {
            ("wait", "true") => wait = true,
            ("wait", "false") => wait = false,
            ("wait", _) => return Err(ApiError::invalid("wait", "`wait` must be true or false.")),
            (other, _) => {
                return Err(ApiError::invalid(
                    "query",
                    format!(
                        "Unknown query parameter `{other}`; use wait=true to wait for ingestion."
                    ),
                ));
            }
        }
    }
    Ok(wait)
}

/// An unfinished document, with the header that tells a poller when to look again.
fn pending(status: StatusCode, job: &IngestJob) -> Response {
    (
        status,
        [("openai-poll-after-ms", POLL_AFTER_MS)],
        Json(job_json(job)),
    )
        .into_response()
}

pub async fn list(call: Call, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let mut collection = None;
    let mut after = None;
    let mut limit = DEFAULT_LIST_LIMIT;
    for (k, v) in url::form_urlencoded::parse(query.as_deref().unwrap_or("").as_bytes()) {
        match &*k {
            "collection" => collection = Some(check_collection(&v)?),
            "after" => after = Some(v.into_owned()),
            "limit" => {
                limit = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_LIST_LIMIT).contains(n))
                    .ok_or_else(|| {
                        ApiError::invalid(
                            "limit",
                            format!("`limit` must be an integer from 1 to {MAX_LIST_LIMIT}."),
                        )
                    })?;
            }
            "order" if v == "desc" => {}
            other => {
                return Err(ApiError::invalid(
                    "query",
                    format!(
                        "Unknown query parameter `{other}`; use collection, limit, after (order=desc)."
                    ),
                ));
            }
        }
    }
    let (page, has_more) = library
        .list(&call.principal.team_id, collection, after, limit)
        .await?;
    Ok(Json(json!({
        "object": "list",
        "data": page.iter().map(record_json).collect::<Vec<_>>(),
        "first_id": page.first().map(|r| r.id.clone()),
        "last_id": page.last().map(|r| r.id.clone()),
        "has_more": has_more,
    }))
    .into_response())
}

pub async fn get(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let team = &call.principal.team_id;
    if let Some(record) = library.get(team, &id).await? {
        return Ok(Json(record_json(&record)).into_response());
    }
    match job(&call, &id).await? {
        Some(job) if !job.state.is_final() => Ok(pending(StatusCode::OK, &job)),
        // Completed, then deleted: gone.
        Some(job) if job.state != JobState::Completed => Ok(Json(job_json(&job)).into_response()),
        _ => Err(no_such_document(&id)),
    }
}

/// Cancels the team's unfinished upload; a document that has ended is answered as it is.
pub async fn cancel(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let cancelled = cancel_job(&call, &id).await?;
    if let Some(record) = library.get(&call.principal.team_id, &id).await? {
        return Ok(Json(record_json(&record)).into_response());
    }
    match cancelled {
        Some(job) if job.state != JobState::Completed => Ok(Json(job_json(&job)).into_response()),
        _ => Err(no_such_document(&id)),
    }
}

pub async fn delete(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    // An upload still queued or running is cancelled: it never becomes searchable.
    let cancelled = cancel_job(&call, &id).await?;
    let deleted = library.delete(&call.principal.team_id, &id).await?;
    if !deleted && cancelled.is_none_or(|j| j.state == JobState::Completed) {
        return Err(no_such_document(&id));
    }
    Ok(Json(json!({"id": id, "object": "document.deleted", "deleted": true})).into_response())
}

fn no_such_document(id: &str) -> ApiError {
    let mut shown: String = id.chars().take(80).collect();
    if shown.len() < id.len() {
        shown.push('…');
    }
    ApiError::not_found(format!("No document `{shown}` in your team's library."))
}

/// The record as the API shows it: a completed document.
fn record_json(r: &DocumentRecord) -> Value {
    let metadata = serde_json::from_str::<Value>(&r.metadata).unwrap_or_else(|_| json!({}));
    json!({
        "id": r.id,
        "object": "document",
        "filename": r.filename,
        "collection": r.collection,
        "kind": r.kind,
        "bytes": r.bytes,
        "sha256": r.sha256,
        "pages": r.pages,
        "chunks": r.chunks,
        "status": "completed",
        "progress": {"pages": r.pages, "pages_done": r.pages.unwrap_or(0), "chunks": r.chunks, "chunks_done": r.chunks},
        "last_error": null,
        "metadata": metadata,
        "model": r.model.split('@').next().unwrap_or(BUILTIN_MODEL),
        "created_at": r.created_at / 1000,
    })
}

/// A document not (or never) completed, as its ingestion job shows it.
fn job_json(j: &IngestJob) -> Value {
    let metadata = serde_json::from_str::<Value>(&j.metadata).unwrap_or_else(|_| json!({}));
    let status = match j.state {
        JobState::Queued | JobState::Running => "in_progress",
        JobState::Completed => "completed",
        JobState::Failed => "failed",
        JobState::Cancelled => "cancelled",
    };
    let last_error = j
        .error
        .as_ref()
        .map(|e| json!({"type": e.kind, "code": e.code, "message": e.message, "param": null}));
    let p = &j.progress;
    json!({
        "id": j.id,
        "object": "document",
        "filename": j.filename,
        "collection": j.collection,
        "kind": null,
        "bytes": j.bytes,
        "sha256": j.sha256,
        "pages": p.pages,
        "chunks": p.chunks,
        "status": status,
        "progress": {"pages": p.pages, "pages_done": p.pages_done, "chunks": p.chunks, "chunks_done": p.chunks_done},
        "last_error": last_error,
        "metadata": metadata,
        "model": null,
        "created_at": j.created_at / 1000,
    })
}

/// Reads the multipart form: `file` (required), `collection`, `metadata`.
async fn read_form(call: &Call, body: Body) -> Result<Upload, ApiError> {
    let form = read_multipart(call, body).await?;
    let (filename, content_type, bytes) = form.file.ok_or_else(|| {
        ApiError::invalid(
            "file",
            "The form has no `file` part: attach the document as `file`.",
        )
    })?;
    if form.purpose.is_some() {
        return Err(unknown_field("purpose"));
    }
    Ok(Upload {
        team_id: call.principal.team_id.clone(),
        collection: form.collection.unwrap_or_else(|| "default".into()),
        filename,
        content_type,
        metadata: form.metadata.unwrap_or_default(),
        file_id: None,
        bytes,
    })
}

//! The document library's endpoints (`docs/DOCUMENTS.md`), scoped to the caller's team:
//!
//! - `POST /v1/documents/upload` — multipart `file` (+ `collection`, `metadata`), read top to
//!   bottom in [`upload`]: the form read under the upload limit (`api::multipart`), then
//!   `pipeline::library::ingest`: a re-upload of the same bytes answered with the stored record
//!   (200); the text extracted in a child process and chunked; the chunks through the
//!   guardrail's input stage (block: 400, nothing stored; redact: the stored text is redacted);
//!   embedded, stored and indexed (201); usage recorded; the journal entry gets the file's hash,
//!   never its text.
//! - `GET /v1/documents` (collection filter, newest first, `after` cursor), `GET` and `DELETE
//!   /v1/documents/{id}` (another team's document is 404).

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use super::multipart::{read_multipart, unknown_field};
use crate::pipeline::call::Call;
use crate::pipeline::library::{ingest, library};
use crate::rag::{BUILTIN_MODEL, RagError, Upload, check_collection};
use crate::server::error::ApiError;
use crate::store::documents::DocumentRecord;

const DEFAULT_LIST_LIMIT: u32 = 20;
const MAX_LIST_LIMIT: u32 = 100;

pub async fn upload(mut call: Call, body: Body) -> Result<Response, ApiError> {
    let library = library(&call)?;
    library.readiness().map_err(RagError::Unavailable)?;
    let upload = read_form(&call, body).await?;
    let (record, created) = ingest(&mut call, &library, upload).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(record_json(&record))).into_response())
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
    match library.get(&call.principal.team_id, &id).await? {
        Some(record) => Ok(Json(record_json(&record)).into_response()),
        None => Err(no_such_document(&id)),
    }
}

pub async fn delete(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    if !library.delete(&call.principal.team_id, &id).await? {
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

/// The record as the API shows it.
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
        "status": "ready",
        "metadata": metadata,
        "model": r.model.split('@').next().unwrap_or(BUILTIN_MODEL),
        "created_at": r.created_at / 1000,
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

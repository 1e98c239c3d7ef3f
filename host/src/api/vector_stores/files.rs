//! A vector store's files (`/v1/vector_stores/{id}/files`): attaching one puts it in the
//! ingestion queue (`pipeline::library::enqueue`, the same queue as `/v1/documents/upload`) and
//! answers at once, `in_progress` with `openai-poll-after-ms`, unless the store already holds
//! its bytes; it becomes `completed`, `failed` (with `last_error`) or `cancelled` as its job
//! ends. A file's state is its stored document (`completed`), else its latest job
//! ([`states`]); the store's and batches' `file_counts` are counted from the same states.

use std::collections::HashMap;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{LIST_FILES, bad_body, vector_store};
use crate::api::list_page::ListQuery;
use crate::pipeline::call::Call;
use crate::pipeline::library::{Accepted, cancel as cancel_job, enqueue, library};
use crate::rag::{Library, RagError, Upload, check_metadata};
use crate::server::error::ApiError;
use crate::store::TeamId;
use crate::store::documents::DocumentRecord;
use crate::store::ingest_jobs::{IngestJob, JobState};

/// What a client polling an unfinished file (or batch) is told to wait between polls.
pub(super) const POLL_AFTER_MS: &str = "500";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AttachFile {
    file_id: String,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
    #[serde(default)]
    chunking_strategy: Option<Value>,
}

/// A file of a vector store: its stored document, or the latest job ingesting it.
#[derive(Debug, Clone)]
pub(super) enum FileState {
    Stored(Box<DocumentRecord>),
    Job(Box<IngestJob>),
}

impl FileState {
    /// OpenAI's status of a vector-store file.
    pub(super) fn status(&self) -> &'static str {
        match self {
            FileState::Stored(_) => "completed",
            FileState::Job(j) => match j.state {
                JobState::Queued | JobState::Running => "in_progress",
                JobState::Completed => "completed",
                JobState::Failed => "failed",
                JobState::Cancelled => "cancelled",
            },
        }
    }

    /// The bytes it takes in the store (stored documents only).
    pub(super) fn bytes(&self) -> u64 {
        match self {
            FileState::Stored(d) => d.bytes,
            FileState::Job(_) => 0,
        }
    }

    fn created_at(&self) -> i64 {
        match self {
            FileState::Stored(d) => d.created_at,
            FileState::Job(j) => j.created_at,
        }
    }

    /// The `vector_store.file` object.
    pub(super) fn json(&self, file_id: &str) -> Value {
        let (store, created, bytes, metadata, last_error) = match self {
            FileState::Stored(d) => (&d.collection, d.created_at, d.bytes, &d.metadata, None),
            FileState::Job(j) => (
                &j.collection,
                j.created_at,
                0,
                &j.metadata,
                j.error.as_ref().map(|e| {
                    // OpenAI's codes for a file that could not be ingested; the message is ours.
                    let code = match e.status {
                        500.. => "server_error",
                        415 => "unsupported_file",
                        _ => "invalid_file",
                    };
                    json!({"code": code, "message": e.message})
                }),
            ),
        };
        json!({
            "id": file_id,
            "object": "vector_store.file",
            "created_at": created / 1000,
            "vector_store_id": store,
            "status": self.status(),
            "last_error": last_error,
            "usage_bytes": bytes,
            "attributes": serde_json::from_str::<Value>(metadata).unwrap_or_else(|_| json!({})),
            "chunking_strategy": {"type": "static", "static": {"max_chunk_size_tokens": 400, "chunk_overlap_tokens": 60}},
        })
    }

    /// The object, with `openai-poll-after-ms` while it is in progress.
    fn response(&self, file_id: &str) -> Response {
        let body = Json(self.json(file_id));
        match self.status() {
            "in_progress" => ([("openai-poll-after-ms", POLL_AFTER_MS)], body).into_response(),
            _ => body.into_response(),
        }
    }
}

/// Files counted by state, as `file_counts`.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    pub in_progress: u64,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
}

impl Counts {
    pub(super) fn json(&self) -> Value {
        json!({
            "in_progress": self.in_progress,
            "completed": self.completed,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "total": self.in_progress + self.completed + self.failed + self.cancelled,
        })
    }
}

pub(super) fn counts<'a>(states: impl Iterator<Item = &'a FileState>) -> Counts {
    let mut c = Counts::default();
    for s in states {
        match s.status() {
            "in_progress" => c.in_progress += 1,
            "failed" => c.failed += 1,
            "cancelled" => c.cancelled += 1,
            _ => c.completed += 1,
        }
    }
    c
}

/// Every file of the team's store `store_id` by file id: its stored document, else its latest
/// job unless that job completed (a completed file whose document was deleted is gone).
pub(super) async fn states(
    call: &Call,
    library: &Library,
    store_id: &str,
) -> Result<HashMap<String, FileState>, ApiError> {
    let team = &call.principal.team_id;
    let mut out = HashMap::new();
    let jobs = call
        .app
        .vector_store_jobs()
        .of_collection(TeamId(team.clone()), store_id.to_string())
        .await?;
    // Newest first: the first job seen for a file is its latest.
    for job in jobs {
        let Some(file_id) = job.file_id.clone() else {
            continue;
        };
        if job.state != JobState::Completed {
            out.entry(file_id)
                .or_insert_with(|| FileState::Job(Box::new(job)));
        }
    }
    // The store's documents, a library page at a time: a stored document is the file's state.
    let (mut after, mut more) = (None, true);
    while more {
        let page;
        (page, more) = library
            .list(team, Some(store_id.to_string()), after, 100)
            .await?;
        after = page.last().map(|d| d.id.clone());
        for d in page {
            if let Some(file_id) = d.file_id.clone() {
                out.insert(file_id, FileState::Stored(Box::new(d)));
            }
        }
    }
    Ok(out)
}

/// The files of `states` newest first, as a list page asks (`filter`: one status).
pub(super) fn page(
    list: &ListQuery,
    states: HashMap<String, FileState>,
) -> Result<Value, ApiError> {
    let filter = match list.extra("filter") {
        None => None,
        Some(f @ ("in_progress" | "completed" | "failed" | "cancelled")) => Some(f.to_string()),
        Some(_) => {
            return Err(ApiError::invalid(
                "filter",
                "`filter` must be one of in_progress, completed, failed, cancelled.",
            ));
        }
    };
    let mut files: Vec<(String, FileState)> = states
        .into_iter()
        .filter(|(_, s)| filter.as_deref().is_none_or(|f| s.status() == f))
        .collect();
    files.sort_by(|a, b| (b.1.created_at(), &b.0).cmp(&(a.1.created_at(), &a.0)));
    let (files, has_more) = list.page(files, |(id, _)| id);
    let data: Vec<Value> = files.iter().map(|(id, s)| s.json(id)).collect();
    Ok(json!({
        "object": "list",
        "first_id": files.first().map(|(id, _)| id.clone()),
        "last_id": files.last().map(|(id, _)| id.clone()),
        "data": data,
        "has_more": has_more,
    }))
}

pub async fn attach(
    mut call: Call,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let map = call.read_body(body).await?;
    let request: AttachFile =
        serde_json::from_value(Value::Object(map)).map_err(|e| bad_body("vector store file", e))?;
    let _ = &request.chunking_strategy;
    let attributes = request.attributes.unwrap_or_default();
    check_metadata(&attributes)?;
    vector_store(&call, &library, &id).await?;
    let state = attach_file(&mut call, &library, &id, &request.file_id, attributes).await?;
    Ok(state.response(&request.file_id))
}

pub async fn list_files(
    call: Call,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let list = ListQuery::parse(query.as_deref(), LIST_FILES)?;
    let library = library(&call)?;
    vector_store(&call, &library, &id).await?;
    let states = states(&call, &library, &id).await?;
    Ok(Json(page(&list, states)?).into_response())
}

pub async fn get_file(
    call: Call,
    Path((id, file_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let state = file_state(&call, &library, &id, &file_id).await?;
    Ok(state.response(&file_id))
}

/// File `file_id` of the team's vector store `id`, in whatever state it is (404 for either).
async fn file_state(
    call: &Call,
    library: &Library,
    id: &str,
    file_id: &str,
) -> Result<FileState, ApiError> {
    vector_store(call, library, id).await?;
    states(call, library, id)
        .await?
        .remove(file_id)
        .ok_or_else(|| no_such_file(file_id))
}

/// Detaches a file in any state: its job forgotten (a running one stops at its next report),
/// its document out of retrieval.
pub async fn detach(
    call: Call,
    Path((id, file_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let state = file_state(&call, &library, &id, &file_id).await?;
    let team = call.principal.team_id.clone();
    if let FileState::Job(job) = &state
        && !job.state.is_final()
    {
        // Announced as cancelled: whoever waits for the attachment hears it end.
        cancel_job(&call, &job.id).await?;
    }
    call.app
        .vector_store_jobs()
        .forget(TeamId(team.clone()), id.clone(), Some(file_id.clone()))
        .await?;
    if let FileState::Stored(record) = state {
        library.delete(&team, &record.id).await?;
    }
    Ok(
        Json(json!({"id": file_id, "object": "vector_store.file.deleted", "deleted": true}))
            .into_response(),
    )
}

fn no_such_file(file_id: &str) -> ApiError {
    let shown: String = file_id.chars().take(80).collect();
    ApiError::not_found(format!("No file `{shown}` in this vector store."))
}

/// Attaches the team's file to the store: queued like an upload (the file id on the document,
/// the attributes as its metadata), or the stored document when the store already holds it.
pub(super) async fn attach_file(
    call: &mut Call,
    library: &Library,
    store_id: &str,
    file_id: &str,
    attributes: Map<String, Value>,
) -> Result<FileState, ApiError> {
    let team = call.principal.team_id.clone();
    let Some((file, data)) = library
        .file(TeamId(team.clone()), file_id.to_string())
        .await?
    else {
        return Err(ApiError::from(RagError::NoSuchFile(file_id.to_string())).with_param("file_id"));
    };
    library.readiness().map_err(RagError::Unavailable)?;
    let upload = Upload {
        team_id: team,
        collection: store_id.to_string(),
        filename: file.filename,
        content_type: file.content_type,
        metadata: attributes,
        file_id: Some(file_id.to_string()),
        bytes: Bytes::from(data),
    };
    Ok(match enqueue(call, library, upload).await? {
        Accepted::Stored(record) => FileState::Stored(record),
        Accepted::Queued(job, _) => FileState::Job(job),
    })
}

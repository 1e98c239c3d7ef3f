//! Vector-store file batches (`/v1/vector_stores/{id}/file_batches`): one call attaches many
//! files, each queued as [`files::attach_file`] queues one; the batch is `in_progress` while any
//! of its files is, then `completed` (or `cancelled` once cancelled), its `file_counts` counted
//! from its files' states. `POST …/cancel` cancels the files still waiting or running.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::files::{self, Counts, FileState, POLL_AFTER_MS};
use super::{LIST_FILES, bad_body, vector_store};
use crate::api::list_page::ListQuery;
use crate::pipeline::call::Call;
use crate::pipeline::library::{cancel as cancel_job, library};
use crate::rag::{Library, RagError, check_metadata};
use crate::server::error::ApiError;
use crate::store::TeamId;
use crate::store::ingest_jobs::FileBatch;

/// The most files one batch attaches (OpenAI's own limit is larger; each is a queued upload).
const MAX_BATCH_FILES: usize = 500;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBatch {
    #[serde(default)]
    file_ids: Option<Vec<String>>,
    #[serde(default)]
    files: Option<Vec<BatchFile>>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
    /// Accepted for compatibility; chunking follows `[documents]`.
    #[serde(default)]
    chunking_strategy: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchFile {
    file_id: String,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
    #[serde(default)]
    chunking_strategy: Option<Value>,
}

pub async fn create_batch(
    mut call: Call,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let map = call.read_body(body).await?;
    let request: CreateBatch =
        serde_json::from_value(Value::Object(map)).map_err(|e| bad_body("file batch", e))?;
    let _ = &request.chunking_strategy;
    let shared = request.attributes.unwrap_or_default();
    check_metadata(&shared)?;
    let wanted: Vec<(String, Map<String, Value>)> = match (request.file_ids, request.files) {
        (Some(ids), None) => ids.into_iter().map(|f| (f, shared.clone())).collect(),
        (None, Some(files)) => files
            .into_iter()
            .map(|f| {
                let _ = &f.chunking_strategy;
                (f.file_id, f.attributes.unwrap_or_else(|| shared.clone()))
            })
            .collect(),
        _ => {
            return Err(ApiError::invalid(
                "file_ids",
                "Give either `file_ids` or `files` (not both).",
            ));
        }
    };
    if wanted.is_empty() || wanted.len() > MAX_BATCH_FILES {
        return Err(ApiError::invalid(
            "file_ids",
            format!("A batch attaches 1 to {MAX_BATCH_FILES} files."),
        ));
    }
    for (_, attributes) in &wanted {
        check_metadata(attributes)?;
    }
    vector_store(&call, &library, &id).await?;
    let team = TeamId(call.principal.team_id.clone());
    // Every file must exist before any is queued.
    for (file_id, _) in &wanted {
        if library.file(team.clone(), file_id.clone()).await?.is_none() {
            return Err(
                ApiError::from(RagError::NoSuchFile(file_id.clone())).with_param("file_ids")
            );
        }
    }
    let mut file_ids: Vec<String> = wanted.iter().map(|(f, _)| f.clone()).collect();
    let mut seen = std::collections::HashSet::new();
    file_ids.retain(|f| seen.insert(f.clone()));
    let batch = call
        .app
        .vector_store_jobs()
        .create_batch(FileBatch {
            id: format!("vsfb_{}", uuid::Uuid::now_v7().simple()),
            team_id: team,
            vector_store_id: id.clone(),
            file_ids,
            cancelled: false,
            created_at: 0,
        })
        .await?;
    for (file_id, attributes) in wanted {
        if let Err(refused) =
            files::attach_file(&mut call, &library, &id, &file_id, attributes).await
        {
            // The queue refused one (full): the batch stops there, cancelled; the files queued
            // before it are cancelled too, so the caller's error is the whole answer.
            cancel_files(&call, &library, &batch).await?;
            return Err(refused);
        }
    }
    batch_response(&call, &library, &batch).await
}

pub async fn get_batch(
    call: Call,
    Path((id, batch_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let batch = file_batch(&call, &library, &id, &batch_id).await?;
    batch_response(&call, &library, &batch).await
}

pub async fn cancel_batch(
    call: Call,
    Path((id, batch_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let batch = file_batch(&call, &library, &id, &batch_id).await?;
    cancel_files(&call, &library, &batch).await?;
    let batch = file_batch(&call, &library, &id, &batch_id).await?;
    batch_response(&call, &library, &batch).await
}

pub async fn list_batch_files(
    call: Call,
    Path((id, batch_id)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let list = ListQuery::parse(query.as_deref(), LIST_FILES)?;
    let library = library(&call)?;
    let batch = file_batch(&call, &library, &id, &batch_id).await?;
    let mut states = files::states(&call, &library, &id).await?;
    states.retain(|file_id, _| batch.file_ids.contains(file_id));
    Ok(Json(files::page(&list, states)?).into_response())
}

/// The team's batch of the team's store, or 404.
async fn file_batch(
    call: &Call,
    library: &Library,
    store_id: &str,
    batch_id: &str,
) -> Result<FileBatch, ApiError> {
    vector_store(call, library, store_id).await?;
    call.app
        .vector_store_jobs()
        .batch(TeamId(call.principal.team_id.clone()), batch_id.to_string())
        .await?
        .filter(|b| b.vector_store_id == store_id)
        .ok_or_else(|| {
            let shown: String = batch_id.chars().take(80).collect();
            ApiError::not_found(format!("No file batch `{shown}` in this vector store."))
        })
}

/// Marks the batch cancelled and cancels its files still waiting or running.
async fn cancel_files(call: &Call, library: &Library, batch: &FileBatch) -> Result<(), ApiError> {
    let jobs = call.app.vector_store_jobs();
    jobs.cancel_batch(batch.team_id.clone(), batch.id.clone())
        .await?;
    let states = files::states(call, library, &batch.vector_store_id).await?;
    for file_id in &batch.file_ids {
        if let Some(FileState::Job(job)) = states.get(file_id)
            && !job.state.is_final()
        {
            cancel_job(call, &job.id).await?;
        }
    }
    Ok(())
}

/// The `vector_store.file_batch` object, with `openai-poll-after-ms` while it is in progress.
async fn batch_response(
    call: &Call,
    library: &Library,
    batch: &FileBatch,
) -> Result<Response, ApiError> {
    let states = files::states(call, library, &batch.vector_store_id).await?;
    let counts: Counts = files::counts(batch.file_ids.iter().filter_map(|f| states.get(f)));
    let status = match (counts.in_progress, batch.cancelled) {
        (0, true) => "cancelled",
        (_, true) => "cancelling",
        (0, false) => "completed",
        (_, false) => "in_progress",
    };
    let body = Json(json!({
        "id": batch.id,
        "object": "vector_store.files_batch",
        "created_at": batch.created_at / 1000,
        "vector_store_id": batch.vector_store_id,
        "status": status,
        "file_counts": counts.json(),
    }));
    Ok(match counts.in_progress {
        0 => body.into_response(),
        _ => ([("openai-poll-after-ms", POLL_AFTER_MS)], body).into_response(),
    })
}

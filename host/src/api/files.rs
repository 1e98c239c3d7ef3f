//! `/v1/files` — the OpenAI files API, as far as retrieval needs it: a file is uploaded
//! (multipart `file` + `purpose`), kept as is in the team's store, and ingested when it is
//! attached to a vector store (`api::vector_stores`), which is what the SDKs'
//! `vector_stores.files.upload_and_poll` does. Scoped to the caller's team.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use super::list_page::{Bounds, ListQuery};
use super::multipart::read_multipart;
use crate::pipeline::call::Call;
use crate::pipeline::library::{forget_file, library};
use crate::rag::RagError;
use crate::server::error::ApiError;
use crate::store::TeamId;
use crate::store::documents::{FileRecord, NewFile};

/// What a file may be uploaded for.
const PURPOSES: &[&str] = &[
    "assistants",
    "user_data",
    "batch",
    "fine-tune",
    "vision",
    "evals",
];

pub async fn create(mut call: Call, body: Body) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let form = read_multipart(&call, body).await?;
    if form.collection.is_some() || form.metadata.is_some() {
        return Err(ApiError::invalid(
            "form",
            "`/v1/files` takes `file` and `purpose` only.",
        ));
    }
    let purpose = form.purpose.unwrap_or_default();
    if !PURPOSES.contains(&purpose.as_str()) {
        return Err(ApiError::invalid(
            "purpose",
            format!("`purpose` must be one of {}.", PURPOSES.join(", ")),
        ));
    }
    let (filename, content_type, bytes) = form
        .file
        .ok_or_else(|| ApiError::invalid("file", "The form has no `file` part."))?;
    if bytes.is_empty() {
        return Err(ApiError::invalid("file", "The file is empty (0 bytes)."));
    }
    call.identify(&serde_json::Map::new(), None);
    call.audit
        .content(&hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes)));
    let record = library
        .create_file(NewFile {
            id: format!("file-{}", uuid::Uuid::now_v7().simple()),
            team_id: TeamId(call.principal.team_id.clone()),
            filename,
            purpose,
            content_type,
            data: bytes.to_vec(),
        })
        .await?;
    Ok((StatusCode::OK, Json(file_json(&record))).into_response())
}

/// OpenAI's bounds for `GET /v1/files`.
const LIST: Bounds = Bounds {
    max: 10_000,
    default: 10_000,
    extra: &["purpose"],
};

pub async fn list(call: Call, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let list = ListQuery::parse(query.as_deref(), LIST)?;
    let purpose = list.extra("purpose").map(str::to_owned);
    if let Some(p) = &purpose
        && !PURPOSES.contains(&p.as_str())
    {
        return Err(ApiError::invalid(
            "purpose",
            format!("`purpose` must be one of {}.", PURPOSES.join(", ")),
        ));
    }
    let library = library(&call)?;
    let mut files = library
        .files(TeamId(call.principal.team_id.clone()))
        .await?;
    files.retain(|f| purpose.as_ref().is_none_or(|p| *p == f.purpose));
    let (files, has_more) = list.page(files, |f| &f.id);
    Ok(Json(json!({
        "object": "list",
        "data": files.iter().map(file_json).collect::<Vec<_>>(),
        "first_id": files.first().map(|f| f.id.clone()),
        "last_id": files.last().map(|f| f.id.clone()),
        "has_more": has_more,
    }))
    .into_response())
}

pub async fn get(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    match library
        .file(TeamId(call.principal.team_id.clone()), id.clone())
        .await?
    {
        Some((record, _)) => Ok(Json(file_json(&record)).into_response()),
        None => Err(RagError::NoSuchFile(id).into()),
    }
}

/// Deletes the file and, as OpenAI's API does, removes it from every vector store of the team.
pub async fn delete(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let team = call.principal.team_id.clone();
    // An attachment still queued or running is cancelled and forgotten: it never completes into
    // a document of a deleted file.
    forget_file(&call, &id).await?;
    for document in library.documents_of_file(&team, None, &id) {
        library.delete(&team, &document).await?;
    }
    if !library
        .delete_file(TeamId(call.principal.team_id.clone()), id.clone())
        .await?
    {
        return Err(RagError::NoSuchFile(id).into());
    }
    Ok(Json(json!({"id": id, "object": "file", "deleted": true})).into_response())
}

fn file_json(f: &FileRecord) -> Value {
    json!({
        "id": f.id,
        "object": "file",
        "bytes": f.bytes,
        "created_at": f.created_at / 1000,
        "filename": f.filename,
        "purpose": f.purpose,
        "status": "processed",
        "status_details": null,
        "expires_at": null,
    })
}

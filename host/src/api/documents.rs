//! The document library's endpoints (`docs/DOCUMENTS.md`), scoped to the caller's team:
//!
//! - `POST /v1/documents/upload` — multipart `file` (+ `collection`, `metadata`), read top to
//!   bottom in [`upload`] and [`ingest`]: the form read under the upload limit; a re-upload of the same bytes
//!   answered with the stored record (200); the text extracted in a child process and chunked;
//!   the chunks through the guardrail's input stage (block: 400, nothing stored; redact: the
//!   stored text is redacted); embedded, stored and indexed (201); usage recorded; the journal
//!   entry gets the file's hash, never its text.
//! - `GET /v1/documents` (collection filter, newest first, `after` cursor), `GET` and `DELETE
//!   /v1/documents/{id}` (another team's document is 404).

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::pipeline::call::Call;
use crate::pipeline::guard;
use crate::rag::{BUILTIN_MODEL, Library, RagError, Upload};
use crate::server::body::read_bytes_within;
use crate::server::error::ApiError;
use crate::store::documents::DocumentRecord;
use crate::store::{Clock, SystemClock, UsageRecord};

/// Multipart framing and the small fields, on top of the file's own limit.
const FORM_OVERHEAD_BYTES: u64 = 64 << 10;
const MAX_COLLECTION_CHARS: usize = 64;
const MAX_FILENAME_CHARS: usize = 255;
const MAX_METADATA_KEYS: usize = 16;
const MAX_METADATA_KEY_CHARS: usize = 64;
const MAX_METADATA_VALUE_CHARS: usize = 512;
const DEFAULT_LIST_LIMIT: u32 = 20;
const MAX_LIST_LIMIT: u32 = 100;

impl From<RagError> for ApiError {
    fn from(e: RagError) -> Self {
        match e {
            RagError::Unavailable(why) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                format!("Documents and retrieval are unavailable on this gateway: {why}."),
            )
            .with_code("retrieval_unavailable"),
            RagError::Extract(e) => {
                let status = StatusCode::from_u16(e.status_hint())
                    .unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
                let code = match e {
                    sovereign_documents::ExtractError::Unsupported { .. } => {
                        "unsupported_file_type".to_string()
                    }
                    _ => serde_json::to_value(&e)
                        .ok()
                        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_else(|| "unreadable_document".into()),
                };
                let kind = if status.is_server_error() {
                    "server_error"
                } else {
                    "invalid_request_error"
                };
                let mut message = e.to_string();
                if let Some(first) = message.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                ApiError::new(status, kind, format!("{message}."))
                    .with_code(code)
                    .with_param("file")
            }
            RagError::Store(e) => ApiError::from(e),
            RagError::Upstream(e) => ApiError::from(e),
            e @ (RagError::Embed(_) | RagError::Worker(_)) => {
                tracing::error!(error = %e, "document library failure");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "The document library failed to process the request.",
                )
            }
        }
    }
}

/// The library, or 404 when `[documents] enabled = false`.
pub fn library(call: &Call) -> Result<Arc<Library>, ApiError> {
    call.app.0.library.clone().ok_or_else(|| {
        ApiError::not_found(
            "Documents and retrieval are disabled on this gateway ([documents] enabled = false).",
        )
    })
}

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

/// An upload into the library, top to bottom; `true` when it was stored now, `false` when the
/// team's collection already held these bytes. Also how a file attached to a vector store is
/// ingested (`api::vector_stores`).
pub async fn ingest(
    call: &mut Call,
    library: &Library,
    upload: Upload,
) -> Result<(DocumentRecord, bool), ApiError> {
    // 1. The journal records the file's hash, never its text.
    let sha256 = upload.sha256();
    call.identify(&Map::new(), None);
    call.audit.content(&sha256);

    // 2. The same bytes in the same collection: the stored record.
    if let Some(record) = library.existing(&upload, &sha256).await? {
        return Ok((record, false));
    }

    // 3. Text with provenance, extracted in a child process, then chunked.
    let mut extracted = library.extract(&upload).await?;

    // 4. The guardrail on the chunks: block (nothing stored) or redact what is stored.
    guard::texts(call, &mut extracted.texts).await?;

    // 5. Embedded, stored, indexed; the model's work counted in usage.
    let tokens = extracted.tokens;
    let (record, created) = library.add(upload, sha256, extracted).await?;
    if created {
        record_usage(call, library.model_id(), tokens).await;
    }
    Ok((record, created))
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
pub fn record_json(r: &DocumentRecord) -> Value {
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

/// The embedding model's work for the library, in usage (no spend: the built-in model runs on the
/// gateway's own CPU, and an upstream embedding model's cost is not charged to budgets).
pub async fn record_usage(call: &Call, model: &str, tokens: u64) {
    call.audit.local_model(model, tokens);
    let record = UsageRecord {
        at: SystemClock.now_ms(),
        team_id: crate::store::TeamId(call.principal.team_id.clone()),
        key_id: crate::store::KeyId(call.principal.key_id.clone()),
        actor: call.actor.clone(),
        model: model.to_string(),
        tokens_in: tokens,
        tokens_out: 0,
        spend: 0,
        request_id: Some(call.ctx.id.to_string()),
    };
    if let Err(e) = call.app.0.store.record_usage(record).await {
        // The work is done and answered; a lost usage row is logged, not turned into a 500.
        tracing::error!(request_id = %call.ctx.id, error = %e, "recording document usage failed");
    }
}

/// A collection name: 1–64 of `[A-Za-z0-9._-]`.
pub fn check_collection(name: &str) -> Result<String, ApiError> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_COLLECTION_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(name.to_string())
    } else {
        Err(ApiError::invalid(
            "collection",
            format!(
                "`collection` must be 1 to {MAX_COLLECTION_CHARS} characters of letters, digits, `.`, `_` and `-`."
            ),
        ))
    }
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

/// A multipart upload's parts (`/v1/documents/upload`, `/v1/files`).
pub struct Form {
    pub file: Option<(String, Option<String>, Bytes)>,
    pub collection: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    pub purpose: Option<String>,
}

fn unknown_field(name: &str) -> ApiError {
    let shown: String = name.chars().take(64).collect();
    ApiError::invalid("form", format!("Unknown form field `{shown}`."))
}

/// Reads a multipart form under the upload limit: `file`, `collection`, `metadata`, `purpose`.
pub async fn read_multipart(call: &Call, body: Body) -> Result<Form, ApiError> {
    let library = library(call)?;
    let content_type = call
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = multer::parse_boundary(content_type).map_err(|_| {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "Upload documents as `multipart/form-data` with a `file` part.",
        )
        .with_code("unsupported_media_type")
    })?;
    let limit = library
        .max_upload_bytes()
        .saturating_add(FORM_OVERHEAD_BYTES);
    let bytes = read_bytes_within(
        &call.headers,
        body,
        usize::try_from(limit).unwrap_or(usize::MAX),
        &call.app.0.config.server,
    )
    .await?;
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(bytes) });
    let mut form = multer::Multipart::new(stream, boundary);
    let bad_form =
        |e: multer::Error| ApiError::bad_request(format!("The multipart form is malformed: {e}."));
    let (mut file, mut collection, mut metadata, mut purpose) = (None, None, None, None);
    let mut seen: Vec<String> = Vec::new();
    while let Some(field) = form.next_field().await.map_err(bad_form)? {
        let name = field.name().unwrap_or("").to_string();
        // A part sent twice: which one was meant is a guess (the last one used to win).
        if seen.contains(&name) {
            let shown: String = name.chars().take(64).collect();
            return Err(ApiError::invalid(
                &shown,
                format!("The form has more than one `{shown}` part: send one."),
            ));
        }
        seen.push(name.clone());
        match name.as_str() {
            "file" => {
                let filename = field
                    .file_name()
                    .map(clean_filename)
                    .filter(|f| !f.is_empty())
                    .ok_or_else(|| {
                        ApiError::invalid("file", "The `file` part needs a file name.")
                    })?;
                let content_type = field.content_type().map(ToString::to_string);
                let data = field.bytes().await.map_err(bad_form)?;
                file = Some((filename, content_type, data));
            }
            "collection" => {
                collection = Some(check_collection(
                    field.text().await.map_err(bad_form)?.trim(),
                )?)
            }
            "metadata" => metadata = Some(parse_metadata(&field.text().await.map_err(bad_form)?)?),
            "purpose" => {
                let text = field.text().await.map_err(bad_form)?;
                purpose = Some(text.trim().chars().take(64).collect());
            }
            other => return Err(unknown_field(other)),
        }
    }
    Ok(Form {
        file,
        collection,
        metadata,
        purpose,
    })
}

/// The file name without any directory part, control characters or excess length.
fn clean_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.chars()
        .filter(|c| !c.is_control())
        .take(MAX_FILENAME_CHARS)
        .collect::<String>()
        .trim()
        .to_string()
}

/// `metadata`: a JSON object of at most 16 keys, each value a string, number or boolean.
fn parse_metadata(text: &str) -> Result<Map<String, Value>, ApiError> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return Err(ApiError::invalid(
            "metadata",
            "`metadata` must be a JSON object, e.g. {\"department\": \"risk\"}.",
        ));
    };
    check_metadata(&map)?;
    Ok(map)
}

/// Metadata (vector-store attributes too): at most 16 keys of 1–64 characters, each value a
/// string of at most 512 characters, a number or a boolean.
pub fn check_metadata(map: &Map<String, Value>) -> Result<(), ApiError> {
    let invalid = |m: String| ApiError::invalid("metadata", m);
    if map.len() > MAX_METADATA_KEYS {
        return Err(invalid(format!(
            "`metadata` may have at most {MAX_METADATA_KEYS} keys."
        )));
    }
    for (k, v) in map {
        if k.is_empty() || k.chars().count() > MAX_METADATA_KEY_CHARS {
            return Err(invalid(format!(
                "`metadata` keys must be 1 to {MAX_METADATA_KEY_CHARS} characters."
            )));
        }
        let ok = match v {
            Value::String(s) => s.chars().count() <= MAX_METADATA_VALUE_CHARS,
            Value::Number(_) | Value::Bool(_) => true,
            _ => false,
        };
        if !ok {
            return Err(invalid(format!(
                "`metadata.{k}` must be a string (at most {MAX_METADATA_VALUE_CHARS} characters), a number or a boolean."
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn file_names_lose_their_directories_and_control_characters() {
        assert_eq!(clean_filename("../../etc/passwd"), "passwd");
        assert_eq!(clean_filename("C:\\docs\\report.pdf"), "report.pdf");
        assert_eq!(clean_filename("a\u{0}b\nc.txt"), "abc.txt");
        assert_eq!(clean_filename(&"x".repeat(300)).len(), MAX_FILENAME_CHARS);
    }

    #[test]
    fn collections_and_metadata_are_checked() {
        assert!(check_collection("risk-2026.q1_a").is_ok());
        assert!(check_collection("").is_err());
        assert!(check_collection("a b").is_err());
        assert!(check_collection(&"a".repeat(65)).is_err());
        assert!(parse_metadata(r#"{"dept": "risk", "year": 2026, "public": false}"#).is_ok());
        assert!(parse_metadata("[1]").is_err());
        assert!(parse_metadata(r#"{"nested": {"a": 1}}"#).is_err());
        let many: Map<String, Value> = (0..17).map(|i| (format!("k{i}"), json!(i))).collect();
        assert!(parse_metadata(&Value::Object(many).to_string()).is_err());
    }
}

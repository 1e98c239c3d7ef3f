//! `/v1/vector_stores` — the subset of OpenAI's Vector Stores API that `file_search` users call,
//! over the document library: a vector store is a collection of the caller's team (its id is the
//! collection's name) and `search` is retrieval with the calibrated citation confidence as the
//! score. This file holds the stores themselves (create with files, list, get, delete) and
//! search; a store's files are [`files`] (attached through the ingestion queue, `in_progress`
//! until their job ends) and file batches [`batches`].

mod batches;
mod files;

pub use batches::{cancel_batch, create_batch, get_batch, list_batch_files};
pub use files::{attach, detach, get_file, list_files};

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::list_page::{Bounds, ListQuery};
use crate::pipeline::call::Call;
use crate::pipeline::library::{answer_usage, library};
use crate::rag::{Filters, Library, MAX_TOP_K, Query, RagError, check_metadata};
use crate::server::error::ApiError;
use crate::store::TeamId;
use crate::store::documents::VectorStoreRecord;

const MAX_NAME_CHARS: usize = 256;
const MAX_FILES_AT_CREATE: usize = 100;
const DEFAULT_SEARCH_RESULTS: usize = 10;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateStore {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    file_ids: Option<Vec<String>>,
    /// Accepted for compatibility; this gateway keeps stores until they are deleted.
    #[serde(default)]
    expires_after: Option<Value>,
    /// Accepted for compatibility; chunking follows `[documents]`.
    #[serde(default)]
    chunking_strategy: Option<Value>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Search {
    query: Value,
    #[serde(default)]
    max_num_results: Option<usize>,
    #[serde(default)]
    filters: Option<Value>,
    #[serde(default)]
    ranking_options: Option<RankingOptions>,
    #[serde(default)]
    rewrite_query: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RankingOptions {
    #[serde(default)]
    ranker: Option<String>,
    #[serde(default)]
    score_threshold: Option<f64>,
}

pub(super) fn bad_body(what: &str, e: serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("Invalid {what}: {e}."))
}

pub async fn create(mut call: Call, body: Body) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let map = call.read_body(body).await?;
    let request: CreateStore =
        serde_json::from_value(Value::Object(map)).map_err(|e| bad_body("vector store", e))?;
    let _ = (
        &request.expires_after,
        &request.chunking_strategy,
        &request.description,
    );
    let name = request.name.unwrap_or_default();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::invalid(
            "name",
            format!("`name` may have at most {MAX_NAME_CHARS} characters."),
        ));
    }
    let metadata = request.metadata.unwrap_or_default();
    check_metadata(&metadata)?;
    let file_ids = request.file_ids.unwrap_or_default();
    if file_ids.len() > MAX_FILES_AT_CREATE {
        return Err(ApiError::invalid(
            "file_ids",
            format!("At most {MAX_FILES_AT_CREATE} files when creating a vector store."),
        ));
    }
    // Every file must exist before the store does.
    for file_id in &file_ids {
        if library
            .file(TeamId(call.principal.team_id.clone()), file_id.clone())
            .await?
            .is_none()
        {
            return Err(
                ApiError::from(RagError::NoSuchFile(file_id.clone())).with_param("file_ids")
            );
        }
    }
    let record = library
        .create_vector_store(VectorStoreRecord {
            id: format!("vs_{}", uuid::Uuid::now_v7().simple()),
            team_id: TeamId(call.principal.team_id.clone()),
            name,
            metadata: Value::Object(metadata).to_string(),
            created_at: 0,
        })
        .await?;
    for file_id in file_ids {
        if let Err(refused) =
            files::attach_file(&mut call, &library, &record.id, &file_id, Map::new()).await
        {
            // All or nothing: a store the caller never got the id of is not left behind.
            remove(&call, &library, &record.id).await?;
            return Err(refused);
        }
    }
    let json = store_json(&call, &library, &record).await?;
    Ok(Json(json).into_response())
}

/// OpenAI's bounds for the lists of vector stores and of a store's files.
pub(super) const LIST: Bounds = Bounds {
    max: 100,
    default: 20,
    extra: &[],
};
pub(super) const LIST_FILES: Bounds = Bounds {
    extra: &["filter"],
    ..LIST
};

pub async fn list(call: Call, RawQuery(query): RawQuery) -> Result<Response, ApiError> {
    let list = ListQuery::parse(query.as_deref(), LIST)?;
    let library = library(&call)?;
    let stores = library
        .vector_stores(TeamId(call.principal.team_id.clone()))
        .await?;
    let (stores, has_more) = list.page(stores, |s| &s.id);
    let mut data = Vec::with_capacity(stores.len());
    for s in &stores {
        data.push(store_json(&call, &library, s).await?);
    }
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "first_id": stores.first().map(|s| s.id.clone()),
        "last_id": stores.last().map(|s| s.id.clone()),
        "has_more": has_more,
    }))
    .into_response())
}

pub async fn get(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    let record = vector_store(&call, &library, &id).await?;
    let json = store_json(&call, &library, &record).await?;
    Ok(Json(json).into_response())
}

pub async fn delete(call: Call, Path(id): Path<String>) -> Result<Response, ApiError> {
    let library = library(&call)?;
    vector_store(&call, &library, &id).await?;
    remove(&call, &library, &id).await?;
    Ok(Json(json!({"id": id, "object": "vector_store.deleted", "deleted": true})).into_response())
}

/// Deletes the team's store: its files' jobs (a running one stops at its next report), its
/// documents (out of retrieval first), the store.
async fn remove(call: &Call, library: &Library, id: &str) -> Result<(), ApiError> {
    let team = call.principal.team_id.clone();
    call.app
        .vector_store_jobs()
        .forget(TeamId(team.clone()), id.to_string(), None)
        .await?;
    library.forget_collection(&team, id);
    library
        .delete_vector_store(TeamId(team), id.to_string())
        .await?;
    Ok(())
}

pub async fn search(
    mut call: Call,
    Path(id): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    let library = library(&call)?;
    library.readiness().map_err(RagError::Unavailable)?;
    let map = call.read_body(body).await?;
    call.identify(&map, map.get("query"));
    let request: Search =
        serde_json::from_value(Value::Object(map)).map_err(|e| bad_body("search", e))?;
    let _ = request.rewrite_query;
    vector_store(&call, &library, &id).await?;
    // One query (a string, or an array of strings searched as one text).
    let text = match &request.query {
        Value::String(s) => s.clone(),
        Value::Array(parts) if !parts.is_empty() && parts.iter().all(Value::is_string) => parts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => {
            return Err(ApiError::invalid(
                "query",
                "`query` must be a string or an array of strings.",
            ));
        }
    };
    if text.trim().is_empty() || text.chars().count() > 8_000 {
        return Err(ApiError::invalid(
            "query",
            "`query` must be 1 to 8000 characters.",
        ));
    }
    let top_k = request.max_num_results.unwrap_or(DEFAULT_SEARCH_RESULTS);
    if !(1..=MAX_TOP_K).contains(&top_k) {
        return Err(ApiError::invalid(
            "max_num_results",
            format!("`max_num_results` must be from 1 to {MAX_TOP_K}."),
        ));
    }
    let threshold = match &request.ranking_options {
        Some(r) => {
            if r.ranker
                .as_deref()
                .is_some_and(|k| k != "auto" && k != "default-2024-11-15" && k != "none")
            {
                return Err(ApiError::invalid(
                    "ranking_options.ranker",
                    "Unknown ranker.",
                ));
            }
            r.score_threshold.unwrap_or(0.0)
        }
        None => 0.0,
    };
    if !(0.0..=1.0).contains(&threshold) {
        return Err(ApiError::invalid(
            "ranking_options.score_threshold",
            "`score_threshold` must be between 0 and 1.",
        ));
    }
    let metadata = match &request.filters {
        None | Some(Value::Null) => None,
        Some(f) => Some(openai_filters(f)?),
    };
    let mut texts = vec![text];
    crate::pipeline::guard::texts(&call, &mut texts).await?;
    let text = texts.pop().unwrap_or_default();
    let mut retrieved = library
        .search(Query {
            team_id: call.principal.team_id.clone(),
            text: text.clone(),
            collection: Some(id),
            // Ranked by the fused score, shown by confidence: a deeper list, re-sorted and cut.
            top_k: (2 * top_k).min(MAX_TOP_K),
            filters: Filters {
                document_ids: None,
                metadata,
            },
            min_confidence: threshold,
        })
        .await?;
    answer_usage(&call, library.model_id(), retrieved.query_tokens);
    // The retrieval policy after the ranking: what it filters is never returned.
    let reranked = crate::pipeline::library::review(&call, &text, &mut retrieved).await?;
    // File ids and attributes come with the citations (the library's catalogue): no store
    // round trip per result.
    let mut data: Vec<Value> = retrieved
        .citations
        .iter()
        .map(|c| {
            json!({
                "file_id": c.file_id.clone().unwrap_or_else(|| c.document_id.clone()),
                "filename": c.filename,
                "score": c.confidence,
                "attributes": c.metadata,
                "content": [{"type": "text", "text": c.text}],
            })
        })
        .collect();
    // Best first by the score shown (stable: equal scores keep the ranking's order), unless
    // the retrieval policy re-ranked them: its order stands.
    if !reranked {
        data.sort_by(|a, b| {
            let score = |v: &Value| v.get("score").and_then(Value::as_f64).unwrap_or(0.0);
            score(b).total_cmp(&score(a))
        });
    }
    data.truncate(top_k);
    Ok(Json(json!({
        "object": "vector_store.search_results.page",
        "search_query": [text],
        "data": data,
        "has_more": false,
        "next_page": null,
    }))
    .into_response())
}

/// OpenAI's attribute filters, as far as equality goes: `{"type": "eq", "key", "value"}` and
/// `{"type": "and", "filters": [...]}` of those. Others are refused, not silently ignored.
fn openai_filters(f: &Value) -> Result<Map<String, Value>, ApiError> {
    let unsupported = || {
        ApiError::invalid(
            "filters",
            "Only `eq` comparisons and `and` of them are supported in `filters`.",
        )
    };
    let mut out = Map::new();
    match f.get("type").and_then(Value::as_str) {
        Some("eq") => {
            let key = f
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(unsupported)?;
            let value = f.get("value").cloned().ok_or_else(unsupported)?;
            out.insert(key.to_string(), value);
        }
        Some("and") => {
            for inner in f
                .get("filters")
                .and_then(Value::as_array)
                .ok_or_else(unsupported)?
            {
                out.extend(openai_filters(inner)?);
            }
        }
        _ => return Err(unsupported()),
    }
    Ok(out)
}

pub(super) async fn vector_store(
    call: &Call,
    library: &Library,
    id: &str,
) -> Result<VectorStoreRecord, ApiError> {
    library
        .vector_store(TeamId(call.principal.team_id.clone()), id.to_string())
        .await?
        .ok_or_else(|| {
            let shown: String = id.chars().take(80).collect();
            ApiError::not_found(format!("No vector store `{shown}` in your team."))
        })
}

/// A store as OpenAI shows it: its files counted by state, `in_progress` while any is.
async fn store_json(
    call: &Call,
    library: &Library,
    s: &VectorStoreRecord,
) -> Result<Value, ApiError> {
    let states = files::states(call, library, &s.id).await?;
    let counts = files::counts(states.values());
    let bytes: u64 = states.values().map(files::FileState::bytes).sum();
    let metadata = serde_json::from_str::<Value>(&s.metadata).unwrap_or_else(|_| json!({}));
    Ok(json!({
        "id": s.id,
        "object": "vector_store",
        "created_at": s.created_at / 1000,
        "name": s.name,
        "usage_bytes": bytes,
        "file_counts": counts.json(),
        "status": if counts.in_progress > 0 { "in_progress" } else { "completed" },
        "metadata": metadata,
        "expires_after": null,
        "expires_at": null,
        "last_active_at": s.created_at / 1000,
    }))
}

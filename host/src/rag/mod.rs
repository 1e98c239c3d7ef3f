//! The document library and retrieval (issue 15; `docs/DOCUMENTS.md`): [`Library`] turns
//! uploads into stored, embedded chunks (`ingest`) and answers queries with citations and a
//! calibrated confidence (`query`), checks collection names and metadata (`checks`), keeps the
//! files and vector stores of the OpenAI surface (`files`) and records the embedding model's work
//! in usage (`usage`); `headers` makes a document's title and aliases the names all its chunks
//! are about (the entity rule). It knows no HTTP: `pipeline::library` runs the
//! request's phases (guardrail, journal, usage) around it for the endpoints.
//!
//! The engines are the workspace's own crates: `sovereign-documents` (detect, extract in a
//! child process, chunk) and `sovereign-retrieval` (multilingual e5 in process, the hybrid
//! vector + BM25 index, confidence). The store keeps documents, chunk text and vectors; the
//! index lives in memory and is rebuilt from the store at start.

mod checks;
mod embedder;
pub mod engine;
mod files;
mod headers;
mod ingest;
mod load;
mod query;
mod sync;
pub mod usage;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};
use sovereign_documents::{ChildConfig, ChunkConfig, ExtractError, Limits};
use sovereign_retrieval::confidence::Calibration;
use sovereign_retrieval::embed::EmbedJob;
use sovereign_retrieval::{EmbedError, Index};
use tokio::sync::Semaphore;

use crate::facts::TokenCounter;
use crate::store::StoreError;
use crate::store::documents::{DocumentRecord, DocumentStore};
use crate::upstream::UpstreamError;
use embedder::Embedder;

pub use checks::{check_collection, check_metadata};
pub use ingest::{Extracted, Ingested, Upload};
pub use query::{Citation, Filters, MAX_TOP_K, Query, Retrieved};

/// The id of the built-in embedding model, as clients name it (`/v1/embeddings`, records).
pub const BUILTIN_MODEL: &str = sovereign_retrieval::embed::MODEL_ID;

/// Why a document or query could not be served.
#[derive(Debug, thiserror::Error)]
pub enum RagError {
    /// The library cannot serve: the model is not installed, or documents are disabled.
    #[error("{0}")]
    Unavailable(String),
    /// The upload was refused by extraction (type, size, hostile or unreadable content).
    #[error("{0}")]
    Extract(#[from] ExtractError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The upstream embedding model failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// A blocking worker panicked or was cancelled.
    #[error("document worker failed: {0}")]
    Worker(String),
    /// A parameter the library refuses (a collection name, metadata): which, and why.
    #[error("{message}")]
    Invalid {
        param: &'static str,
        message: String,
    },
    /// No file with this id in the team's files.
    #[error("no file `{0}` in the team's files")]
    NoSuchFile(String),
}

/// What the library knows of a document without reading the store: enough to filter and cite.
#[derive(Debug)]
struct Entry {
    team_id: String,
    collection: String,
    filename: String,
    bytes: u64,
    file_id: Option<String>,
    metadata: Map<String, Value>,
}

/// The document library: one per gateway.
pub struct Library {
    store: Arc<dyn DocumentStore>,
    /// The embedding model, or why there is none (every call then answers 503 with it).
    embedder: Result<Arc<Embedder>, String>,
    /// What stored vectors are tagged with (`Embedder::key`).
    model_key: String,
    calibration: Option<&'static Calibration>,
    index: Arc<RwLock<Index>>,
    catalogue: Arc<RwLock<HashMap<String, Arc<Entry>>>>,
    extraction: ChildConfig,
    limits: Limits,
    chunking: ChunkConfig,
    tokens: Arc<TokenCounter>,
    /// Uploads extracted and embedded at once (`[documents] concurrent_ingests`).
    ingests: Arc<Semaphore>,
    /// `[documents] max_embedding_tokens`.
    max_embedding_tokens: u64,
    /// With replicas: where to announce documents added or deleted here (`sync.rs`).
    replicas: Option<(crate::shared::Shared, Arc<crate::metrics::Metrics>)>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("model_key", &self.model_key)
            .field("ready", &self.embedder.is_ok())
            .finish_non_exhaustive()
    }
}

impl Library {
    /// The embedding model, or 503 naming why it is missing.
    fn embedder(&self) -> Result<&Arc<Embedder>, RagError> {
        self.embedder
            .as_ref()
            .map_err(|why| RagError::Unavailable(why.clone()))
    }

    /// Whether uploads and queries can be served; if not, why.
    pub fn readiness(&self) -> Result<(), String> {
        self.embedder.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// Whether the built-in model is the one loaded (it then serves `/v1/embeddings` too).
    pub fn builtin_ready(&self) -> bool {
        matches!(self.embedder.as_deref(), Ok(Embedder::Builtin(_)))
    }

    /// Largest upload accepted, in bytes.
    pub fn max_upload_bytes(&self) -> u64 {
        self.limits.max_bytes
    }

    /// The embedding model's id (`multilingual-e5-small-q4`, or the upstream model's).
    pub fn model_id(&self) -> &str {
        self.embedder.as_ref().map_or(BUILTIN_MODEL, |e| e.id())
    }

    /// Dimensions of the model's vectors (0 when it is not loaded).
    pub fn dims(&self) -> usize {
        self.embedder.as_ref().map_or(0, |e| e.dims())
    }

    /// Live chunks in the index.
    pub fn chunk_count(&self) -> usize {
        read(&self.index).len()
    }

    /// The team's document `id`.
    pub async fn get(&self, team: &str, id: &str) -> Result<Option<DocumentRecord>, RagError> {
        Ok(self
            .store
            .document(crate::store::TeamId(team.to_string()), id.to_string())
            .await?)
    }

    /// Deletes the team's document: its chunks leave the index before the store, so no search
    /// cites them from this moment on. `false` when the team has no such document.
    pub async fn delete(&self, team: &str, id: &str) -> Result<bool, RagError> {
        let team_id = crate::store::TeamId(team.to_string());
        if self
            .store
            .document(team_id.clone(), id.to_string())
            .await?
            .is_none()
        {
            return Ok(false);
        }
        write(&self.index).delete_document(id);
        write(&self.catalogue).remove(id);
        let deleted = self.store.delete_document(team_id, id.to_string()).await?;
        self.announce(team, id).await;
        Ok(deleted)
    }

    /// With replicas on one store: every document added or deleted here is announced to the
    /// others (through `[shared]`; a no-op without Redis), and the index is reconciled with the
    /// store each minute.
    pub fn with_replicas(
        mut self,
        replicated: bool,
        shared: &crate::shared::Shared,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Library {
        if replicated {
            self.replicas = Some((shared.clone(), metrics));
        }
        self
    }

    /// Documents and their bytes in the team's collection.
    pub fn collection_stats(&self, team: &str, collection: &str) -> (u64, u64) {
        let catalogue = read(&self.catalogue);
        catalogue
            .values()
            .filter(|e| e.team_id == team && e.collection == collection)
            .fold((0, 0), |(n, b), e| (n + 1, b + e.bytes))
    }

    /// The documents of the team made from the file `file_id` (attached to vector stores), in
    /// `collection` only when given: how the vector-store API finds a store's files.
    pub fn documents_of_file(
        &self,
        team: &str,
        collection: Option<&str>,
        file_id: &str,
    ) -> Vec<String> {
        let catalogue = read(&self.catalogue);
        catalogue
            .iter()
            .filter(|(_, e)| {
                e.team_id == team
                    && collection.is_none_or(|c| e.collection == c)
                    && e.file_id.as_deref() == Some(file_id)
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Takes every document of the team's collection out of retrieval (a vector store being
    /// deleted; the store deletes the rows).
    pub fn forget_collection(&self, team: &str, collection: &str) {
        let mut catalogue = write(&self.catalogue);
        let ids: Vec<String> = catalogue
            .iter()
            .filter(|(_, e)| e.team_id == team && e.collection == collection)
            .map(|(id, _)| id.clone())
            .collect();
        let mut index = write(&self.index);
        for id in ids {
            index.delete_document(&id);
            catalogue.remove(&id);
        }
    }

    /// A page of the team's documents, newest first; `true` when more follow.
    pub async fn list(
        &self,
        team: &str,
        collection: Option<String>,
        after: Option<String>,
        limit: u32,
    ) -> Result<(Vec<DocumentRecord>, bool), RagError> {
        let mut page = self
            .store
            .documents(crate::store::documents::DocumentFilter {
                team_id: crate::store::TeamId(team.to_string()),
                collection,
                after,
                limit: limit + 1,
            })
            .await?;
        let more = page.len() > limit as usize;
        page.truncate(limit as usize);
        Ok((page, more))
    }

    /// `texts` tokenized as queries for the built-in model, not run yet: what `/v1/embeddings`
    /// serves for it, so the caller can weigh the job ([`EmbedJob::tokens`]) before running it.
    pub async fn prepare_builtin(&self, texts: Vec<String>) -> Result<EmbedJob, RagError> {
        self.builtin_engine()?.prepare(texts, true).await
    }

    /// Runs a job from [`Library::prepare_builtin`] for `team` as interactive work. Dropping the
    /// future cancels the job's remaining windows.
    pub async fn run_builtin(&self, job: EmbedJob, team: &str) -> Result<Vec<Vec<f32>>, RagError> {
        self.builtin_engine()?
            .run(job, team, engine::Class::Interactive)
            .await
    }

    fn builtin_engine(&self) -> Result<&engine::Engine, RagError> {
        match self.embedder()?.as_ref() {
            Embedder::Builtin(e) => Ok(e),
            Embedder::Upstream(u) => Err(RagError::Unavailable(format!(
                "the built-in model is not loaded: documents embed with `{}` ([documents] embedding_model)",
                u.model.id
            ))),
        }
    }

    /// Most tokens one `/v1/embeddings` request may ask of the built-in model
    /// (`[documents] max_embedding_tokens`).
    pub fn max_embedding_tokens(&self) -> u64 {
        self.max_embedding_tokens
    }
}

/// The lock's contents; a panic while it was held left them consistent (every change is one
/// call that either finished or did nothing), so poisoning is ignored.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs CPU-bound or blocking work (extraction, embedding, index search) on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RagError> + Send + 'static,
) -> Result<T, RagError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| RagError::Worker(e.to_string()))?
}

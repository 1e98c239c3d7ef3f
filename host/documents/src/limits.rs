//! `Limits`: how much of a hostile file extraction is willing to read, inflate, parse and keep.

use serde::{Deserialize, Serialize};

use crate::ExtractError;

/// Budgets for one extraction. The defaults suit a gateway taking documents of a few hundred
/// pages; every one is checked before or while the work it bounds is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest upload, in bytes (default 50 MiB).
    pub max_bytes: u64,
    /// Most PDF pages (default 2,000).
    pub max_pages: u32,
    /// Most bytes inflated from a DOCX archive, all entries read together (default 256 MiB).
    pub max_inflated_bytes: u64,
    /// Highest inflated / compressed ratio of a DOCX entry (default 100; real documents stay
    /// near 10, zip bombs go past 1,000).
    pub max_ratio: u64,
    /// Most entries in a DOCX archive (default 10,000).
    pub max_entries: u64,
    /// Deepest XML element nesting (default 256; real DOCX stays under 30).
    pub max_xml_depth: u32,
    /// Most characters of extracted text (default 10 million, ~4,000 dense pages).
    pub max_text_chars: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 50 << 20,
            max_pages: 2_000,
            max_inflated_bytes: 256 << 20,
            max_ratio: 100,
            max_entries: 10_000,
            max_xml_depth: 256,
            max_text_chars: 10_000_000,
        }
    }
}

impl Limits {
    pub(crate) fn check_size(&self, len: usize) -> Result<(), ExtractError> {
        let bytes = len as u64;
        if bytes > self.max_bytes {
            return Err(ExtractError::TooLarge {
                bytes,
                limit: self.max_bytes,
            });
        }
        Ok(())
    }

    pub(crate) fn check_text(&self, chars: u64) -> Result<(), ExtractError> {
        if chars > self.max_text_chars {
            return Err(ExtractError::TextTooLong {
                limit: self.max_text_chars,
            });
        }
        Ok(())
    }
}

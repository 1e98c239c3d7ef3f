//! The extracted document: its kind, page count and text blocks with their provenance.

use serde::{Deserialize, Serialize};

/// The real type of a document, as found in its bytes by [`crate::detect`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Pdf,
    Docx,
    Text,
    Markdown,
}

impl Kind {
    /// The short name used in messages and in the child protocol (`"pdf"`, `"docx"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Pdf => "pdf",
            Kind::Docx => "docx",
            Kind::Text => "text",
            Kind::Markdown => "markdown",
        }
    }

    /// The IANA media type of this kind.
    pub fn media_type(self) -> &'static str {
        match self {
            Kind::Pdf => "application/pdf",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Text => "text/plain",
            Kind::Markdown => "text/markdown",
        }
    }
}

/// What a block of text is in its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Role {
    /// Ordinary text: a paragraph, or a whole PDF page.
    Body,
    /// A heading or title; level 1 is the highest.
    Heading { level: u8 },
    /// One item of a bulleted or numbered list (its text starts with `• `).
    ListItem,
    /// One table row, its cells separated by ` | `.
    TableRow,
}

/// One unit of extracted text and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// 1-based page number (PDF only).
    pub page: Option<u32>,
    /// 1-based position of the block in the document (DOCX paragraph, text paragraph, PDF page).
    pub paragraph: u32,
    pub role: Role,
    /// Right-to-left paragraph: `w:bidi` in DOCX; mostly Arabic-script letters elsewhere.
    pub rtl: bool,
    /// The text, normalised ([`crate::normalize`]): logical order, NFKC, no bidi controls.
    pub text: String,
}

/// An extracted document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub kind: Kind,
    /// Number of pages (PDF only).
    pub pages: Option<u32>,
    /// Non-empty blocks in reading order.
    pub blocks: Vec<Block>,
}

impl Document {
    /// Total characters (Unicode scalar values) of all blocks.
    pub fn char_count(&self) -> usize {
        self.blocks.iter().map(|b| b.text.chars().count()).sum()
    }
}

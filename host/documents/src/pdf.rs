//! PDF text per page through pdfium (`pdfium-render`), bound once per process at run time to the
//! `libpdfium.so` that `scripts/setup-models` unpacks from PyPI's pypdfium2 wheel.
//!
//! pdfium returns Arabic in logical order, with two faults this module repairs (found on the
//! fixtures in `tests/fixtures`, made by HarfBuzz through fpdf2 and by LibreOffice):
//! - a lam-alef ligature glyph comes out as alef + lam (`االحتفاظ` for `الاحتفاظ`): pdfium emits
//!   the glyph's ToUnicode string reversed in right-to-left runs. The characters of one glyph
//!   share one box, so runs of Arabic letters with identical boxes are put back in order.
//! - a right-to-left line ending in a number then a full stop comes out as `… .2026`; the
//!   punctuation is moved back after the number.
//!
//! `normalize` then folds presentation forms (NFKC) and drops bidi controls. pdfium is C code:
//! run this in the extraction child ([`crate::extract_in_child`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pdfium_render::prelude::{PdfPageText, Pdfium};
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
    let bound = PDFIUM.get_or_init(|| match Pdfium::bind_to_library(path) {
        Ok(bindings) => Ok(Pdfium::new(bindings)),
        // Another part of this process bound pdfium first (the benchmark does): share it.
        Err(PdfiumError::PdfiumLibraryBindingsAlreadyInitialized) => Ok(Pdfium::default()),
        Err(e) => Err(format!("{} could not be loaded ({e:?})", path.display())),
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
        let raw = text.all();
        let raw = if has_suspect_ligature(&raw) {
            text_from_chars(&text).unwrap_or(raw)
        } else {
            raw
        };
        let text = fix_rtl_trailing_punctuation(&normalize(&raw));
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

/// An alef (plain, hamza above/below, madda) followed by lam: how a reversed lam-alef looks.
/// Also the definite article, so this only selects pages for the exact check.
fn has_suspect_ligature(text: &str) -> bool {
    let mut prev = None;
    for c in text.chars() {
        if c == '\u{0644}'
            && matches!(
                prev,
                Some('\u{0627}' | '\u{0623}' | '\u{0625}' | '\u{0622}')
            )
        {
            return true;
        }
        prev = Some(c);
    }
    false
}

fn is_alef(c: char) -> bool {
    matches!(c, '\u{0627}' | '\u{0623}' | '\u{0625}' | '\u{0622}')
}

/// The page text rebuilt from its characters, with each alef + lam pair that shares one box
/// (the two characters of one lam-alef glyph, reversed by pdfium) put back as lam + alef. Only
/// those pairs' boxes are asked for: a box per character would cost more than the text itself.
fn text_from_chars(text: &PdfPageText<'_>) -> Option<String> {
    let chars = text.chars();
    let mut out: Vec<(char, usize)> = chars
        .iter()
        .filter_map(|c| Some((c.unicode_char()?, c.index())))
        .collect();
    if out.is_empty() {
        return None;
    }
    let bounds = |index: usize| {
        chars
            .get(index)
            .ok()
            .and_then(|c| c.tight_bounds().ok())
            .map(|r| {
                [
                    r.left().value,
                    r.bottom().value,
                    r.right().value,
                    r.top().value,
                ]
            })
    };
    let mut i = 0;
    while i + 1 < out.len() {
        if is_alef(out[i].0) && out[i + 1].0 == '\u{0644}' {
            let first = bounds(out[i].1);
            if first.is_some() && first == bounds(out[i + 1].1) {
                out.swap(i, i + 1);
                i += 1;
            }
        }
        i += 1;
    }
    Some(out.into_iter().map(|(c, _)| c).collect())
}

/// In a right-to-left line, a word of punctuation then digits (`.2026`, `.1`, `،42`) is a number
/// followed by its punctuation that pdfium put in front (a list number at the line start, a
/// year before a full stop); put the punctuation back after the number.
fn fix_rtl_trailing_punctuation(text: &str) -> String {
    let is_punct = |c: char| matches!(c, '.' | ',' | ':' | ';' | '!' | '?' | '،' | '؛' | '؟');
    let mut out = String::with_capacity(text.len());
    // A line without letters (a number wrapped onto its own line) takes the previous direction.
    let mut rtl = false;
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        if line.chars().any(char::is_alphabetic) {
            rtl = mostly_rtl(line);
        }
        if !rtl {
            out.push_str(line);
            continue;
        }
        for (w, word) in line.split(' ').enumerate() {
            if w > 0 {
                out.push(' ');
            }
            let digits = word.trim_start_matches(is_punct);
            let punct = &word[..word.len() - digits.len()];
            if !punct.is_empty()
                && digits.chars().next().is_some_and(char::is_numeric)
                && digits
                    .chars()
                    .all(|c| c.is_numeric() || matches!(c, '.' | ',' | '٫' | '٬'))
            {
                out.push_str(digits);
                out.push_str(punct);
            } else {
                out.push_str(word);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_punctuation_goes_back_after_the_number_in_rtl_lines_only() {
        assert_eq!(
            fix_rtl_trailing_punctuation(
                ".1 والإعلان رقم 42 للعام .2026 يجب\nversion .2026\nالمبلغ 3.5 للعام\n.2026"
            ),
            "1. والإعلان رقم 42 للعام 2026. يجب\nversion .2026\nالمبلغ 3.5 للعام\n2026."
        );
    }

    #[test]
    fn suspect_ligature_pages() {
        assert!(has_suspect_ligature("االحتفاظ"));
        assert!(!has_suspect_ligature("لا سلام"));
    }
}

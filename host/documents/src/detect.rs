//! `detect`: the real type of uploaded bytes, from their content, checked against the name and
//! content type the uploader claimed.

use std::io::Cursor;

use crate::{ExtractError, Kind, Limits};

/// What the bytes are, when they are something this crate cannot read (for a useful message).
fn foreign_magic(bytes: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF87a", "a GIF image"),
        (b"GIF89a", "a GIF image"),
        (b"II*\x00", "a TIFF image"),
        (b"MM\x00*", "a TIFF image"),
        (
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
            "a legacy Office file (.doc/.xls); save it as DOCX",
        ),
        (b"{\\rtf", "an RTF document; save it as DOCX"),
        (b"\x1f\x8b", "a gzip archive"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
        (b"Rar!", "a RAR archive"),
        (b"\x7fELF", "an executable"),
        (b"MZ", "an executable"),
    ];
    MAGIC
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map(|(_, name)| *name)
}

/// The kind a file name's extension claims; `Err` names an extension of a type we do not read.
fn kind_from_name(name: &str) -> Option<Result<Kind, String>> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "pdf" => Ok(Kind::Pdf),
        "docx" => Ok(Kind::Docx),
        "txt" | "text" => Ok(Kind::Text),
        "md" | "markdown" => Ok(Kind::Markdown),
        other => Err(format!(".{other}")),
    })
}

/// The kind a media type claims; `None` for no claim (`application/octet-stream`, absent).
fn kind_from_media_type(content_type: &str) -> Option<Result<Kind, String>> {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    Some(match essence.as_str() {
        "" | "application/octet-stream" | "binary/octet-stream" => return None,
        "application/pdf" | "application/x-pdf" => Ok(Kind::Pdf),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => Ok(Kind::Docx),
        "text/plain" => Ok(Kind::Text),
        "text/markdown" | "text/x-markdown" => Ok(Kind::Markdown),
        other => Err(other.to_owned()),
    })
}

/// Text and Markdown are the same bytes; everything else must match exactly.
fn compatible(claimed: Kind, actual: Kind) -> bool {
    claimed == actual
        || matches!(
            (claimed, actual),
            (Kind::Text | Kind::Markdown, Kind::Text | Kind::Markdown)
        )
}

/// Sniffs the kind from the bytes alone.
fn sniff(bytes: &[u8], limits: &Limits) -> Result<Kind, ExtractError> {
    // PDF readers accept the header anywhere in the first KiB.
    let head = &bytes[..bytes.len().min(1024)];
    if head.windows(5).any(|w| w == b"%PDF-") {
        return Ok(Kind::Pdf);
    }
    if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        crate::docx::precheck_entries(bytes, limits)?;
        let archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
            ExtractError::malformed(format!("the zip container cannot be read ({e})"))
        })?;
        if archive.len() as u64 > limits.max_entries {
            return Err(ExtractError::ZipBomb {
                reason: format!(
                    "{} entries, over the limit of {}",
                    archive.len(),
                    limits.max_entries
                ),
            });
        }
        if archive.index_for_name("word/document.xml").is_some() {
            return Ok(Kind::Docx);
        }
        let what = if archive.index_for_name("xl/workbook.xml").is_some() {
            "an Excel workbook (.xlsx)"
        } else if archive.index_for_name("ppt/presentation.xml").is_some() {
            "a PowerPoint presentation (.pptx)"
        } else if archive.index_for_name("content.xml").is_some() {
            "an OpenDocument file; save it as DOCX"
        } else {
            "a zip archive that is not a Word document"
        };
        return Err(ExtractError::Unsupported {
            detail: what.to_owned(),
        });
    }
    if let Some(what) = foreign_magic(bytes) {
        return Err(ExtractError::Unsupported {
            detail: what.to_owned(),
        });
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    match std::str::from_utf8(body) {
        Ok(text) if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) => Ok(Kind::Text),
        Ok(_) => Err(ExtractError::Unsupported {
            detail: "binary data (control characters in text)".to_owned(),
        }),
        Err(_) => Err(ExtractError::Unsupported {
            detail: "binary data or text not encoded in UTF-8".to_owned(),
        }),
    }
}

/// Finds the real kind of `bytes`: PDF by its `%PDF-` header, DOCX as a zip holding
/// `word/document.xml`, text as UTF-8 without control characters (Markdown when the name or
/// content type says so). The claimed `filename` extension and `content_type`, when given, must
/// agree with the bytes — a PDF renamed `.docx` is a [`ExtractError::Mismatch`].
pub fn detect(
    bytes: &[u8],
    filename: Option<&str>,
    content_type: Option<&str>,
    limits: &Limits,
) -> Result<Kind, ExtractError> {
    if bytes.is_empty() {
        return Err(ExtractError::Empty);
    }
    limits.check_size(bytes.len())?;
    let actual = sniff(bytes, limits)?;
    let claims = [
        ("file name", filename.and_then(kind_from_name)),
        ("content type", content_type.and_then(kind_from_media_type)),
    ];
    let mut markdown = false;
    for (claimed_by, claim) in claims {
        match claim {
            None => {}
            Some(Ok(claimed)) if compatible(claimed, actual) => {
                markdown |= claimed == Kind::Markdown;
            }
            Some(Ok(claimed)) => {
                return Err(ExtractError::Mismatch {
                    claimed_by: claimed_by.to_owned(),
                    claimed: claimed.as_str().to_owned(),
                    actual: actual.as_str().to_owned(),
                });
            }
            Some(Err(other)) => {
                return Err(ExtractError::Mismatch {
                    claimed_by: claimed_by.to_owned(),
                    claimed: other,
                    actual: actual.as_str().to_owned(),
                });
            }
        }
    }
    Ok(match actual {
        Kind::Text if markdown => Kind::Markdown,
        kind => kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::default()
    }

    #[test]
    fn sniffs_pdf_and_text_and_refuses_empty() {
        let l = limits();
        assert_eq!(detect(b"%PDF-1.7\n", None, None, &l), Ok(Kind::Pdf));
        assert_eq!(
            detect("مرحبا".as_bytes(), Some("a.txt"), None, &l),
            Ok(Kind::Text)
        );
        assert_eq!(detect(b"# T", Some("a.md"), None, &l), Ok(Kind::Markdown));
        assert_eq!(
            detect(b"# T", None, Some("text/markdown; charset=utf-8"), &l),
            Ok(Kind::Markdown)
        );
        assert_eq!(
            detect(b"", Some("a.pdf"), None, &l),
            Err(ExtractError::Empty)
        );
    }

    #[test]
    fn a_pdf_renamed_docx_is_a_mismatch() {
        let err = detect(b"%PDF-1.4 ...", Some("report.docx"), None, &limits());
        assert!(matches!(err, Err(ExtractError::Mismatch { .. })), "{err:?}");
        let err = detect(b"hello", None, Some("application/pdf"), &limits());
        assert!(matches!(err, Err(ExtractError::Mismatch { .. })), "{err:?}");
        let err = detect(b"hello", Some("photo.png"), None, &limits());
        assert!(matches!(err, Err(ExtractError::Mismatch { .. })), "{err:?}");
    }

    #[test]
    fn foreign_and_binary_types_are_unsupported() {
        for bytes in [
            &b"\x89PNG\r\n\x1a\nxxxx"[..],
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
            b"\xff\xfe\x00\x01",
        ] {
            let err = detect(bytes, None, None, &limits());
            assert!(
                matches!(err, Err(ExtractError::Unsupported { .. })),
                "{err:?}"
            );
            assert_eq!(err.map_err(|e| e.status_hint()), Err(415));
        }
    }

    #[test]
    fn too_large_is_413() {
        let l = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        let err = detect(b"hello", None, None, &l);
        assert_eq!(err.map_err(|e| e.status_hint()), Err(413));
    }
}

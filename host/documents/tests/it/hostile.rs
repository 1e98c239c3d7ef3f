//! Hostile files: each refused with its own error, an actionable message and the right status,
//! within seconds and with memory bounded (the child runs under a 1 GiB address-space cap).

use std::path::PathBuf;
use std::time::Duration;

use sovereign_documents::{
    ChildConfig, ErrorKind, ExtractError, Kind, Limits, detect, extract, extract_in_child,
};

use crate::docx::{W, docx, zip_of};
use crate::{child, default_limits, err_kind, fixture, pdfium, within};

fn both(
    bytes: &[u8],
    kind: Kind,
    limits: &Limits,
) -> [Result<sovereign_documents::Document, ExtractError>; 2] {
    let here = within(5, || extract(bytes, kind, limits, Some(&pdfium())));
    let there = within(10, || extract_in_child(&child(), bytes, kind, limits));
    [here, there]
}

#[test]
fn zip_bomb_by_ratio_is_413() {
    // 64 MiB of spaces inside the body: deflates ~1000:1.
    let xml = format!(
        "<w:document {W}><w:body>{}</w:body></w:document>",
        " ".repeat(64 << 20)
    );
    let bytes = zip_of(&[("word/document.xml", xml.as_bytes(), true)]);
    assert!(bytes.len() < 1 << 20, "{}", bytes.len());
    assert_eq!(
        detect(&bytes, Some("bomb.docx"), None, &default_limits()),
        Ok(Kind::Docx)
    );
    for result in both(&bytes, Kind::Docx, &default_limits()) {
        let Err(e @ ExtractError::ZipBomb { .. }) = &result else {
            panic!("{}", err_kind(&result))
        };
        assert_eq!(e.status_hint(), 413);
        assert!(e.to_string().contains("100:1"), "{e}");
    }
}

#[test]
fn zip_bomb_by_declared_total_and_by_entry_count() {
    let limits = Limits {
        max_inflated_bytes: 1 << 20,
        ..Limits::default()
    };
    let big = vec![b'a'; 2 << 20];
    let bytes = zip_of(&[
        ("word/document.xml", b"<w:document/>", true),
        ("word/media/big.bin", &big, true),
    ]);
    let result = extract(&bytes, Kind::Docx, &limits, None);
    assert!(
        matches!(&result, Err(ExtractError::ZipBomb { reason }) if reason.contains("declare")),
        "{}",
        err_kind(&result)
    );

    let names: Vec<String> = (0..10_001).map(|i| format!("e/{i}")).collect();
    let mut entries: Vec<(&str, &[u8], bool)> = names
        .iter()
        .map(|n| (n.as_str(), &b""[..], false))
        .collect();
    entries.push(("word/document.xml", b"<w:document/>", false));
    let bytes = zip_of(&entries);
    let result = within(5, || {
        detect(&bytes, Some("many.docx"), None, &default_limits())
    });
    assert!(
        matches!(&result, Err(ExtractError::ZipBomb { reason }) if reason.contains("entries")),
        "{result:?}"
    );
}

#[test]
fn ten_thousand_deep_xml_is_refused() {
    let xml = format!(
        "<w:document {W}><w:body>{}{}</w:body></w:document>",
        "<w:p>".repeat(10_000),
        "</w:p>".repeat(10_000)
    );
    let bytes = zip_of(&[("word/document.xml", xml.as_bytes(), false)]);
    for result in both(&bytes, Kind::Docx, &default_limits()) {
        assert!(
            matches!(result, Err(ExtractError::XmlTooDeep { limit: 256 })),
            "{}",
            err_kind(&result)
        );
    }
}

#[test]
fn huge_docx_text_is_refused() {
    let limits = Limits {
        max_text_chars: 1000,
        ..Limits::default()
    };
    let bytes = docx(&format!(
        "<w:p><w:r><w:t>{}</w:t></w:r></w:p>",
        "a".repeat(5000)
    ));
    let result = extract(&bytes, Kind::Docx, &limits, None);
    assert!(
        matches!(result, Err(ExtractError::TextTooLong { limit: 1000 })),
        "{}",
        err_kind(&result)
    );
}

#[test]
fn encrypted_pdf_is_422() {
    for result in both(&fixture("encrypted.pdf"), Kind::Pdf, &default_limits()) {
        let Err(e) = &result else {
            panic!("{}", err_kind(&result))
        };
        assert_eq!(e, &ExtractError::Encrypted);
        assert_eq!(e.kind(), ErrorKind::Unprocessable);
    }
}

#[test]
fn truncated_pdf_is_refused_or_recovered_never_garbage() {
    let bytes = fixture("en_fpdf.pdf");
    for cut in [bytes.len() / 2, 200, 20] {
        for result in both(&bytes[..cut], Kind::Pdf, &default_limits()) {
            match &result {
                Err(e) => assert!(
                    matches!(e.kind(), ErrorKind::Malformed | ErrorKind::Unprocessable),
                    "{e:?}"
                ),
                // pdfium rebuilds a damaged cross-reference table; what it keeps must be real.
                Ok(doc) => assert!(
                    doc.blocks
                        .iter()
                        .all(|b| b.text.contains("Records") || b.text.contains("Article")),
                    "{doc:?}"
                ),
            }
        }
    }
    let result = extract(&bytes[..20], Kind::Pdf, &default_limits(), Some(&pdfium()));
    assert!(
        matches!(result, Err(ExtractError::Malformed { .. })),
        "{}",
        err_kind(&result)
    );
}

#[test]
fn scanned_pdf_has_no_text_layer() {
    for result in both(&fixture("scanned.pdf"), Kind::Pdf, &default_limits()) {
        assert_eq!(result, Err(ExtractError::NoTextLayer { pages: 2 }));
    }
}

#[test]
fn too_many_pages_is_413() {
    let limits = Limits {
        max_pages: 1,
        ..Limits::default()
    };
    for result in both(&fixture("en_fpdf.pdf"), Kind::Pdf, &limits) {
        let Err(e) = &result else {
            panic!("{}", err_kind(&result))
        };
        assert_eq!(e, &ExtractError::TooManyPages { pages: 2, limit: 1 });
        assert_eq!(e.status_hint(), 413);
    }
}

#[test]
fn mismatched_and_empty_files() {
    let pdf = fixture("en_fpdf.pdf");
    let err = detect(&pdf, Some("report.docx"), None, &default_limits()).unwrap_err();
    assert!(matches!(&err, ExtractError::Mismatch { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the file's content does not match its file name: it says docx but the bytes are pdf"
    );
    assert_eq!(err.status_hint(), 415);
    let docx = docx("<w:p/>");
    let err = detect(
        &docx,
        Some("scan.pdf"),
        Some("application/pdf"),
        &default_limits(),
    )
    .unwrap_err();
    assert!(matches!(err, ExtractError::Mismatch { .. }), "{err:?}");
    for empty in [
        detect(b"", Some("a.pdf"), None, &default_limits()).map(|_| ()),
        extract(b"", Kind::Pdf, &default_limits(), None).map(|_| ()),
    ] {
        let err = empty.unwrap_err();
        assert_eq!(err, ExtractError::Empty);
        assert_eq!(err.status_hint(), 400);
    }
    let err = extract_in_child(&child(), b"", Kind::Pdf, &default_limits()).unwrap_err();
    assert_eq!(err, ExtractError::Empty);
}

#[test]
fn too_large_upload_is_413_before_any_parsing() {
    let limits = Limits {
        max_bytes: 1000,
        ..Limits::default()
    };
    let pdf = fixture("en_fpdf.pdf");
    assert!(matches!(
        detect(&pdf, None, None, &limits),
        Err(ExtractError::TooLarge { .. })
    ));
    assert!(matches!(
        extract_in_child(&child(), &pdf, Kind::Pdf, &limits),
        Err(ExtractError::TooLarge { .. })
    ));
}

#[test]
fn a_child_past_its_deadline_is_killed() {
    let config = ChildConfig {
        exe: PathBuf::from("/bin/sleep"),
        args: vec!["30".into()],
        timeout: Duration::from_millis(300),
        ..child()
    };
    let result = within(3, || {
        extract_in_child(&config, b"%PDF-", Kind::Pdf, &default_limits())
    });
    let Err(e) = &result else {
        panic!("{}", err_kind(&result))
    };
    assert!(matches!(e, ExtractError::Timeout { .. }), "{e:?}");
    assert_eq!(e.status_hint(), 422);
}

#[test]
fn a_child_over_its_memory_cap_is_stopped_and_reported() {
    // Limits opened wide so only the child's 28 MiB address-space cap stands in the way of a
    // document that inflates to 48 MiB of text (copied several times while normalising).
    let limits = Limits {
        max_ratio: u64::MAX,
        max_text_chars: u64::MAX,
        ..Limits::default()
    };
    let bytes = docx(&format!(
        "<w:p><w:r><w:t>{}</w:t></w:r></w:p>",
        "a".repeat(8 << 20)
    ));
    let config = ChildConfig {
        memory_bytes: 28 << 20,
        ..child()
    };
    let result = within(10, || {
        extract_in_child(&config, &bytes, Kind::Docx, &limits)
    });
    assert_eq!(
        result,
        Err(ExtractError::ResourcesExhausted),
        "{}",
        err_kind(&result)
    );
    // The same document under a roomier cap is read: the cap, not the file, stopped it.
    // (Debug builds on a loaded 2-core machine are slow: a generous deadline for this half.)
    let roomy = ChildConfig {
        memory_bytes: 2 << 30,
        timeout: Duration::from_secs(60),
        ..child()
    };
    let doc = within(60, || extract_in_child(&roomy, &bytes, Kind::Docx, &limits)).unwrap();
    assert_eq!(doc.char_count(), 8 << 20);
}

#[test]
fn missing_pdfium_is_a_clear_server_error() {
    let config = ChildConfig {
        pdfium: Some(PathBuf::from("/nonexistent/libpdfium.so")),
        ..child()
    };
    let err = extract_in_child(
        &config,
        &fixture("en_fpdf.pdf"),
        Kind::Pdf,
        &default_limits(),
    )
    .unwrap_err();
    assert!(matches!(err, ExtractError::PdfiumMissing { .. }), "{err:?}");
    assert_eq!(err.status_hint(), 503);
    assert!(err.to_string().contains("scripts/setup-models"), "{err}");
}

#[test]
fn truncated_docx_is_400() {
    let bytes = fixture("ar_libreoffice.docx");
    for cut in [bytes.len() - 10, bytes.len() / 2, 30] {
        let result = within(5, || {
            extract(&bytes[..cut], Kind::Docx, &default_limits(), None)
        });
        let Err(e) = &result else {
            panic!("{}", err_kind(&result))
        };
        assert!(matches!(e, ExtractError::Malformed { .. }), "{e:?}");
        assert_eq!(e.status_hint(), 400);
    }
}

#[test]
fn documents_without_text_are_422() {
    for (bytes, kind) in [
        (
            docx("<w:p/><w:p><w:r><w:t>  </w:t></w:r></w:p>"),
            Kind::Docx,
        ),
        (b" \n\n\t\n".to_vec(), Kind::Text),
    ] {
        let result = extract(&bytes, kind, &default_limits(), None);
        assert_eq!(result, Err(ExtractError::NoText));
        assert_eq!(ExtractError::NoText.status_hint(), 422);
    }
}

//! PDF extraction on fixtures from real shaping engines (fpdf2 + HarfBuzz, LibreOffice): Arabic
//! in logical order with lam-alef resolved, pages 1-based, in process and in the child.

use sovereign_documents::{Kind, Role, detect, extract, extract_in_child};

use crate::{child, default_limits, expected_pages, fixture, page_texts, pdfium};

#[test]
fn arabic_harfbuzz_pdf_is_logical_order_with_lam_alef_resolved() {
    let bytes = fixture("ar_harfbuzz.pdf");
    assert_eq!(
        detect(
            &bytes,
            Some("policy.pdf"),
            Some("application/pdf"),
            &default_limits()
        ),
        Ok(Kind::Pdf)
    );
    let doc = extract(&bytes, Kind::Pdf, &default_limits(), Some(&pdfium())).unwrap();
    assert_eq!(doc.pages, Some(2));
    assert_eq!(page_texts(&doc), expected_pages("ar_harfbuzz.pdf"));
    assert_eq!(
        doc.blocks.iter().map(|b| b.page).collect::<Vec<_>>(),
        vec![Some(1), Some(2)]
    );
    assert!(doc.blocks.iter().all(|b| b.rtl && b.role == Role::Body));
    // The words whose lam-alef pdfium reverses, spelled out.
    let all = page_texts(&doc).join("\n");
    for word in ["الاحتفاظ", "بسجلات", "لا يجوز", "الإفصاح", "السلام", "2026."]
    {
        assert!(all.contains(word), "{word} missing in {all}");
    }
}

#[test]
fn english_pdf_pages() {
    let doc = extract(
        &fixture("en_fpdf.pdf"),
        Kind::Pdf,
        &default_limits(),
        Some(&pdfium()),
    )
    .unwrap();
    assert_eq!(page_texts(&doc), expected_pages("en_fpdf.pdf"));
    assert!(doc.blocks.iter().all(|b| !b.rtl));
}

#[test]
fn libreoffice_arabic_pdf() {
    let doc = extract(
        &fixture("ar_libreoffice.pdf"),
        Kind::Pdf,
        &default_limits(),
        Some(&pdfium()),
    )
    .unwrap();
    assert_eq!(doc.pages, Some(1));
    let text = &doc.blocks[0].text;
    // Every Arabic line exactly; LibreOffice's bullets come out as "•" glued to the item.
    let expected = expected_pages("ar_libreoffice.pdf");
    for line in expected[0]
        .lines()
        .filter(|l| l.chars().any(|c| ('\u{0600}'..='\u{06FF}').contains(&c)))
    {
        assert!(text.contains(line), "{line:?} missing in {text:?}");
    }
    // Known limit: an English sentence inside a right-to-left paragraph keeps its words, but
    // pdfium moves its punctuation (README, "Known limits").
    for word in ["Compliance", "contact", "compliance@example"] {
        assert!(text.contains(word), "{word} missing in {text:?}");
    }
}

#[test]
fn the_child_gives_the_same_document_as_in_process() {
    for name in ["ar_harfbuzz.pdf", "en_fpdf.pdf", "ar_libreoffice.pdf"] {
        let bytes = fixture(name);
        let here = extract(&bytes, Kind::Pdf, &default_limits(), Some(&pdfium())).unwrap();
        let there = extract_in_child(&child(), &bytes, Kind::Pdf, &default_limits()).unwrap();
        assert_eq!(here, there, "{name}");
    }
}

#[test]
fn dense_mixed_pdf_has_no_reversed_ligatures_or_numbers() {
    let doc = extract(
        &fixture("dense_mixed.pdf"),
        Kind::Pdf,
        &default_limits(),
        Some(&pdfium()),
    )
    .unwrap();
    assert_eq!(doc.pages, Some(2));
    let text = page_texts(&doc).join("\n");
    assert!(text.chars().count() > 9_000, "{}", text.chars().count());
    for good in [
        "1. يجب",
        "الاحتفاظ",
        "بسجلات",
        "لا يجوز",
        "السلام",
        "للعام 2026.",
        "Customer records must be kept",
    ] {
        assert!(text.contains(good), "{good} missing");
    }
    for bad in ["االحتفاظ", "بسجالت", "ال يجوز", "السالم", ".2026", ".1 "]
    {
        let at = text.lines().find(|l| l.contains(bad));
        assert!(!text.contains(bad), "{bad} present: {at:?}");
    }
}

//! DOCX extraction: documents built in memory (Arabic with `w:bidi`, English, headings, lists,
//! tables) and the LibreOffice-written fixture.

use std::io::{Cursor, Write};

use sovereign_documents::{Kind, Role, detect, extract, extract_in_child};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::{child, default_limits, fixture};

pub const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

/// A DOCX archive with the given entries (name, bytes, compressed?).
pub fn zip_of(entries: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes, deflate) in entries {
        let method = if *deflate {
            CompressionMethod::Deflated
        } else {
            CompressionMethod::Stored
        };
        zip.start_file(
            *name,
            SimpleFileOptions::default()
                .compression_method(method)
                .large_file(bytes.len() > u32::MAX as usize),
        )
        .unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// A DOCX whose body is `body` (WordprocessingML inside `<w:body>`).
pub fn docx(body: &str) -> Vec<u8> {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {W}><w:body>{body}</w:body></w:document>"#
    );
    zip_of(&[
        ("[Content_Types].xml", br#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#, true),
        ("word/document.xml", xml.as_bytes(), true),
    ])
}

fn para(text: &str, ppr: &str) -> String {
    format!(r#"<w:p><w:pPr>{ppr}</w:pPr><w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#)
}

#[test]
fn arabic_and_english_docx_with_structure() {
    let body = [
        para("سياسة الاحتفاظ بالسجلات", r#"<w:pStyle w:val="Heading1"/><w:bidi/>"#),
        para("يجب الاحتفاظ بسجلات العملاء لمدة عشر سنوات.", "<w:bidi/>"),
        para("التحقق من الهوية", r#"<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr><w:bidi/>"#),
        r#"<w:tbl><w:tblPr><w:bidiVisual/></w:tblPr><w:tr><w:tc><w:p><w:r><w:t>البند</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>المدة</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#.to_owned(),
        para("Records Retention &amp; Disclosure", r#"<w:outlineLvl w:val="1"/>"#),
        para("Customer records must be kept for ten years.", ""),
    ]
    .concat();
    let bytes = docx(&body);
    assert_eq!(
        detect(&bytes, Some("policy.docx"), None, &default_limits()),
        Ok(Kind::Docx)
    );
    let doc = extract(&bytes, Kind::Docx, &default_limits(), None).unwrap();
    let got: Vec<_> = doc
        .blocks
        .iter()
        .map(|b| (b.paragraph, b.role, b.rtl, b.text.as_str(), b.page))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                1,
                Role::Heading { level: 1 },
                true,
                "سياسة الاحتفاظ بالسجلات",
                None
            ),
            (
                2,
                Role::Body,
                true,
                "يجب الاحتفاظ بسجلات العملاء لمدة عشر سنوات.",
                None
            ),
            (3, Role::ListItem, true, "• التحقق من الهوية", None),
            (4, Role::TableRow, true, "البند | المدة", None),
            (
                5,
                Role::Heading { level: 2 },
                false,
                "Records Retention & Disclosure",
                None
            ),
            (
                6,
                Role::Body,
                false,
                "Customer records must be kept for ten years.",
                None
            ),
        ]
    );
    // The same through the child protocol.
    assert_eq!(
        extract_in_child(&child(), &bytes, Kind::Docx, &default_limits()).unwrap(),
        doc
    );
}

#[test]
fn libreoffice_docx_fixture() {
    let bytes = fixture("ar_libreoffice.docx");
    assert_eq!(
        detect(&bytes, Some("guide.docx"), None, &default_limits()),
        Ok(Kind::Docx)
    );
    let doc = extract(&bytes, Kind::Docx, &default_limits(), None).unwrap();
    let texts: Vec<&str> = doc.blocks.iter().map(|b| b.text.as_str()).collect();
    assert_eq!(texts[0], "دليل الامتثال");
    assert_eq!(doc.blocks[0].role, Role::Heading { level: 1 });
    assert!(
        texts.contains(&"تحتفظ المؤسسة بالسجلات لمدة لا تقل عن عشر سنوات."),
        "{texts:?}"
    );
    assert!(texts.contains(&"البند | المدة"), "{texts:?}");
    assert!(texts.contains(&"السجلات | عشر سنوات"), "{texts:?}");
    assert!(
        texts.contains(&"Compliance contact: compliance@example.com"),
        "{texts:?}"
    );
    assert!(
        doc.blocks
            .iter()
            .filter(|b| b.text.starts_with("دليل") || b.text.starts_with("تحتفظ"))
            .all(|b| b.rtl)
    );
}

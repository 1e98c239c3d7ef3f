//! Fuzz target: type detection on arbitrary bytes with each claimed name and content type,
//! then text extraction of whatever is detected as text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sovereign_documents::{Kind, Limits, detect, extract};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    for (name, media) in [
        (None, None),
        (Some("a.pdf"), Some("application/pdf")),
        (Some("a.docx"), None),
        (Some("a.md"), Some("text/markdown; charset=utf-8")),
        (Some("noext"), Some("application/octet-stream")),
    ] {
        if let Ok(kind @ (Kind::Text | Kind::Markdown | Kind::Docx)) =
            detect(data, name, media, &limits)
        {
            let _ = extract(data, kind, &limits, None);
        }
    }
});

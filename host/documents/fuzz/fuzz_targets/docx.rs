//! Fuzz target: DOCX extraction (zip container + streaming XML) on arbitrary bytes, with small
//! limits so bombs and deep nesting are hit quickly. Must never panic, hang or run away.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sovereign_documents::{Kind, Limits, extract};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_inflated_bytes: 8 << 20,
        max_text_chars: 1 << 20,
        ..Limits::default()
    };
    let _ = extract(data, Kind::Docx, &limits, None);
});

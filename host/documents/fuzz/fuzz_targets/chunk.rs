//! Fuzz target: chunking arbitrary UTF-8 (as text and Markdown) with small, varied targets;
//! every chunk's offsets must locate its text in its block.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sovereign_documents::{ApproxTokenCounter, ChunkConfig, Kind, Limits, chunk, extract};

fuzz_target!(|data: &[u8]| {
    let Some((&knob, rest)) = data.split_first() else {
        return;
    };
    let kind = if knob & 1 == 0 {
        Kind::Text
    } else {
        Kind::Markdown
    };
    let Ok(doc) = extract(rest, kind, &Limits::default(), None) else {
        return;
    };
    let config = ChunkConfig {
        target_tokens: usize::from(knob >> 1) + 1,
        overlap_tokens: usize::from(knob & 0x0f),
    };
    for c in chunk(&doc, &ApproxTokenCounter, &config) {
        let first = doc.blocks.iter().find(|b| b.paragraph == c.paragraph_start);
        let Some(first) = first else {
            panic!("chunk {} names a missing block", c.index)
        };
        if c.paragraph_start == c.paragraph_end {
            let slice: String = first
                .text
                .chars()
                .skip(c.char_start)
                .take(c.char_end - c.char_start)
                .collect();
            assert_eq!(slice, c.text);
        }
        assert!(!c.text.is_empty());
    }
});

//! The saved fuzz corpus (`fuzz/corpus/<target>/`) replayed as ordinary tests: every input the
//! fuzzers kept goes through the same calls as its target, and must answer without panicking
//! and quickly. Crashes the fuzzers found are kept here too, once fixed.

use std::path::Path;
use std::time::{Duration, Instant};

use sovereign_documents::{ApproxTokenCounter, ChunkConfig, Kind, Limits, chunk, detect, extract};

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            (path.display().to_string(), std::fs::read(&path).unwrap())
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "empty corpus {}", dir.display());
    inputs
}

fn replay(target: &str, run: impl Fn(&[u8])) {
    for (name, bytes) in corpus(target) {
        let started = Instant::now();
        run(&bytes);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{name} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn docx_corpus() {
    let limits = Limits {
        max_inflated_bytes: 8 << 20,
        max_text_chars: 1 << 20,
        ..Limits::default()
    };
    replay("docx", |data| {
        let _ = extract(data, Kind::Docx, &limits, None);
    });
}

#[test]
fn detect_corpus() {
    let limits = Limits::default();
    replay("detect", |data| {
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
}

#[test]
fn chunk_corpus() {
    replay("chunk", |data| {
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
            let first = doc
                .blocks
                .iter()
                .find(|b| b.paragraph == c.paragraph_start)
                .unwrap();
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
}

#[test]
fn pdf_child_corpus() {
    let config = crate::child();
    for (name, data) in corpus("pdf_child") {
        let mut bytes = b"%PDF-1.7\n".to_vec();
        bytes.extend_from_slice(&data);
        let started = Instant::now();
        let result =
            sovereign_documents::extract_in_child(&config, &bytes, Kind::Pdf, &Limits::default());
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name} took {:?}",
            started.elapsed()
        );
        if let Err(e) = result {
            assert!(
                !matches!(e.kind(), sovereign_documents::ErrorKind::Unavailable),
                "{name}: {e:?}"
            );
        }
    }
}

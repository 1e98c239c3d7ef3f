//! Chunking extracted documents: provenance survives, chunks fit the target, overlap repeats
//! whole sentences.

use sovereign_documents::{ApproxTokenCounter, ChunkConfig, Kind, chunk, extract};

use crate::{default_limits, fixture, pdfium};

#[test]
fn pdf_chunks_keep_their_page_and_offsets() {
    let doc = extract(
        &fixture("ar_harfbuzz.pdf"),
        Kind::Pdf,
        &default_limits(),
        Some(&pdfium()),
    )
    .unwrap();
    let config = ChunkConfig {
        target_tokens: 20,
        overlap_tokens: 6,
    };
    let chunks = chunk(&doc, &ApproxTokenCounter, &config);
    assert!(chunks.len() >= 3, "{chunks:#?}");
    for c in &chunks {
        let page = c.page.unwrap();
        let block = doc.blocks.iter().find(|b| b.page == Some(page)).unwrap();
        let slice: String = block
            .text
            .chars()
            .skip(c.char_start)
            .take(c.char_end - c.char_start)
            .collect();
        assert_eq!(slice, c.text);
        assert!(c.tokens <= 20, "{c:?}");
    }
    assert_eq!(chunks.first().unwrap().page, Some(1));
    assert_eq!(chunks.last().unwrap().page, Some(2));
}

#[test]
fn long_text_default_config_overlaps() {
    let sentence =
        "The bank keeps customer records for ten years and reports suspicious transactions. ";
    let arabic = "يحتفظ البنك بسجلات العملاء لمدة عشر سنوات ويبلغ عن المعاملات المشبوهة؟ ";
    let text = format!("{}\n\n{}", sentence.repeat(60), arabic.repeat(60));
    let doc = extract(text.as_bytes(), Kind::Text, &default_limits(), None).unwrap();
    let chunks = chunk(&doc, &ApproxTokenCounter, &ChunkConfig::default());
    assert!(chunks.len() >= 3, "{}", chunks.len());
    for pair in chunks.windows(2) {
        assert!(pair[0].tokens <= 400);
        if pair[0].paragraph_end == pair[1].paragraph_start {
            // The next chunk starts with the previous one's last sentence.
            let last_sentence = pair[0]
                .text
                .rsplit_terminator(['.', '؟'])
                .next()
                .unwrap()
                .trim();
            assert!(
                pair[1].text.contains(last_sentence),
                "no overlap between {} and {}",
                pair[0].index,
                pair[1].index
            );
        }
    }
}

//! `chunk`: token-aware chunks of a document for embedding, cut at sentence boundaries (Arabic
//! and English), preferring paragraph ends, overlapping by whole sentences, each with its page,
//! paragraph range and character offsets.

use serde::{Deserialize, Serialize};

use crate::{Block, Document};

/// Counts tokens the way the embedding model will; the host passes its tokenizer.
pub trait TokenCounter {
    fn count(&self, text: &str) -> usize;
}

impl<F: Fn(&str) -> usize> TokenCounter for F {
    fn count(&self, text: &str) -> usize {
        self(text)
    }
}

/// A tokenizer-free estimate that errs high for SentencePiece/BPE models (e5, o200k): one token
/// per 4 Latin or 3 other letters of each word (at least one per word), one per punctuation
/// mark. Use the model's own counter when there is one.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApproxTokenCounter;

impl TokenCounter for ApproxTokenCounter {
    fn count(&self, text: &str) -> usize {
        let mut tokens = 0;
        for word in text.split_whitespace() {
            let (mut latin, mut other, mut punct) = (0usize, 0usize, 0usize);
            for c in word.chars() {
                if c.is_ascii_alphanumeric() {
                    latin += 1;
                } else if c.is_alphanumeric() {
                    other += 1;
                } else {
                    punct += 1;
                }
            }
            tokens += (latin.div_ceil(4) + other.div_ceil(3)).max(1) + punct;
        }
        tokens
    }
}

/// How to cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChunkConfig {
    /// Tokens a chunk aims for (default 400, under the e5 models' 512-token window).
    pub target_tokens: usize,
    /// Tokens of whole sentences repeated from the end of the previous chunk (default 60).
    pub overlap_tokens: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        ChunkConfig {
            target_tokens: 400,
            overlap_tokens: 60,
        }
    }
}

/// One chunk and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// 0-based position in the document's chunks.
    pub index: u32,
    /// The text: slices of its blocks, blocks joined with a blank line.
    pub text: String,
    /// Tokens of `text` by the counter.
    pub tokens: usize,
    /// The page (PDF): a chunk never spans pages.
    pub page: Option<u32>,
    /// The first and last block (`Block::paragraph`) the chunk draws on.
    pub paragraph_start: u32,
    pub paragraph_end: u32,
    /// Character (Unicode scalar) offset of the start in the first block's text, and of the
    /// end (exclusive) in the last block's text.
    pub char_start: usize,
    pub char_end: usize,
}

/// A sentence, or a piece of an over-long one.
#[derive(Debug, Clone, Copy)]
struct Unit {
    block: usize,
    bytes: (usize, usize),
    chars: (usize, usize),
    tokens: usize,
    /// Last unit of its block.
    para_end: bool,
}

/// Does `c` end a sentence (when followed by whitespace or the end)?
fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '?' | '!' | '؟' | '؛' | '۔' | '…' | '。')
}

/// Splits one block into sentence units, cutting over-long sentences at word boundaries (or,
/// for runs without spaces, at characters) so no unit exceeds `max_tokens`.
fn units_of(
    block: usize,
    text: &str,
    counter: &dyn TokenCounter,
    max_tokens: usize,
    out: &mut Vec<Unit>,
) {
    let first = out.len();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let byte_at = |i: usize| chars.get(i).map_or(text.len(), |&(b, _)| b);
    let mut i = 0;
    while i < n {
        // Skip whitespace between sentences.
        while i < n && chars[i].1.is_whitespace() {
            i += 1;
        }
        if i >= n {
            break;
        }
        let start = i;
        let mut end = n;
        let mut j = i;
        while j < n {
            let c = chars[j].1;
            if c == '\n' {
                end = j;
                break;
            }
            if is_terminator(c) && chars.get(j + 1).is_none_or(|&(_, d)| d.is_whitespace()) {
                end = j + 1;
                break;
            }
            j += 1;
        }
        let mut e = end;
        while e > start && chars[e - 1].1.is_whitespace() {
            e -= 1;
        }
        push_sentence(
            block,
            text,
            &chars,
            (start, e),
            counter,
            max_tokens,
            &byte_at,
            out,
        );
        i = end;
    }
    if let Some(last) = out.get_mut(first..).and_then(|s| s.last_mut()) {
        last.para_end = true;
    }
}

#[expect(clippy::too_many_arguments, reason = "a private helper of units_of")]
fn push_sentence(
    block: usize,
    text: &str,
    chars: &[(usize, char)],
    (start, end): (usize, usize),
    counter: &dyn TokenCounter,
    max_tokens: usize,
    byte_at: &dyn Fn(usize) -> usize,
    out: &mut Vec<Unit>,
) {
    let unit = |s: usize, e: usize, tokens: usize| Unit {
        block,
        bytes: (byte_at(s), byte_at(e)),
        chars: (s, e),
        tokens,
        para_end: false,
    };
    let tokens = counter.count(&text[byte_at(start)..byte_at(end)]);
    if tokens <= max_tokens {
        out.push(unit(start, end, tokens));
        return;
    }
    // Too long: words (or runs of at most 64 characters) packed up to max_tokens.
    let mut piece_start = start;
    let mut piece_tokens = 0;
    let mut k = start;
    while k < end {
        let word_start = k;
        while k < end && !chars[k].1.is_whitespace() && k - word_start < 64 {
            k += 1;
        }
        while k < end && chars[k].1.is_whitespace() {
            k += 1;
        }
        let word_tokens = counter.count(&text[byte_at(word_start)..byte_at(k)]).max(1);
        if piece_tokens > 0 && piece_tokens + word_tokens > max_tokens {
            let mut e = word_start;
            while e > piece_start && chars[e - 1].1.is_whitespace() {
                e -= 1;
            }
            out.push(unit(piece_start, e, piece_tokens));
            piece_start = word_start;
            piece_tokens = 0;
        }
        piece_tokens += word_tokens;
    }
    let mut e = end;
    while e > piece_start && chars[e - 1].1.is_whitespace() {
        e -= 1;
    }
    if e > piece_start {
        out.push(unit(piece_start, e, piece_tokens));
    }
}

/// Cuts `document` into chunks of about `config.target_tokens` tokens by `counter`.
///
/// Sentences end at `.`, `?`, `!`, `؟`, `؛`, `۔` (followed by a space or the end) and at line
/// ends; a chunk closes at a paragraph end once it is half full and the next paragraph would not
/// fit whole; the next chunk starts with the previous one's last sentences, up to
/// `config.overlap_tokens`. Chunks never span PDF pages. Token counts of sentences are summed
/// while packing; `Chunk::tokens` is the counter's count of the final text.
pub fn chunk(document: &Document, counter: &dyn TokenCounter, config: &ChunkConfig) -> Vec<Chunk> {
    let target = config.target_tokens.max(1);
    let overlap = config.overlap_tokens.min(target / 2);
    let mut chunks = Vec::new();
    let blocks = &document.blocks;
    let mut g = 0;
    while g < blocks.len() {
        // A group: consecutive blocks on the same page (all blocks when there are no pages).
        let mut h = g + 1;
        while h < blocks.len() && blocks[h].page == blocks[g].page {
            h += 1;
        }
        let mut units = Vec::new();
        for (b, block) in blocks.iter().enumerate().take(h).skip(g) {
            units_of(b, &block.text, counter, target, &mut units);
        }
        pack(blocks, &units, counter, target, overlap, &mut chunks);
        g = h;
    }
    chunks
}

fn pack(
    blocks: &[Block],
    units: &[Unit],
    counter: &dyn TokenCounter,
    target: usize,
    overlap: usize,
    chunks: &mut Vec<Chunk>,
) {
    // Tokens from each unit to the end of its paragraph.
    let mut rest = vec![0usize; units.len()];
    for k in (0..units.len()).rev() {
        rest[k] = units[k].tokens
            + if units[k].para_end {
                0
            } else {
                rest.get(k + 1).copied().unwrap_or(0)
            };
    }
    let mut i = 0;
    while i < units.len() {
        let start = i;
        let mut tokens = 0;
        let mut j = i;
        while j < units.len() {
            if j > start {
                if tokens + units[j].tokens > target {
                    break;
                }
                let at_paragraph_start = units[j - 1].para_end;
                if at_paragraph_start && tokens * 2 >= target && tokens + rest[j] > target {
                    break;
                }
            }
            tokens += units[j].tokens;
            j += 1;
        }
        chunks.push(make_chunk(
            blocks,
            &units[start..j],
            counter,
            chunks.len() as u32,
        ));
        if j >= units.len() {
            break;
        }
        let mut next = j;
        let mut carried = 0;
        while next - 1 > start && carried + units[next - 1].tokens <= overlap {
            next -= 1;
            carried += units[next].tokens;
        }
        i = next;
    }
}

fn make_chunk(blocks: &[Block], units: &[Unit], counter: &dyn TokenCounter, index: u32) -> Chunk {
    let mut text = String::new();
    let mut k = 0;
    while k < units.len() {
        let block = units[k].block;
        let mut last = k;
        while last + 1 < units.len() && units[last + 1].block == block {
            last += 1;
        }
        let source = &blocks[block].text;
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(
            source
                .get(units[k].bytes.0..units[last].bytes.1)
                .unwrap_or_default(),
        );
        k = last + 1;
    }
    let (first, last) = (units.first(), units.last());
    let block_of = |u: Option<&Unit>| u.and_then(|u| blocks.get(u.block));
    Chunk {
        index,
        tokens: counter.count(&text),
        text,
        page: block_of(first).and_then(|b| b.page),
        paragraph_start: block_of(first).map_or(0, |b| b.paragraph),
        paragraph_end: block_of(last).map_or(0, |b| b.paragraph),
        char_start: first.map_or(0, |u| u.chars.0),
        char_end: last.map_or(0, |u| u.chars.1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kind, Role};

    fn doc(blocks: &[(Option<u32>, &str)]) -> Document {
        Document {
            kind: Kind::Text,
            pages: None,
            blocks: blocks
                .iter()
                .enumerate()
                .map(|(i, (page, text))| Block {
                    page: *page,
                    paragraph: i as u32 + 1,
                    role: Role::Body,
                    rtl: false,
                    text: (*text).to_owned(),
                })
                .collect(),
        }
    }

    /// One token per whitespace-separated word.
    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    #[test]
    fn arabic_sentences_are_not_cut_and_overlap_is_whole_sentences() {
        let s = "هذه جملة أولى. هل هذه جملة ثانية؟ نعم؛ وهذه ثالثة! والأخيرة هنا۔";
        let d = doc(&[(None, s)]);
        let cfg = ChunkConfig {
            target_tokens: 5,
            overlap_tokens: 2,
        };
        let chunks = chunk(&d, &words, &cfg);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "هذه جملة أولى.",
                "هل هذه جملة ثانية؟ نعم؛",
                "نعم؛ وهذه ثالثة! والأخيرة هنا۔",
            ]
        );
        for c in &chunks {
            let chars: Vec<char> = s.chars().collect();
            let slice: String = chars[c.char_start..c.char_end].iter().collect();
            assert_eq!(slice, c.text, "offsets locate the chunk");
            assert!(c.text.ends_with(['.', '؟', '؛', '!', '۔']), "{c:?}");
        }
    }

    #[test]
    fn paragraph_ends_are_preferred_and_pages_are_never_crossed() {
        let d = doc(&[
            (Some(1), "one two three four."),
            (Some(1), "five six seven eight nine ten."),
            (Some(2), "eleven twelve."),
        ]);
        let cfg = ChunkConfig {
            target_tokens: 8,
            overlap_tokens: 0,
        };
        let chunks = chunk(&d, &words, &cfg);
        let got: Vec<_> = chunks
            .iter()
            .map(|c| (c.page, c.paragraph_start, c.paragraph_end, c.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(1), 1, 1, "one two three four."),
                (Some(1), 2, 2, "five six seven eight nine ten."),
                (Some(2), 3, 3, "eleven twelve."),
            ]
        );
    }

    #[test]
    fn long_runs_without_boundaries_are_split_to_fit() {
        let long = "word ".repeat(1000);
        let d = doc(&[(None, &long), (None, &"x".repeat(10_000))]);
        let cfg = ChunkConfig::default();
        let chunks = chunk(&d, &ApproxTokenCounter, &cfg);
        assert!(chunks.len() > 2);
        for c in &chunks {
            assert!(c.tokens <= 400 + 1, "{}", c.tokens);
            assert!(!c.text.is_empty());
        }
    }

    #[test]
    fn empty_document_has_no_chunks() {
        assert!(chunk(&doc(&[]), &ApproxTokenCounter, &ChunkConfig::default()).is_empty());
    }
}

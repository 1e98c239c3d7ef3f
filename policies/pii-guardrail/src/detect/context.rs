//! Words near a number that say what it is. Numbers without a checksum (phone numbers in national
//! format, a bare 9-digit SSN) are only reported when the nearest telling word says so, and a
//! word such as "order" or "فاتورة" next to a number vetoes the weaker detectors.
//!
//! Matching is ASCII-case-insensitive. English keywords must start a word (so `tel` does not match
//! `hotel`); Arabic keywords may follow the attached prefixes (ال، و، ب، ل), so they match anywhere.
//!
//! A message's words are found once ([`Cues`]): each number's question ("the nearest word within
//! so many bytes before or after me") scans only the pieces of text no earlier question scanned,
//! and then picks from the positions found there. Dense text is scanned once, not once per number
//! candidate, and text far from any number not at all.

use std::cell::OnceCell;
use std::ops::Range;

/// What a telling word says about the number next to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cue {
    Phone,
    Id,
    Ssn,
    /// Payment cards.
    Card,
    /// Order, invoice, reference, price, date, postcode…: not personal data.
    Other,
}

/// Words that only tell when they follow the number (`416 60 039 office`); before a number
/// they usually introduce an address (`our office is at 17031 2202 Rissik St`).
const AFTER_ONLY: &[(&str, Cue)] = &[
    ("office", Cue::Phone),
    ("home", Cue::Phone),
    ("work", Cue::Phone),
];

const WORDS: &[(&str, Cue)] = &[
    // Phone.
    ("phone", Cue::Phone),
    ("tel", Cue::Phone),
    ("mobile", Cue::Phone),
    ("mob", Cue::Phone),
    ("cell", Cue::Phone),
    ("call", Cue::Phone),
    ("fax", Cue::Phone),
    ("desk", Cue::Phone),
    ("landline", Cue::Phone),
    ("hotline", Cue::Phone),
    ("whatsapp", Cue::Phone),
    ("sms", Cue::Phone),
    ("text me", Cue::Phone),
    ("contact", Cue::Phone),
    ("reach", Cue::Phone),
    ("dial", Cue::Phone),
    ("ring", Cue::Phone),
    ("answering at", Cue::Phone),
    ("message", Cue::Phone),
    ("registered", Cue::Phone),
    ("هاتف", Cue::Phone),
    ("هاتفي", Cue::Phone),
    ("جوال", Cue::Phone),
    ("موبايل", Cue::Phone),
    ("محمول", Cue::Phone),
    ("اتصل", Cue::Phone),
    ("اتصال", Cue::Phone),
    ("تواصل", Cue::Phone),
    ("تلفون", Cue::Phone),
    ("تليفون", Cue::Phone),
    ("واتساب", Cue::Phone),
    ("واتس", Cue::Phone),
    ("فاكس", Cue::Phone),
    ("كلمني", Cue::Phone),
    ("كلموني", Cue::Phone),
    // Identity documents.
    ("national id", Cue::Id),
    ("id number", Cue::Id),
    ("identity", Cue::Id),
    ("iqama", Cue::Id),
    ("emirates id", Cue::Id),
    ("هوية", Cue::Id),
    ("هويتي", Cue::Id),
    ("إقامة", Cue::Id),
    ("اقامة", Cue::Id),
    ("إقامتي", Cue::Id),
    ("اقامتي", Cue::Id),
    ("السجل المدني", Cue::Id),
    ("الرقم القومي", Cue::Id),
    ("رقم قومي", Cue::Id),
    ("بطاقة الرقم", Cue::Id),
    ("الرقم الوطني", Cue::Id),
    // US social security numbers.
    ("ssn", Cue::Ssn),
    ("social security", Cue::Ssn),
    // Payment cards.
    ("card", Cue::Card),
    ("cc", Cue::Card),
    ("credit", Cue::Card),
    ("debit", Cue::Card),
    ("visa", Cue::Card),
    ("mastercard", Cue::Card),
    ("بطاقة", Cue::Card),
    ("بطاقتي", Cue::Card),
    ("البطاقة", Cue::Card),
    ("فيزا", Cue::Card),
    ("ماستركارد", Cue::Card),
    ("مدى", Cue::Card),
    ("ائتمان", Cue::Card),
    ("ائتمانية", Cue::Card),
    // Other numbers.
    ("order", Cue::Other),
    ("invoice", Cue::Other),
    ("ref", Cue::Other),
    ("tracking", Cue::Other),
    ("ticket", Cue::Other),
    ("booking", Cue::Other),
    ("serial", Cue::Other),
    ("sku", Cue::Other),
    ("isbn", Cue::Other),
    ("price", Cue::Other),
    ("total", Cue::Other),
    ("amount", Cue::Other),
    ("balance", Cue::Other),
    ("postcode", Cue::Other),
    ("zip", Cue::Other),
    ("box", Cue::Other),
    ("date", Cue::Other),
    ("timestamp", Cue::Other),
    ("epoch", Cue::Other),
    ("version", Cue::Other),
    ("release", Cue::Other),
    ("build", Cue::Other),
    ("الإصدار", Cue::Other),
    ("إصدار", Cue::Other),
    ("النسخة", Cue::Other),
    ("طلب", Cue::Other),
    ("فاتورة", Cue::Other),
    ("الفاتورة", Cue::Other),
    ("مرجع", Cue::Other),
    ("المرجعي", Cue::Other),
    ("شحنة", Cue::Other),
    ("الشحنة", Cue::Other),
    ("تتبع", Cue::Other),
    ("تذكرة", Cue::Other),
    ("حجز", Cue::Other),
    ("شكوى", Cue::Other),
    ("عقد", Cue::Other),
    ("سعر", Cue::Other),
    ("مبلغ", Cue::Other),
    ("المبلغ", Cue::Other),
    ("ريال", Cue::Other),
    ("جنيه", Cue::Other),
    ("درهم", Cue::Other),
    ("دينار", Cue::Other),
    ("الرمز البريدي", Cue::Other),
    ("صندوق بريد", Cue::Other),
    ("تاريخ", Cue::Other),
    ("الموديل", Cue::Other),
    ("موديل", Cue::Other),
    ("تسلسلي", Cue::Other),
];

/// How far before a number (bytes of normalised text; about 30 Arabic or 60 Latin characters)
/// and after it a telling word is looked for.
const BEFORE: usize = 60;
const AFTER: usize = 24;

/// One telling word: its bytes (lowercase), what it says, and whether it only tells after a number.
#[derive(Clone, Copy)]
struct Word {
    bytes: &'static [u8],
    cue: Cue,
    after_only: bool,
}

const WORD_COUNT: usize = WORDS.len() + AFTER_ONLY.len();

/// [`WORDS`] then [`AFTER_ONLY`]; a word's index here breaks ties between words found at the same
/// place (the earlier in the lists wins).
const ALL: [Word; WORD_COUNT] = {
    let placeholder = Word {
        bytes: b"",
        cue: Cue::Other,
        after_only: false,
    };
    let mut all = [placeholder; WORD_COUNT];
    let mut i = 0;
    while i < WORD_COUNT {
        all[i] = if i < WORDS.len() {
            Word {
                bytes: WORDS[i].0.as_bytes(),
                cue: WORDS[i].1,
                after_only: false,
            }
        } else {
            Word {
                bytes: AFTER_ONLY[i - WORDS.len()].0.as_bytes(),
                cue: AFTER_ONLY[i - WORDS.len()].1,
                after_only: true,
            }
        };
        // A word's index fits the `u8` of an [`Occurrence`].
        assert!(WORD_COUNT <= 256);
        i += 1;
    }
    all
};

/// A word's head, which selects its bucket: its first two bytes for an English word, its first
/// three letters (six bytes) for an Arabic one, since Arabic words share first letters (`ا`,
/// `ال`) far more often. ASCII bytes are folded with `| 0x20`, which maps both cases of a letter
/// to one value and never maps two different bytes that compare equal ignoring ASCII case apart;
/// Arabic heads hold no ASCII byte (checked in [`HEADS`]) and are compared as they are. `None`
/// when `b` has too few bytes left at `at`.
const fn head(b: &[u8], at: usize) -> Option<u64> {
    if at >= b.len() {
        return None;
    }
    if b[at].is_ascii() {
        if b.len() - at < 2 {
            return None;
        }
        return Some(((b[at] | 0x20) as u64) << 8 | (b[at + 1] | 0x20) as u64);
    }
    if b.len() - at < 6 {
        return None;
    }
    Some(
        (b[at] as u64) << 40
            | (b[at + 1] as u64) << 32
            | (b[at + 2] as u64) << 24
            | (b[at + 3] as u64) << 16
            | (b[at + 4] as u64) << 8
            | b[at + 5] as u64,
    )
}

/// 12 bits of a head (Fibonacci hashing): a bit of [`Heads::seen`], and its bucket (the top 10).
const fn hash(head: u64) -> usize {
    (head.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize
}

const BUCKETS: usize = 1024;

/// The words by the hash of their head, built at compile time, so a fresh Wasm instance pays
/// nothing for it. Bucket `h` holds `words[starts[h]..starts[h + 1]]`, in [`ALL`] order.
struct Heads {
    /// Bytes a word can start with, in either ASCII case: most positions end at this test.
    first: [bool; 256],
    /// For an Arabic word's first letter (lead byte `0xD8` or `0xD9`, checked in [`HEADS`]): bit
    /// `second & 63` of `arabic[lead & 1]`. Common letters that start no word (`ل`, `ي`, `ن`) end
    /// here without hashing a head.
    arabic: [u64; 2],
    /// Bit `hash(head)` is set when some word has that head: most other positions end here.
    seen: [u64; 64],
    starts: [u16; BUCKETS + 1],
    words: [u8; WORD_COUNT],
}

const HEADS: Heads = {
    let mut first = [false; 256];
    let mut arabic = [0u64; 2];
    let mut seen = [0u64; 64];
    let mut starts = [0u16; BUCKETS + 1];
    let mut i = 0;
    while i < WORD_COUNT {
        let w = ALL[i].bytes;
        // An Arabic head is compared byte for byte, so it must hold no ASCII byte.
        assert!(
            w.len() >= 2 && (w[0].is_ascii() || (w.len() >= 6 && no_ascii(w, 6))),
            "a telling word is shorter than its head, or an Arabic head holds an ASCII byte"
        );
        let h = match head(w, 0) {
            Some(k) => hash(k),
            None => 0,
        };
        first[w[0].to_ascii_lowercase() as usize] = true;
        first[w[0].to_ascii_uppercase() as usize] = true;
        if !w[0].is_ascii() {
            assert!(
                w[0] == 0xD8 || w[0] == 0xD9,
                "an Arabic telling word starts with a letter of U+0600–U+067F"
            );
            arabic[(w[0] & 1) as usize] |= 1 << (w[1] & 63);
        }
        seen[h / 64] |= 1 << (h % 64);
        starts[h / 4 + 1] += 1;
        i += 1;
    }
    let mut h = 0;
    while h < BUCKETS {
        starts[h + 1] += starts[h];
        h += 1;
    }
    let mut filled = [0u16; BUCKETS];
    let mut words = [0u8; WORD_COUNT];
    let mut i = 0;
    while i < WORD_COUNT {
        if let Some(k) = head(ALL[i].bytes, 0) {
            let h = hash(k) / 4;
            words[(starts[h] + filled[h]) as usize] = i as u8;
            filled[h] += 1;
        }
        i += 1;
    }
    Heads {
        first,
        arabic,
        seen,
        starts,
        words,
    }
};

const fn no_ascii(w: &[u8], n: usize) -> bool {
    let mut i = 0;
    while i < n {
        if w[i].is_ascii() {
            return false;
        }
        i += 1;
    }
    true
}

/// Indices of the words found at `at` of `b`, in [`ALL`] order.
fn words_at(b: &[u8], at: usize) -> impl Iterator<Item = u8> + '_ {
    let candidates = match b.get(at).zip(head(b, at)).map(|(&c, k)| (c, hash(k))) {
        Some((c, h)) if HEADS.first[usize::from(c)] && HEADS.seen[h / 64] & 1 << (h % 64) != 0 => {
            HEADS
                .words
                .get(usize::from(HEADS.starts[h / 4])..usize::from(HEADS.starts[h / 4 + 1]))
                .unwrap_or(&[])
        }
        _ => &[],
    };
    candidates
        .iter()
        .copied()
        .filter(move |&i| matches_at(b, at, ALL[usize::from(i)].bytes))
}

fn starts_word(b: &[u8], at: usize) -> bool {
    at == 0 || !b[at - 1].is_ascii_alphabetic()
}

/// A telling word found in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Occurrence {
    start: u32,
    end: u32,
    /// Index into [`ALL`].
    word: u8,
}

impl Occurrence {
    fn word(&self) -> Word {
        ALL.get(usize::from(self.word)).copied().unwrap_or(Word {
            bytes: b"",
            cue: Cue::Other,
            after_only: true,
        })
    }
}

/// Bytes of text per lazily scanned piece: a question (a window of at most [`BEFORE`] + the
/// number + [`AFTER`] bytes) scans the few pieces it touches that no question touched before.
const CHUNK: usize = 32;

/// The telling words of one (normalised) text, found piece by piece as numbers ask and kept for
/// the rest: text far from any number is never scanned, text near many is scanned once.
pub struct Cues<'t> {
    text: &'t str,
    /// Whether the text has a line break at all: most prompts' windows need no line handling.
    lines: OnceCell<bool>,
    /// Per [`CHUNK`] of text, the words starting in it.
    chunks: OnceCell<Vec<OnceCell<Vec<Occurrence>>>>,
}

impl<'t> Cues<'t> {
    pub fn new(text: &'t str) -> Self {
        Self {
            text,
            lines: OnceCell::new(),
            chunks: OnceCell::new(),
        }
    }

    /// The text the words are found in.
    pub fn text(&self) -> &'t str {
        self.text
    }

    /// The words starting in `window`, sorted by start, then by index in [`ALL`].
    fn within(&self, window: Range<usize>) -> impl Iterator<Item = Occurrence> + '_ {
        let chunks = self.chunks.get_or_init(|| {
            (0..self.text.len().div_ceil(CHUNK))
                .map(|_| OnceCell::new())
                .collect()
        });
        let first = window.start / CHUNK;
        let last = window.end.div_ceil(CHUNK);
        let b = self.text.as_bytes();
        chunks
            .get(first..last.max(first))
            .unwrap_or(&[])
            .iter()
            .enumerate()
            .flat_map(move |(k, chunk)| {
                let from = (first + k) * CHUNK;
                chunk.get_or_init(|| scan(b, from..(from + CHUNK).min(b.len())))
            })
            .copied()
            .filter(move |o| window.contains(&(o.start as usize)))
    }

    /// The cue of the telling word nearest before `span` (within [`BEFORE`] bytes); when there is
    /// none, of the nearest after it (within [`AFTER`]). A label usually precedes its value
    /// (`الهوية رقم 1154968745 والجوال 05…`: the id's cue is `الهوية`, not `الجوال`), and a word
    /// after a number only speaks for it when nothing before does (`416 60 039 office`).
    ///
    /// The word must lie wholly inside the window, which stops at the number's line (see
    /// [`same_line_before`]) and at the end of the line after it.
    pub fn nearest(&self, span: Range<usize>) -> Option<Cue> {
        let text = self.text;
        let lower_start = floor_boundary(text, span.start.saturating_sub(BEFORE));
        let upper_end = ceil_boundary(text, (span.end + AFTER).min(text.len()));
        let lines = *self.lines.get_or_init(|| text.as_bytes().contains(&b'\n'));
        let before = text
            .get(lower_start..span.start)
            .map(|before| match lines {
                true => same_line_before(before),
                false => 0..before.len(),
            })
            .map(|r| lower_start + r.start..lower_start + r.end);
        let after_end = text.get(span.end..upper_end).map(|after| {
            after
                .bytes()
                .position(|b| lines && b == b'\n')
                .map_or(upper_end, |nl| span.end + nl)
        });
        before
            .and_then(|w| self.nearest_before(w))
            .or_else(|| after_end.and_then(|end| self.nearest_after(span.end..end)))
    }

    /// The word that ends nearest the end of `window` (the earlier in [`ALL`] on a tie), lying
    /// wholly inside it; after-only words do not count.
    fn nearest_before(&self, window: Range<usize>) -> Option<Cue> {
        self.within(window.clone())
            .chain(cut_at(self.text.as_bytes(), window.start))
            .filter(|o| o.end as usize <= window.end && !o.word().after_only)
            .min_by_key(|o| (std::cmp::Reverse(o.end), o.word))
            .map(|o| o.word().cue)
    }

    /// The word that starts nearest the start of `window` (the earlier in [`ALL`] on a tie),
    /// lying wholly inside it.
    fn nearest_after(&self, window: Range<usize>) -> Option<Cue> {
        cut_at(self.text.as_bytes(), window.start)
            .chain(self.within(window.clone()))
            .filter(|o| o.end as usize <= window.end)
            .min_by_key(|o| (o.start, o.word))
            .map(|o| o.word().cue)
    }
}

/// The words starting in `starts` of `b` that count wherever a window starts: Arabic words
/// anywhere, English words at the start of a word. Sorted by start, then by index in [`ALL`].
fn scan(b: &[u8], starts: Range<usize>) -> Vec<Occurrence> {
    let mut out = Vec::new();
    for at in starts {
        let c = b[at];
        if !HEADS.first[usize::from(c)] {
            continue;
        }
        let may_start = if c.is_ascii() {
            starts_word(b, at)
        } else {
            b.get(at + 1)
                .is_some_and(|&n| HEADS.arabic[usize::from(c & 1)] & 1 << (n & 63) != 0)
        };
        if !may_start {
            continue;
        }
        out.extend(words_at(b, at).map(|i| Occurrence {
            start: offset(at),
            end: offset(at + ALL[usize::from(i)].bytes.len()),
            word: i,
        }));
    }
    out
}

/// The English words starting at `at` inside a word: they count only when a window starts there
/// (the window cuts into the word, and what is left from the cut on starts a word within it, as it
/// did when each number scanned its own window).
fn cut_at(b: &[u8], at: usize) -> impl Iterator<Item = Occurrence> + '_ {
    let cut = b.get(at).is_some_and(u8::is_ascii) && !starts_word(b, at);
    words_at(b, if cut { at } else { b.len() }).map(move |i| Occurrence {
        start: offset(at),
        end: offset(at + ALL[usize::from(i)].bytes.len()),
        word: i,
    })
}

/// The part of `before` on the number's own line, or on the line above when the number starts
/// its line (`Phone:\n60-56-85-91`): words further up describe other lines. A range of `before`.
fn same_line_before(before: &str) -> Range<usize> {
    let Some(nl) = before.rfind('\n') else {
        return 0..before.len();
    };
    if !before[nl + 1..].trim().is_empty() {
        return nl + 1..before.len();
    }
    before[..nl].rfind('\n').map_or(0..nl, |p| p + 1..nl)
}

fn matches_at(hay: &[u8], at: usize, word: &[u8]) -> bool {
    hay.get(at..at + word.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(word))
}

fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests;

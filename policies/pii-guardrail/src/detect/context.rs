//! Words near a number that say what it is. Numbers without a checksum (phone numbers in national
//! format, a bare 9-digit SSN) are only reported when the nearest telling word says so, and a
//! word such as "order" or "فاتورة" next to a number vetoes the weaker detectors.
//!
//! Matching is ASCII-case-insensitive. English keywords must start a word (so `tel` does not match
//! `hotel`); Arabic keywords may follow the attached prefixes (ال، و، ب، ل), so they match anywhere.

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

/// The cue of the telling word nearest before `span` (within [`BEFORE`] bytes); when there is
/// none, of the nearest after it (within [`AFTER`]). A label usually precedes its value
/// (`الهوية رقم 1154968745 والجوال 05…`: the id's cue is `الهوية`, not `الجوال`), and a word
/// after a number only speaks for it when nothing before does (`416 60 039 office`).
pub fn nearest_cue(text: &str, span: std::ops::Range<usize>) -> Option<Cue> {
    let lower_start = floor_boundary(text, span.start.saturating_sub(BEFORE));
    let upper_end = ceil_boundary(text, (span.end + AFTER).min(text.len()));
    let before = same_line_before(&text[lower_start..span.start]);
    let after = &text[span.end..upper_end];
    let after = after.split('\n').next().unwrap_or(after);
    nearest_before(before.as_bytes()).or_else(|| nearest_after(after.as_bytes()))
}

/// The words indexed by their first two and last two bytes (ASCII-lowercased), so a scan looks
/// up the few words that can match at a position instead of trying them all.
struct Index {
    by_head: Vec<([u8; 2], usize)>,
    by_tail: Vec<([u8; 2], usize)>,
    /// Bit `bloom(key)` is set when some word has that head or tail: most positions are turned
    /// away by one bit test instead of a binary search.
    heads: [u64; 16],
    tails: [u64; 16],
}

fn bloom(k: [u8; 2]) -> (usize, u64) {
    let h = (usize::from(k[0]) * 31 + usize::from(k[1])) % 1024;
    (h / 64, 1u64 << (h % 64))
}

fn may_hold(bits: &[u64; 16], k: [u8; 2]) -> bool {
    let (word, bit) = bloom(k);
    bits[word] & bit != 0
}

fn all_words() -> impl Iterator<Item = (&'static str, Cue, bool)> {
    WORDS
        .iter()
        .map(|&(w, c)| (w, c, false))
        .chain(AFTER_ONLY.iter().map(|&(w, c)| (w, c, true)))
}

fn key(a: u8, b: u8) -> [u8; 2] {
    [a.to_ascii_lowercase(), b.to_ascii_lowercase()]
}

fn index() -> &'static Index {
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut by_head = Vec::new();
        let mut by_tail = Vec::new();
        for (i, (word, _, _)) in all_words().enumerate() {
            let w = word.as_bytes();
            if let (Some(&a), Some(&b), Some(&y), Some(&z)) = (
                w.first(),
                w.get(1),
                w.get(w.len().wrapping_sub(2)),
                w.last(),
            ) {
                by_head.push((key(a, b), i));
                by_tail.push((key(y, z), i));
            }
        }
        by_head.sort_unstable();
        by_tail.sort_unstable();
        let mut heads = [0u64; 16];
        let mut tails = [0u64; 16];
        for (k, _) in &by_head {
            let (w, b) = bloom(*k);
            heads[w] |= b;
        }
        for (k, _) in &by_tail {
            let (w, b) = bloom(*k);
            tails[w] |= b;
        }
        Index {
            by_head,
            by_tail,
            heads,
            tails,
        }
    })
}

/// Word indices whose key is `k`.
fn lookup(table: &[([u8; 2], usize)], k: [u8; 2]) -> impl Iterator<Item = usize> + '_ {
    let from = table.partition_point(|(x, _)| *x < k);
    table[from..]
        .iter()
        .take_while(move |(x, _)| *x == k)
        .map(|&(_, i)| i)
}

fn word(i: usize) -> Option<(&'static str, Cue, bool)> {
    match WORDS.get(i) {
        Some(&(w, c)) => Some((w, c, false)),
        None => AFTER_ONLY.get(i - WORDS.len()).map(|&(w, c)| (w, c, true)),
    }
}

/// Scans back from the number: the first word found ending at a position is the nearest.
fn nearest_before(h: &[u8]) -> Option<Cue> {
    let index = index();
    (2..=h.len()).rev().find_map(|end| {
        let k = key(h[end - 2], h[end - 1]);
        if !may_hold(&index.tails, k) {
            return None;
        }
        lookup(&index.by_tail, k).find_map(|i| {
            let (word, cue, after_only) = self::word(i)?;
            let w = word.as_bytes();
            let start = end.checked_sub(w.len())?;
            (!after_only && matches_at(h, start, w) && (!word.is_ascii() || starts_word(h, start)))
                .then_some(cue)
        })
    })
}

/// Scans forward from the number: the first word found starting at a position is the nearest.
fn nearest_after(h: &[u8]) -> Option<Cue> {
    let index = index();
    (0..h.len().saturating_sub(1)).find_map(|start| {
        let k = key(h[start], h[start + 1]);
        if !may_hold(&index.heads, k) {
            return None;
        }
        lookup(&index.by_head, k).find_map(|i| {
            let (word, cue, _) = self::word(i)?;
            let w = word.as_bytes();
            (matches_at(h, start, w) && (!word.is_ascii() || starts_word(h, start))).then_some(cue)
        })
    })
}

/// The part of `before` on the number's own line, or on the line above when the number starts
/// its line (`Phone:\n60-56-85-91`): words further up describe other lines.
fn same_line_before(before: &str) -> &str {
    let Some(nl) = before.rfind('\n') else {
        return before;
    };
    let own = &before[nl + 1..];
    if !own.trim().is_empty() {
        return own;
    }
    let above = &before[..nl];
    above.rfind('\n').map_or(above, |p| &above[p + 1..])
}

fn starts_word(hay: &[u8], at: usize) -> bool {
    at == 0 || !hay[at - 1].is_ascii_alphabetic()
}

fn matches_at(hay: &[u8], at: usize, word: &[u8]) -> bool {
    hay.get(at..at + word.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(word))
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
mod tests {
    use super::*;

    fn cue(text: &str, number: &str) -> Option<Cue> {
        let at = text.find(number).unwrap_or(0);
        nearest_cue(text, at..at + number.len())
    }

    #[test]
    fn nearest_word_wins() {
        assert_eq!(
            cue("Phone: 0490 75 40 81", "0490 75 40 81"),
            Some(Cue::Phone)
        );
        assert_eq!(
            cue("phone me about order 12345678", "12345678"),
            Some(Cue::Other)
        );
        assert_eq!(cue("رقم الطلب 12345678", "12345678"), Some(Cue::Other));
        assert_eq!(cue("رقم جوالي 12345678", "12345678"), Some(Cue::Phone));
        assert_eq!(cue("416 60 039 office", "416 60 039"), Some(Cue::Phone));
        assert_eq!(cue("the hotel 12345678", "12345678"), None);
        assert_eq!(cue("nothing here 12345678", "12345678"), None);
    }
}

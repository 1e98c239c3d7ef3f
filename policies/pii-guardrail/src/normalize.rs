//! Text normalisation before matching, with a map back to the original text.
//!
//! Detectors scan a normalised copy of each message: Arabic-Indic (U+0660–0669), Eastern
//! Arabic-Indic (U+06F0–06F9) and full-width (U+FF10–FF19) digits become ASCII digits; full-width
//! `+`, no-break and other odd spaces become `+` / a space; Unicode dashes and the minus sign
//! become `-`; invisible characters (bidirectional marks, embeddings, overrides and isolates,
//! zero-width space/joiners, word joiner, BOM) are removed. Every other character is copied
//! unchanged, so Arabic and Latin letters keep their bytes.
//!
//! [`Normalized::to_original`] turns a byte span of the normalised text into the byte span of the
//! original text it came from. Spans start at the first kept character and end after the last one,
//! so they always fall on character boundaries of the original, and invisible characters *inside*
//! an entity are covered by its span (and redacted with it).

use std::ops::Range;

/// What normalisation does to one character.
enum Fold {
    Keep,
    Drop,
    Ascii(u8),
}

fn fold(c: char) -> Fold {
    match c {
        // Arabic-Indic and Eastern Arabic-Indic (Persian/Urdu) digits.
        '\u{0660}'..='\u{0669}' => Fold::Ascii(b'0' + (c as u32 - 0x0660) as u8),
        '\u{06F0}'..='\u{06F9}' => Fold::Ascii(b'0' + (c as u32 - 0x06F0) as u8),
        // Full-width digits and plus.
        '\u{FF10}'..='\u{FF19}' => Fold::Ascii(b'0' + (c as u32 - 0xFF10) as u8),
        '\u{FF0B}' => Fold::Ascii(b'+'),
        // No-break, figure, narrow and other fixed-width spaces.
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => {
            Fold::Ascii(b' ')
        }
        // Hyphens, figure dash, en/em dashes, minus sign, full-width hyphen-minus.
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FF0D}' => Fold::Ascii(b'-'),
        // Invisible: zero-width space/non-joiner/joiner, LRM, RLM, LRE/RLE/PDF/LRO/RLO, word joiner
        // and invisible operators, LRI/RLI/FSI/PDI, Arabic letter mark, BOM / zero-width no-break.
        '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{061C}'
        | '\u{FEFF}'
        | '\u{00AD}' => Fold::Drop,
        _ => Fold::Keep,
    }
}

/// Where the normalised text and the original line up: from normalised byte `norm` on, bytes
/// map one to one onto original bytes from `orig` on — until the next anchor. A folded character
/// (one ASCII byte standing for `folded` original bytes) gets an anchor of its own.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    norm: u32,
    orig: u32,
    folded: u8,
}

/// A normalised copy of a text and the way back to the original.
#[derive(Debug, Clone)]
pub struct Normalized {
    text: String,
    /// Sorted by `norm`; the first is `(0, 0)`. One or two per changed character, so plain text
    /// costs nothing.
    anchors: Vec<Anchor>,
    original_len: usize,
}

/// Whether the UTF-8 sequence starting with `lead, next` may be one [`fold`] changes (U+00A0/00AD,
/// U+061C, U+0660–0669, U+06F0–06F9, U+2000–207F, U+2212, U+3000, U+FEFF, U+FF0B–FF19). Arabic
/// letters share lead bytes with the Arabic digits, so the second byte is checked too: ordinary
/// text is copied without decoding a character.
fn may_change(lead: u8, next: u8) -> bool {
    match lead {
        0xC2 => matches!(next, 0xA0 | 0xAD),
        0xD8 => next == 0x9C,
        0xD9 => (0xA0..=0xA9).contains(&next),
        0xDB => (0xB0..=0xB9).contains(&next),
        0xE2 => matches!(next, 0x80 | 0x81 | 0x88),
        0xE3 => next == 0x80,
        0xEF => matches!(next, 0xBB | 0xBC),
        _ => false,
    }
}

/// The lead bytes [`may_change`] can accept: every other byte (ASCII, the lead bytes of other
/// letters, continuation bytes) is passed over with one table look-up.
const LEADS: [bool; 256] = {
    let mut leads = [false; 256];
    let mut b = 0;
    while b < 256 {
        leads[b] = matches!(b, 0xC2 | 0xD8 | 0xD9 | 0xDB | 0xE2 | 0xE3 | 0xEF);
        b += 1;
    }
    leads
};

impl Normalized {
    /// Normalises `original`. Texts longer than `u32::MAX` bytes are not expected here (the host
    /// caps messages far below that); offsets saturate rather than wrap.
    pub fn new(original: &str) -> Self {
        let bytes = original.as_bytes();
        let mut text = String::with_capacity(original.len());
        let mut anchors = vec![Anchor {
            norm: 0,
            orig: 0,
            folded: 0,
        }];
        let mut copied = 0; // original bytes before this are in `text` or dropped
        let mut at = 0;
        while at < bytes.len() {
            let lead = bytes[at];
            if !LEADS[usize::from(lead)] {
                at += 1;
                continue;
            }
            let next = bytes.get(at + 1).copied().unwrap_or(0);
            if !may_change(lead, next) {
                at += 1;
                continue;
            }
            let (change, width) = match (lead, next) {
                // Arabic-Indic and Eastern Arabic-Indic digits, by far the most common change in
                // Arabic text, without decoding the character (what `fold` does with them).
                (0xD9, 0xA0..=0xA9) => (Fold::Ascii(b'0' + (next - 0xA0)), 2),
                (0xDB, 0xB0..=0xB9) => (Fold::Ascii(b'0' + (next - 0xB0)), 2),
                _ => match original.get(at..).and_then(|s| s.chars().next()) {
                    Some(c) => (fold(c), c.len_utf8()),
                    None => {
                        at += 1;
                        continue;
                    }
                },
            };
            if matches!(change, Fold::Keep) {
                at += width;
                continue;
            }
            text.push_str(&original[copied..at]);
            match change {
                Fold::Keep => {}
                Fold::Drop => {
                    let anchor = Anchor {
                        norm: offset(text.len()),
                        orig: offset(at + width),
                        folded: 0,
                    };
                    match anchors.last_mut() {
                        Some(last) if last.norm == anchor.norm && last.folded == 0 => {
                            *last = anchor;
                        }
                        _ => anchors.push(anchor),
                    }
                }
                Fold::Ascii(b) => {
                    let anchor = Anchor {
                        norm: offset(text.len()),
                        orig: offset(at),
                        folded: u8::try_from(width).unwrap_or(u8::MAX),
                    };
                    match anchors.last_mut() {
                        Some(last) if last.norm == anchor.norm && last.folded == 0 => {
                            *last = anchor;
                        }
                        _ => anchors.push(anchor),
                    }
                    text.push(char::from(b));
                    anchors.push(Anchor {
                        norm: offset(text.len()),
                        orig: offset(at + width),
                        folded: 0,
                    });
                }
            }
            at += width;
            copied = at;
        }
        text.push_str(&original[copied..]);
        Self {
            text,
            anchors,
            original_len: original.len(),
        }
    }

    /// The normalised text detectors scan.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The original byte range of the normalised byte `n`.
    fn origin(&self, n: usize) -> (usize, usize) {
        let i = self
            .anchors
            .partition_point(|a| a.norm as usize <= n)
            .saturating_sub(1);
        match self.anchors.get(i) {
            Some(a) if a.folded > 0 && a.norm as usize == n => {
                (a.orig as usize, a.orig as usize + usize::from(a.folded))
            }
            Some(a) => {
                let o = a.orig as usize + (n - a.norm as usize);
                (o, o + 1)
            }
            None => (n, n + 1),
        }
    }

    /// The original byte span of the normalised span `span` (which must be non-empty and lie on
    /// character boundaries of the normalised text, as every detector's span does).
    pub fn to_original(&self, span: Range<usize>) -> Range<usize> {
        if span.is_empty() {
            let at = self.origin(span.start).0.min(self.original_len);
            return at..at;
        }
        let start = self.origin(span.start).0.min(self.original_len);
        let end = self.origin(span.end - 1).1.min(self.original_len);
        start..end.max(start)
    }
}

fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_text_is_the_identity() {
        let n = Normalized::new("call 050 123 4567");
        assert_eq!(n.text(), "call 050 123 4567");
        assert_eq!(n.to_original(5..17), 5..17);
    }

    #[test]
    fn folds_arabic_indic_and_eastern_digits() {
        let n = Normalized::new("رقمي ٠٥٠١٢٣ و ۰۵۰ ０１");
        assert_eq!(n.text(), "رقمي 050123 و 050 01");
    }

    #[test]
    fn removes_bidi_controls_and_zero_width_characters() {
        let s = "\u{200F}05\u{200B}0\u{2066}1\u{2069}\u{061C}2\u{202B}3\u{202C}\u{FEFF}";
        let n = Normalized::new(s);
        assert_eq!(n.text(), "050123");
        // The whole entity maps back to the original from its first to its last digit.
        let span = n.to_original(0..6);
        assert_eq!(&s[span], "05\u{200B}0\u{2066}1\u{2069}\u{061C}2\u{202B}3");
    }

    #[test]
    fn spans_map_back_to_byte_offsets_in_mixed_script_text() {
        let s = "اتصل على ٠٥٠١٢٣٤٥٦٧ أو email me";
        let n = Normalized::new(s);
        let at = n.text().find("0501234567").unwrap_or(0);
        let span = n.to_original(at..at + 10);
        assert_eq!(&s[span.clone()], "٠٥٠١٢٣٤٥٦٧");
        assert!(s.is_char_boundary(span.start) && s.is_char_boundary(span.end));
        let me = n.text().find("email").unwrap_or(0);
        assert_eq!(&s[n.to_original(me..me + 5)], "email");
    }

    #[test]
    fn every_kept_character_maps_back_to_itself() {
        let s = "\u{200F}أ١b\u{200B}\u{200B}٢ ＋۳c\u{2069}😀٤";
        let n = Normalized::new(s);
        assert_eq!(n.text(), "أ1b2 +3c😀4");
        let t = n.text();
        let mut pieces = Vec::new();
        for (at, c) in t.char_indices() {
            pieces.push(&s[n.to_original(at..at + c.len_utf8())]);
        }
        assert_eq!(pieces, ["أ", "١", "b", "٢", " ", "＋", "۳", "c", "😀", "٤"]);
        assert_eq!(&s[n.to_original(0..t.len())], &s[3..]);
    }

    #[test]
    fn folds_odd_spaces_and_dashes() {
        let n = Normalized::new("050\u{00A0}123\u{2013}4567 ＋966");
        assert_eq!(n.text(), "050 123-4567 +966");
        assert_eq!(n.to_original(3..4), 3..5);
    }
}

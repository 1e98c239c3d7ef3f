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

/// A normalised copy of a text and the way back to the original.
#[derive(Debug, Clone)]
pub struct Normalized {
    text: String,
    /// For every byte of `text`: the original byte range of the character it came from.
    /// Empty when the text needed no change (the identity map).
    origin: Vec<(u32, u32)>,
    original_len: usize,
}

impl Normalized {
    /// Normalises `original`. Texts longer than `u32::MAX` bytes are not expected here (the host
    /// caps messages far below that); offsets saturate rather than wrap.
    pub fn new(original: &str) -> Self {
        let needs_work = original
            .chars()
            .any(|c| !c.is_ascii() && !matches!(fold(c), Fold::Keep));
        if !needs_work {
            return Self {
                text: original.to_owned(),
                origin: Vec::new(),
                original_len: original.len(),
            };
        }
        let mut text = String::with_capacity(original.len());
        let mut origin = Vec::with_capacity(original.len());
        for (at, c) in original.char_indices() {
            let span = (offset(at), offset(at + c.len_utf8()));
            match fold(c) {
                Fold::Drop => {}
                Fold::Ascii(b) => {
                    text.push(char::from(b));
                    origin.push(span);
                }
                Fold::Keep => {
                    text.push(c);
                    origin.extend(std::iter::repeat_n(span, c.len_utf8()));
                }
            }
        }
        Self {
            text,
            origin,
            original_len: original.len(),
        }
    }

    /// The normalised text detectors scan.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The original byte span of the normalised span `span` (which must be non-empty and lie on
    /// character boundaries of the normalised text, as every detector's span does).
    pub fn to_original(&self, span: Range<usize>) -> Range<usize> {
        if self.origin.is_empty() {
            return span.start.min(self.original_len)..span.end.min(self.original_len);
        }
        let start = self
            .origin
            .get(span.start)
            .map_or(self.original_len, |o| o.0 as usize);
        let end = span
            .end
            .checked_sub(1)
            .and_then(|last| self.origin.get(last))
            .map_or(start, |o| o.1 as usize);
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
    fn folds_odd_spaces_and_dashes() {
        let n = Normalized::new("050\u{00A0}123\u{2013}4567 ＋966");
        assert_eq!(n.text(), "050 123-4567 +966");
        assert_eq!(n.to_original(3..4), 3..5);
    }
}

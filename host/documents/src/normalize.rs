//! Text normalisation after extraction: NFKC (Arabic presentation forms and lam-alef ligatures
//! back to base letters), no bidi controls, no stray control characters, `\n` line ends.

use unicode_normalization::UnicodeNormalization;

/// Bidi marks, embeddings, overrides and isolates: U+200E/F, U+202A–E, U+2066–9. They carry no
/// meaning once text is in logical order and they break lexical matching.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Normalises extracted text: `\r\n` and `\r` become `\n`; bidi controls, the BOM and control
/// characters other than `\n` and `\t` are dropped (pdfium marks line-end hyphens with U+0002);
/// then NFKC, which maps Arabic presentation forms (U+FB50–FDFF, U+FE70–FEFF) — including the
/// lam-alef ligatures U+FEF5–FEFC — to their base letters in logical order; trailing spaces of
/// each line are trimmed.
pub fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                cleaned.push('\n');
            }
            '\n' | '\t' => cleaned.push(c),
            '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}' => {}
            c if c.is_control() || is_bidi_control(c) => {}
            c => cleaned.push(c),
        }
    }
    let nfkc: String = cleaned.nfkc().collect();
    let mut out = String::with_capacity(nfkc.len());
    for (i, line) in nfkc.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line.trim_end());
    }
    out
}

/// True when most letters of `text` are Arabic-script letters (a right-to-left paragraph).
pub(crate) fn mostly_rtl(text: &str) -> bool {
    let (mut rtl, mut letters) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        letters += 1;
        if matches!(c, '\u{0590}'..='\u{08FF}' | '\u{FB1D}'..='\u{FDFF}' | '\u{FE70}'..='\u{FEFF}')
        {
            rtl += 1;
        }
    }
    letters > 0 && rtl * 2 > letters
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lam_alef_ligature_and_presentation_forms_become_base_letters() {
        // "لا" as the isolated lam-alef ligature U+FEFB; "سلام" as presentation forms.
        assert_eq!(normalize("\u{FEFB}"), "\u{0644}\u{0627}");
        assert_eq!(
            normalize("\u{FEB3}\u{FEDF}\u{FE8E}\u{FEE1}"),
            "\u{0633}\u{0644}\u{0627}\u{0645}"
        );
    }

    #[test]
    fn bidi_controls_and_control_characters_go_line_ends_become_newlines() {
        assert_eq!(
            normalize("\u{202B}مرحبا\u{202C} \u{200F}world\u{2066}x\u{2069}\r\nnext\u{2}\rlast  "),
            "مرحبا worldx\nnext\nlast"
        );
    }

    #[test]
    fn rtl_is_decided_by_letters() {
        assert!(mostly_rtl("المادة الثانية عشرة: the bank"));
        assert!(!mostly_rtl("Article 12 المادة"));
        assert!(!mostly_rtl("12 345"));
    }
}

//! Arabic-aware text normalisation and the BM25 tokenizer for the lexical side of retrieval.
//!
//! `normalize` folds the spellings a searcher does not distinguish: NFKC (presentation forms,
//! ligatures such as lam-alef, full-width Latin), harakat and other Arabic marks and tatweel
//! removed, alef forms (أ إ آ ٱ) → ا, ى → ي, ة → ه, Arabic-Indic and Persian digits → ASCII, bidi
//! and zero-width controls removed, lower case. `tokenize` splits the result into words (runs of
//! letters and digits); with `strip_arabic_prefixes` it also removes the article and the common
//! conjunction/preposition + article prefixes (ال، وال، بال، كال، فال، لل، و) from Arabic words.

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

/// Tokenizer settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenizerOptions {
    /// Strip Arabic definite-article and conjunction prefixes (light stemming).
    pub strip_arabic_prefixes: bool,
}

impl Default for TokenizerOptions {
    /// Prefix stripping on: it helped on the evaluation set (see the crate README).
    fn default() -> Self {
        Self {
            strip_arabic_prefixes: true,
        }
    }
}

/// The normalised form of `text` (see the module note).
pub fn normalize(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    // Most text is already NFKC (the quick check is exact for "yes"); composing is the slow part.
    if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        push_folded(text.chars(), &mut out);
    } else {
        push_folded(text.nfkc(), &mut out);
    }
    out
}

fn push_folded(chars: impl Iterator<Item = char>, out: &mut String) {
    for c in chars {
        match fold(c) {
            Some(c) if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            Some(c) if !c.is_uppercase() => out.push(c),
            Some(c) => out.extend(c.to_lowercase()),
            None => {}
        }
    }
}

/// One character folded; `None` drops it.
fn fold(c: char) -> Option<char> {
    Some(match c {
        // Harakat (fathatan … sukun), maddah/hamza above and below, other combining marks in the
        // Arabic block, superscript alef, Quranic annotation marks; tatweel.
        '\u{0610}'..='\u{061A}'
        | '\u{064B}'..='\u{065F}'
        | '\u{0670}'
        | '\u{06D6}'..='\u{06ED}' => {
            return None;
        }
        '\u{0640}' => return None,
        // Bidi marks and embeddings/isolates, zero-width space/joiners, BOM.
        '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}'
        | '\u{FEFF}' => {
            return None;
        }
        'أ' | 'إ' | 'آ' | 'ٱ' => 'ا',
        'ى' => 'ي',
        'ة' => 'ه',
        '\u{0660}'..='\u{0669}' => char::from(b'0' + (c as u32 - 0x0660) as u8),
        '\u{06F0}'..='\u{06F9}' => char::from(b'0' + (c as u32 - 0x06F0) as u8),
        // Arabic comma, semicolon, question mark, decimal/thousands separators read as punctuation.
        _ => c,
    })
}

/// The BM25 terms of `text`: normalised words (runs of letters, marks and digits), in order.
pub fn tokenize(text: &str, options: TokenizerOptions) -> Vec<String> {
    let normalized = normalize(text);
    terms(&normalized, options).map(str::to_owned).collect()
}

/// The terms of already `normalize`d text, borrowed from it (no allocation per term).
pub fn terms(normalized: &str, options: TokenizerOptions) -> impl Iterator<Item = &str> {
    normalized
        .split(|c: char| !is_word_char(c))
        .filter(|w| !w.is_empty())
        .map(move |w| {
            if options.strip_arabic_prefixes {
                strip_prefix(w)
            } else {
                w
            }
        })
}

/// Letters, marks and digits; ASCII and the Arabic letters answered without the Unicode tables.
fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    match c {
        '\u{0621}'..='\u{063A}' | '\u{0641}'..='\u{064A}' | '\u{066E}'..='\u{06D3}' => true,
        // Arabic punctuation: comma, semicolon, question mark, percent, decimal/thousands marks.
        '\u{060C}' | '\u{061B}' | '\u{061F}' | '\u{066A}'..='\u{066D}' | '\u{06D4}' => false,
        _ => c.is_alphanumeric(),
    }
}

/// Whether most letters of `text` are Arabic script (the index ranks Arabic and other chunks on
/// separate similarity scales; see `index::SearchOptions::balance_scripts`).
pub fn is_mostly_arabic(text: &str) -> bool {
    let (mut arabic, mut other) = (0usize, 0usize);
    for c in text.chars().filter(|c| c.is_alphabetic()) {
        if ('\u{0600}'..='\u{06FF}').contains(&c)
            || ('\u{0750}'..='\u{077F}').contains(&c)
            || ('\u{FB50}'..='\u{FDFF}').contains(&c)
            || ('\u{FE70}'..='\u{FEFF}').contains(&c)
        {
            arabic += 1;
        } else {
            other += 1;
        }
    }
    arabic > other
}

/// Prefixes removed by light stemming, longest first; the stem must keep at least 2 letters
/// (3 for the lone conjunction و, which also begins many words).
const PREFIXES: [(&str, usize); 7] = [
    ("وال", 2),
    ("بال", 2),
    ("كال", 2),
    ("فال", 2),
    ("لل", 2),
    ("ال", 2),
    ("و", 3),
];

fn strip_prefix(word: &str) -> &str {
    if !word.starts_with(|c: char| ('\u{0600}'..='\u{06FF}').contains(&c)) {
        return word;
    }
    for (prefix, min_stem) in PREFIXES {
        if let Some(stem) = word.strip_prefix(prefix)
            && stem.chars().count() >= min_stem
        {
            return stem;
        }
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harakat_and_tatweel_are_removed() {
        assert_eq!(normalize("مُحَمَّدٌ"), "محمد");
        assert_eq!(normalize("العـــربية"), "العربيه");
    }

    #[test]
    fn alef_hamza_yeh_and_teh_marbuta_forms_are_unified() {
        assert_eq!(normalize("أحمد إبراهيم آمنة"), "احمد ابراهيم امنه");
        assert_eq!(normalize("مستشفى"), "مستشفي");
        assert_eq!(normalize("ٱلله"), "الله");
    }

    #[test]
    fn arabic_indic_and_persian_digits_become_ascii() {
        assert_eq!(normalize("٢٠٢٤ و ۱۴۰۳"), "2024 و 1403");
    }

    #[test]
    fn presentation_forms_and_lam_alef_ligature_fold_to_letters() {
        // U+FEFB is the lam-alef ligature; U+FEE3 U+FEE4 are meem presentation forms.
        assert_eq!(normalize("\u{FEFB}"), "لا");
        assert_eq!(normalize("\u{FEE3}\u{FEE4}"), "مم");
    }

    #[test]
    fn latin_is_casefolded_and_full_width_folded() {
        assert_eq!(normalize("IBAN ＡＢＣ Café"), "iban abc café");
    }

    #[test]
    fn bidi_controls_are_dropped() {
        assert_eq!(normalize("\u{200F}abc\u{202B}د\u{202C}"), "abcد");
    }

    #[test]
    fn tokenizer_splits_words_numbers_and_codes() {
        let t = tokenize(
            "Form KYC-7 (rev. 2024): 3,500 SAR!",
            TokenizerOptions::default(),
        );
        assert_eq!(t, ["form", "kyc", "7", "rev", "2024", "3", "500", "sar"]);
    }

    #[test]
    fn arabic_prefixes_are_stripped_only_when_asked_and_only_from_long_enough_words() {
        let on = TokenizerOptions {
            strip_arabic_prefixes: true,
        };
        let off = TokenizerOptions {
            strip_arabic_prefixes: false,
        };
        assert_eq!(tokenize("والقرض بالبنك للعميل", on), ["قرض", "بنك", "عميل"]);
        assert_eq!(tokenize("والقرض", off), ["والقرض"]);
        // و + 2 letters is left alone (وجه, ولد are words, not و + stem).
        assert_eq!(tokenize("ولد", on), ["ولد"]);
        // A known over-stem of light stemming (و is a root letter of وزارة): harmless for
        // matching because queries and documents are stemmed alike.
        assert_eq!(tokenize("وزارة", on), ["زاره"]);
        // Latin words are never touched.
        assert_eq!(tokenize("alqard", on), ["alqard"]);
    }

    #[test]
    fn script_majority() {
        assert!(is_mostly_arabic("رسوم التحويل 25 SAR"));
        assert!(!is_mostly_arabic("Transfer fee ٢٥ ريال"));
        assert!(!is_mostly_arabic("2024"));
    }

    #[test]
    fn arabic_punctuation_separates_words() {
        let t = tokenize("القرض،الفائدة؛الرسوم؟ ٥٪", TokenizerOptions::default());
        assert_eq!(t, ["قرض", "فائده", "رسوم", "5"]);
    }

    #[test]
    fn same_word_spelt_differently_gives_the_same_term() {
        let a = tokenize("الإقامة", TokenizerOptions::default());
        let b = tokenize("الاقامه", TokenizerOptions::default());
        assert_eq!(a, b);
    }
}

//! Names across scripts and spellings (issue 50): the keys under which a word of a document's
//! title or aliases and a word of a query count as the same name, and which words of a query look
//! like a name at all.
//!
//! A word's keys are its normalised term (`normalize` + `terms`: harakat, alef forms, the article
//! ال and its prefixed forms already folded) and, when it has at least `MIN_SKELETON` consonants,
//! its consonant skeleton: Arabic and Latin letters mapped to one class alphabet (ب/b/p → b,
//! ت/ث/ط/t → t, ج/غ/g/j → g, خ/ق/ك/c/k/q → k, ش/ص/س/s → s, …), vowels, alef, ح/ع/ه and h dropped,
//! و/ي/w/y kept only first in a word, doubled classes merged. So الوفاق, "Al-Wifaq", "Alwefaq" and
//! "Wefaq" share `~wfk`; نورثغيت and "Northgate" share `~nrtgt`; "Rasikh" and "Rasekh" share
//! `~rsk`. Latin diacritics are dropped (NFD). Translations ("Dawn" for الفجر) have no common key:
//! they come from alias metadata given at upload. Skeletons shorter than three consonants are not
//! keys (too many words share them): such a name matches across scripts only through an alias.

use unicode_normalization::UnicodeNormalization;

use crate::normalize::{TokenizerOptions, normalize, terms};

/// Fewest consonant classes a skeleton needs to be a key.
pub const MIN_SKELETON: usize = 3;

/// Fewest letters a word needs to be part of a name on its own.
pub const MIN_WORD: usize = 3;

/// The keys of one normalised term (see the module note): `=term`, and `~skeleton` when long
/// enough; a Latin word glued to its article ("alwefaq", "elnour") also gets the skeleton of the
/// rest.
pub fn word_keys(term: &str) -> Vec<String> {
    let mut keys = vec![format!("={term}")];
    let mut push_skeleton = |word: &str| {
        let s = skeleton(word);
        if s.chars().count() >= MIN_SKELETON {
            let key = format!("~{s}");
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    };
    push_skeleton(term);
    if term.is_ascii()
        && let Some(rest) = term.strip_prefix("al").or_else(|| term.strip_prefix("el"))
        && rest.len() >= 4
    {
        push_skeleton(rest);
    }
    keys
}

/// The words of `text` a name may be made of, with each pair of neighbours also glued together
/// ("نورث غيت" is also نورثغيت, "Blue Water" also "bluewater"): normalised terms, Arabic prefixes
/// stripped, of at least `MIN_WORD` letters (a Latin article "al", "el" is not a name).
pub fn candidate_words(text: &str) -> Vec<String> {
    let normalized = normalize(text);
    let words: Vec<&str> = terms(&normalized, TokenizerOptions::default()).collect();
    let mut out: Vec<String> = words
        .iter()
        .filter(|w| w.chars().count() >= MIN_WORD)
        .map(|w| (*w).to_owned())
        .collect();
    for pair in words.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        // "al wefaq" glued is "alwefaq", whose own keys cover it already.
        if a.chars().count() >= 3 && b.chars().count() >= 2 {
            out.push(format!("{a}{b}"));
        }
    }
    out
}

/// Nouns after which an Arabic word is a name (شركة الفجر، بنك الوفاق), normalised.
const ARABIC_NAME_NOUNS: [&str; 11] = [
    "شركه",
    "بنك",
    "مصرف",
    "مستشفي",
    "مجموعه",
    "وزاره",
    "هيئه",
    "جامعه",
    "مؤسسه",
    "مركز",
    "مصنع",
];

/// The words of a query that look like a name, normalised: Latin words written with a capital
/// that are not the query's first word (an English question starts with a capital anyway), and
/// the Arabic word right after an organisation noun (`ARABIC_NAME_NOUNS`). Only a hint for
/// confidence ("the asked organisation is not in the library"), never for ranking.
pub fn name_like_words(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    let raw: Vec<&str> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, word) in raw.iter().enumerate() {
        let first = word.chars().next().unwrap_or(' ');
        if i > 0 && first.is_uppercase() && word.chars().count() >= 3 {
            for part in candidate_words(word) {
                if part.chars().count() >= 3 && !out.contains(&part) {
                    out.push(part);
                }
            }
        }
    }
    for name in arabic_names(query) {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The Arabic words of `text` right after an organisation noun (`ARABIC_NAME_NOUNS`: شركة الفجر،
/// بنك الوفاق), normalised.
pub fn arabic_names(text: &str) -> Vec<String> {
    let normalized = normalize(text);
    let words: Vec<&str> = terms(&normalized, TokenizerOptions::default()).collect();
    words
        .windows(2)
        .filter(|pair| ARABIC_NAME_NOUNS.contains(&pair[0]) && !pair[1].is_ascii())
        .map(|pair| pair[1].to_owned())
        .collect()
}

/// The consonant skeleton of a normalised word (see the module note); empty for other scripts.
pub fn skeleton(word: &str) -> String {
    let mut out = String::new();
    let mut first = true;
    for c in word.nfd() {
        let class = match c {
            'a' | 'e' | 'i' | 'o' | 'u' | 'h' | 'ا' | 'ء' | 'ئ' | 'ؤ' | 'ح' | 'ع' | 'ه' | 'ة' => {
                None
            }
            'w' | 'و' => first.then_some('w'),
            'y' | 'ي' | 'ى' => first.then_some('y'),
            'b' | 'p' | 'ب' | 'پ' => Some('b'),
            't' | 'ت' | 'ث' | 'ط' => Some('t'),
            'g' | 'j' | 'ج' | 'غ' | 'گ' => Some('g'),
            'c' | 'k' | 'q' | 'خ' | 'ق' | 'ك' => Some('k'),
            'd' | 'د' | 'ذ' | 'ض' => Some('d'),
            'z' | 'ز' | 'ظ' => Some('z'),
            's' | 'س' | 'ش' | 'ص' => Some('s'),
            'f' | 'v' | 'ف' | 'ڤ' => Some('f'),
            'l' | 'ل' => Some('l'),
            'm' | 'م' => Some('m'),
            'n' | 'ن' => Some('n'),
            'r' | 'ر' => Some('r'),
            'x' => {
                out.push('k');
                Some('s')
            }
            // Combining marks (Latin diacritics after NFD) are skipped without ending the start.
            c if ('\u{0300}'..='\u{036F}').contains(&c) => continue,
            _ => None,
        };
        first = false;
        if let Some(class) = class
            && !out.ends_with(class)
        {
            out.push(class);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_of(text: &str) -> Vec<String> {
        candidate_words(text)
            .iter()
            .flat_map(|w| word_keys(w))
            .collect()
    }

    fn shares(a: &str, b: &str) -> bool {
        let (a, b) = (keys_of(a), keys_of(b));
        a.iter().any(|k| k.starts_with('~') && b.contains(k))
    }

    #[test]
    fn transliterations_share_a_skeleton() {
        for (arabic, latin) in [
            ("بنك الوفاق", "Al-Wifaq"),
            ("الوفاق", "Alwefaq"),
            ("نورثغيت", "Northgate"),
            ("نورث غيت", "Northgate"),
            ("مصرف الراسخ", "Masraf Al-Rasekh"),
            ("شركة الفجر", "Al Fajr"),
            ("النخبة", "Nukhba"),
            ("كيستريل", "Kestrel"),
            ("بلو ووتر", "Bluewater"),
            ("هاربر ترست", "Harbor Trust"),
        ] {
            assert!(shares(arabic, latin), "{arabic} / {latin}");
        }
    }

    #[test]
    fn different_names_do_not() {
        assert!(!shares("بنك الوفاق", "Northgate"));
        assert!(!shares("الراسخ", "Kestrel"));
        assert!(!shares("Eastbridge", "Northgate"));
    }

    #[test]
    fn diacritics_and_case_do_not_matter() {
        assert_eq!(skeleton(&normalize("Rayyān")), skeleton("rayyan"));
        assert_eq!(skeleton(&normalize("NORTHGATE")), "nrtgt");
    }

    #[test]
    fn short_skeletons_are_not_keys() {
        assert_eq!(word_keys("ريان"), ["=ريان"]);
    }

    #[test]
    fn name_like_words_of_a_query() {
        assert_eq!(
            name_like_words("What is the card fee at Eastbridge Bank?"),
            ["eastbridge", "bank"]
        );
        assert_eq!(name_like_words("كم رسوم البطاقة في بنك الشروق؟"), ["شروق"]);
        assert!(name_like_words("What is the cut-off time for transfers?").is_empty());
    }
}

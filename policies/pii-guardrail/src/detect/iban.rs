//! IBANs (ISO 13616): country code, two check digits, the country's BBAN; total length fixed per
//! country; valid when the ISO 7064 MOD 97-10 remainder is 1. Written compactly or in groups of
//! four separated by single spaces, in either case.
//!
//! Lengths: SWIFT IBAN Registry (release 100, 2025; as tabulated in the iban-ex project's
//! `iban_registry_full.json` and Wikipedia's "International Bank Account Number" article).

use std::ops::Range;

/// Country code and IBAN length, SWIFT IBAN Registry.
const LENGTHS: &[(&[u8; 2], usize)] = &[
    (b"AD", 24),
    (b"AE", 23),
    (b"AL", 28),
    (b"AT", 20),
    (b"AZ", 28),
    (b"BA", 20),
    (b"BE", 16),
    (b"BG", 22),
    (b"BH", 22),
    (b"BI", 27),
    (b"BR", 29),
    (b"BY", 28),
    (b"CH", 21),
    (b"CR", 22),
    (b"CY", 28),
    (b"CZ", 24),
    (b"DE", 22),
    (b"DJ", 27),
    (b"DK", 18),
    (b"DO", 28),
    (b"EE", 20),
    (b"EG", 29),
    (b"ES", 24),
    (b"FI", 18),
    (b"FK", 18),
    (b"FO", 18),
    (b"FR", 27),
    (b"GB", 22),
    (b"GE", 22),
    (b"GI", 23),
    (b"GL", 18),
    (b"GR", 27),
    (b"GT", 28),
    (b"HN", 28),
    (b"HR", 21),
    (b"HU", 28),
    (b"IE", 22),
    (b"IL", 23),
    (b"IQ", 23),
    (b"IS", 26),
    (b"IT", 27),
    (b"JO", 30),
    (b"KW", 30),
    (b"KZ", 20),
    (b"LB", 28),
    (b"LC", 32),
    (b"LI", 21),
    (b"LT", 20),
    (b"LU", 20),
    (b"LV", 21),
    (b"LY", 25),
    (b"MC", 27),
    (b"MD", 24),
    (b"ME", 22),
    (b"MK", 19),
    (b"MN", 20),
    (b"MR", 27),
    (b"MT", 31),
    (b"MU", 30),
    (b"NI", 28),
    (b"NL", 18),
    (b"NO", 15),
    (b"OM", 23),
    (b"PK", 24),
    (b"PL", 28),
    (b"PS", 29),
    (b"PT", 25),
    (b"QA", 29),
    (b"RO", 24),
    (b"RS", 22),
    (b"RU", 33),
    (b"SA", 24),
    (b"SC", 31),
    (b"SD", 18),
    (b"SE", 24),
    (b"SI", 19),
    (b"SK", 24),
    (b"SM", 27),
    (b"SO", 23),
    (b"ST", 25),
    (b"SV", 28),
    (b"TL", 23),
    (b"TN", 24),
    (b"TR", 26),
    (b"UA", 29),
    (b"VA", 22),
    (b"VG", 24),
    (b"XK", 20),
    (b"YE", 30),
];

/// The longest IBAN (Russia, 33) written in groups of four.
pub const MAX_PRINTED: usize = 33 + 8;

fn expected_length(country: [u8; 2]) -> Option<usize> {
    let upper = [
        country[0].to_ascii_uppercase(),
        country[1].to_ascii_uppercase(),
    ];
    LENGTHS.iter().find(|(c, _)| **c == upper).map(|&(_, n)| n)
}

/// IBANs starting in `region` of `text`.
pub fn find(text: &str, region: Range<usize>, out: &mut Vec<Range<usize>>) {
    let b = text.as_bytes();
    let mut i = region.start;
    while i < region.end && i + 4 <= b.len() {
        // Cheapest and rarest first: two digits after two letters, at the start of a word.
        let head = b[i + 2].is_ascii_digit()
            && b[i + 3].is_ascii_digit()
            && b[i].is_ascii_alphabetic()
            && b[i + 1].is_ascii_alphabetic()
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if let Some(len) = head.then(|| expected_length([b[i], b[i + 1]])).flatten()
            && let Some(end) = take(b, i, len)
        {
            out.push(i..end);
            i = end;
            continue;
        }
        i += 1;
    }
}

/// Collects `len` alphanumerics from `start`, allowing one space between characters, and checks
/// the boundary after and the checksum. Returns the end of the IBAN.
fn take(b: &[u8], start: usize, len: usize) -> Option<usize> {
    let mut chars = Vec::with_capacity(len);
    let mut at = start;
    while chars.len() < len {
        match b.get(at) {
            Some(c) if c.is_ascii_alphanumeric() => {
                chars.push(c.to_ascii_uppercase());
                at += 1;
            }
            Some(b' ')
                if !chars.is_empty() && b.get(at + 1).is_some_and(u8::is_ascii_alphanumeric) =>
            {
                at += 1;
            }
            _ => return None,
        }
    }
    if b.get(at).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    // Letters are allowed in the BBAN but the check digits are digits.
    mod97(&chars).then_some(at)
}

/// ISO 7064 MOD 97-10: move the first four characters to the end, letters count as 10..35.
fn mod97(chars: &[u8]) -> bool {
    let mut rem = 0u32;
    for &c in chars.iter().skip(4).chain(chars.iter().take(4)) {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ibans(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, 0..text.len(), &mut out);
        out.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn finds_compact_spaced_and_lowercase() {
        assert_eq!(
            ibans("to GB56HXDO88167774656119 please"),
            ["GB56HXDO88167774656119"]
        );
        assert_eq!(ibans("gb42nawi04454264788619"), ["gb42nawi04454264788619"]);
        assert_eq!(
            ibans("الآيبان SA03 8000 0000 6080 1016 7519 للتحويل"),
            ["SA03 8000 0000 6080 1016 7519"]
        );
        assert_eq!(
            ibans("AE070331234567890123456"),
            ["AE070331234567890123456"]
        );
    }

    #[test]
    fn rejects_bad_checksums_lengths_and_countries() {
        assert!(ibans("SA03 8000 0000 6080 1016 7518").is_empty());
        assert!(ibans("GB56HXDO8816777465611").is_empty());
        assert!(ibans("GB56HXDO881677746561190").is_empty());
        assert!(ibans("ZZ56HXDO88167774656119").is_empty());
    }
}

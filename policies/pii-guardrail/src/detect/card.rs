//! Payment card numbers (PANs): 12–19 digits, compact or in groups separated by single spaces or
//! dashes, with an issuer prefix of a known brand at one of that brand's lengths, and a valid Luhn
//! check digit. A Luhn-valid number with no brand prefix (an order number, say) is not a card.
//!
//! Prefix ranges and lengths: ISO/IEC 7812 issuer identification numbers as published by the
//! schemes and summarised in Wikipedia's "Payment card number" article (IIN ranges table).

use std::ops::Range;

use super::context::{Cue, Cues};
use super::digits::{Run, luhn_valid};

/// One brand's prefix range (compared on the first `digits` digits) and its lengths.
struct Brand {
    low: u32,
    high: u32,
    digits: usize,
    lengths: &'static [usize],
}

const fn brand(low: u32, high: u32, digits: usize, lengths: &'static [usize]) -> Brand {
    Brand {
        low,
        high,
        digits,
        lengths,
    }
}

const BRANDS: &[Brand] = &[
    // Visa.
    brand(4, 4, 1, &[13, 16, 19]),
    // Mastercard, 5-series and 2-series.
    brand(51, 55, 2, &[16]),
    brand(2221, 2720, 4, &[16]),
    // American Express.
    brand(34, 34, 2, &[15]),
    brand(37, 37, 2, &[15]),
    // Discover.
    brand(6011, 6011, 4, &[16, 17, 18, 19]),
    brand(644, 649, 3, &[16, 17, 18, 19]),
    brand(65, 65, 2, &[16, 17, 18, 19]),
    // UnionPay (incl. Discover co-branded 622126–622925).
    brand(62, 62, 2, &[16, 17, 18, 19]),
    // JCB, and the legacy JCB 15-digit prefixes 1800 and 2131.
    brand(3528, 3589, 4, &[16, 17, 18, 19]),
    brand(1800, 1800, 4, &[15]),
    brand(2131, 2131, 4, &[15]),
    // Diners Club International / Carte Blanche.
    brand(300, 305, 3, &[14, 16, 17, 18, 19]),
    brand(36, 36, 2, &[14, 16, 17, 18, 19]),
    brand(38, 39, 2, &[14, 16, 17, 18, 19]),
    // Maestro (50, 56–69) and Maestro UK.
    brand(50, 50, 2, &[12, 13, 14, 15, 16, 17, 18, 19]),
    brand(56, 69, 2, &[12, 13, 14, 15, 16, 17, 18, 19]),
    // Mir.
    brand(2200, 2204, 4, &[16, 17, 18, 19]),
    // Troy, RuPay, Verve prefixes overlap the above or are national; left out.
];

/// Longest printed card number: 19 digits in groups with 4 separators... or 6 single-digit gaps.
pub const MAX_PRINTED: usize = 19 + 6;

fn has_brand(digits: &str) -> bool {
    let n = digits.len();
    BRANDS.iter().any(|b| {
        b.lengths.contains(&n)
            && digits
                .get(..b.digits)
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|p| (b.low..=b.high).contains(&p))
    })
}

pub fn is_card_number(digits: &str) -> bool {
    (12..=19).contains(&digits.len()) && has_brand(digits) && luhn_valid(digits)
}

/// A Luhn-valid 12–19 digit number whose prefix is no known brand's still counts when the nearest
/// telling word is about cards (`card`, `cc`, `بطاقة`, `مدى`): issuers and test data use ranges
/// the table above does not list.
fn is_card_in_context(cues: &Cues<'_>, digits: &str, span: Range<usize>) -> bool {
    (12..=19).contains(&digits.len())
        && luhn_valid(digits)
        && (has_brand(digits) || cues.nearest(span) == Some(Cue::Card))
}

/// Cards in one numeric run: the longest window of groups from the run's start that is a card,
/// then the same after it.
pub fn find(cues: &Cues<'_>, run: &Run<'_>, out: &mut Vec<Range<usize>>) {
    if run.next_byte().is_some_and(|b| b.is_ascii_alphanumeric()) {
        return;
    }
    let n = run.groups().len();
    let mut i = 0;
    while i < n {
        let found = (i + 1..=n).rev().find(|&j| {
            let w = i..j;
            let separated_ok = run.separators(&w).all(|s| s == b" " || s == b"-");
            let digits = run.digits(w.clone());
            separated_ok
                && run.window_stands_alone(&w)
                && !(i == 0 && (run.plus || run.paren))
                && is_card_in_context(cues, digits, run.span(w.clone()))
        });
        match found {
            Some(j) => {
                out.push(run.span(i..j));
                i = j;
            }
            // A card starts its run or follows another card: the tail of a longer number
            // (an invalid IBAN's last groups, say) is not a card.
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::digits::runs;
    use super::*;

    fn cards(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let cues = Cues::new(text);
        for r in runs(text, 0..text.len()) {
            find(&cues, &r, &mut out);
        }
        out.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn finds_brands_compact_spaced_dashed() {
        assert_eq!(cards("visa 4111 1111 1111 1111."), ["4111 1111 1111 1111"]);
        assert_eq!(cards("mc 2223-0000-4841-0010"), ["2223-0000-4841-0010"]);
        assert_eq!(cards("amex 3782 822463 10005"), ["3782 822463 10005"]);
        assert_eq!(cards("jcb 3530111333300000"), ["3530111333300000"]);
        assert_eq!(cards("maestro 6759649826438453"), ["6759649826438453"]);
        assert_eq!(cards("discover 6011111111111117"), ["6011111111111117"]);
        assert_eq!(cards("unionpay 6200000000000005"), ["6200000000000005"]);
        assert_eq!(cards("diners 30569309025904"), ["30569309025904"]);
        assert_eq!(cards("بطاقتي ٤١١١١١١١١١١١١١١١"), Vec::<&str>::new()); // not normalised here
    }

    #[test]
    fn rejects_luhn_invalid_unbranded_and_glued() {
        assert!(cards("4111 1111 1111 1112").is_empty());
        // Luhn-valid but no brand starts with 9 or 7.
        assert!(cards("9111111111111111 7992739871300").is_empty());
        assert!(cards("4111111111111111abc").is_empty());
        assert!(cards("ref-4111111111111111x").is_empty());
        assert!(cards("+4111111111111111").is_empty());
    }

    #[test]
    fn unbranded_luhn_valid_numbers_need_a_card_word() {
        assert_eq!(
            cards("my card 3598899323053410 is lost"),
            ["3598899323053410"]
        );
        assert_eq!(
            cards("رقم بطاقة مدى 9682123456789011"),
            ["9682123456789011"]
        );
        assert!(cards("order 3598899323053410").is_empty());
    }

    #[test]
    fn two_cards_in_one_run() {
        assert_eq!(
            cards("4111111111111111 5555555555554444"),
            ["4111111111111111", "5555555555554444"]
        );
    }
}

//! National identity numbers: Saudi national id / iqama, UAE Emirates ID, Egyptian national
//! number, US social security number. All are fixed-length digit strings with internal structure;
//! each check below cites where its rule comes from.

use std::ops::Range;

use super::context::{Cue, Cues};
use super::digits::{Run, luhn_valid};

/// Saudi national id (starts with 1) or iqama (resident id, starts with 2): 10 digits, the last a
/// Luhn check digit over the first nine (digits in odd positions doubled, digit sums added). The
/// algorithm is the one implemented by the public Saudi-ID-Validator projects
/// (alhazmy13/Saudi-ID-Validator, malzaid0/saudi-id-validator-npm: `1000000008` valid,
/// `1000000000` not) and python-stdnum's `sa.nid` (Luhn). Written as one group of digits.
pub fn is_saudi_id(digits: &str) -> bool {
    digits.len() == 10 && matches!(digits.as_bytes()[0], b'1' | b'2') && luhn_valid(digits)
}

/// UAE Emirates ID: `784-YYYY-NNNNNNN-C`, 15 digits: 784 (the UAE's ISO 3166 numeric code), the
/// holder's birth year, a serial, and a Luhn check digit over all 15 digits.
pub fn is_emirates_id(digits: &str) -> bool {
    let year = digits.get(3..7).and_then(|y| y.parse::<u32>().ok());
    digits.len() == 15
        && digits.starts_with("784")
        && year.is_some_and(|y| (1900..=2099).contains(&y))
        && luhn_valid(digits)
}

/// Egyptian governorate codes (digits 8–9 of the national number), Civil Status Organization
/// list: 01 Cairo, 02 Alexandria, 03 Port Said, 04 Suez, 11 Damietta, 12 Dakahlia, 13 Sharqia,
/// 14 Qalyubia, 15 Kafr El Sheikh, 16 Gharbia, 17 Monufia, 18 Beheira, 19 Ismailia, 21 Giza,
/// 22 Beni Suef, 23 Fayoum, 24 Minya, 25 Assiut, 26 Sohag, 27 Qena, 28 Aswan, 29 Luxor,
/// 31 Red Sea, 32 New Valley, 33 Matrouh, 34 North Sinai, 35 South Sinai, 88 born abroad.
const EGYPT_GOVERNORATES: [u8; 28] = [
    1, 2, 3, 4, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21, 22, 23, 24, 25, 26, 27, 28, 29, 31, 32, 33,
    34, 35, 88,
];

/// Egyptian national number: 14 digits `C YYMMDD GG SSSS K` — century (2 = 1900s, 3 = 2000s),
/// birth date, governorate of birth, a serial whose last digit is odd for men, and a final digit
/// the Ministry of Interior computes. No algorithm for that digit is published (Luhn and the
/// circulating weighted mod-11 both fail on the published sample `29501023201952`), so it is not
/// checked: a valid date and governorate are what separate an id from 14 random digits (about 1 in
/// 100 random 14-digit strings starting with 2 or 3 passes).
pub fn is_egyptian_id(digits: &str) -> bool {
    let b = digits.as_bytes();
    if b.len() != 14 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let n = |r: Range<usize>| {
        digits
            .get(r)
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(0)
    };
    let century = match b[0] {
        b'2' => 1900,
        b'3' => 2000,
        _ => return false,
    };
    let governorate = n(7..9);
    valid_date(century + n(1..3), n(3..5), n(5..7))
        && u8::try_from(governorate).is_ok_and(|g| EGYPT_GOVERNORATES.contains(&g))
}

fn valid_date(year: u32, month: u32, day: u32) -> bool {
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// US SSN `AAA-GG-SSSS` (SSA, "Social Security Number Randomization", 2011): area not 000, 666 or
/// 900–999; group not 00; serial not 0000. The number from the 1938 Woolworth wallet insert,
/// 078-05-1120, is refused too.
pub fn is_ssn(digits: &str) -> bool {
    let n = |r: Range<usize>| digits.get(r).and_then(|s| s.parse::<u32>().ok());
    match (digits.len(), n(0..3), n(3..5), n(5..9)) {
        (9, Some(area), Some(group), Some(serial)) => {
            area != 0
                && area != 666
                && area < 900
                && group != 0
                && serial != 0
                && digits != "078051120"
        }
        _ => false,
    }
}

/// Finds ids in one numeric run of normalised `text`.
pub fn find(cues: &Cues<'_>, run: &Run<'_>, out: &mut Vec<(super::EntityKind, Range<usize>)>) {
    use super::EntityKind as K;
    if run.next_byte().is_some_and(|b| b.is_ascii_alphanumeric()) || run.plus || run.paren {
        return;
    }
    let n = run.groups().len();
    let all = 0..n;
    let lengths = run.lengths(&all);
    // Emirates ID: 784-YYYY-NNNNNNN-C or 15 digits in one group.
    for i in 0..n {
        let w4 = i..(i + 4).min(n);
        let dashed = w4.len() == 4
            && run.lengths(&w4) == [3, 4, 7, 1]
            && run.separators(&w4).all(|s| s == b"-" || s == b" ");
        if dashed && run.window_stands_alone(&w4) && is_emirates_id(run.digits(w4.clone())) {
            out.push((K::EmiratesId, run.span(w4)));
        }
    }
    for i in 0..n {
        let w = i..i + 1;
        if !run.window_stands_alone(&w) {
            continue;
        }
        let digits = run.digits(w.clone());
        let span = run.span(w);
        let nearest = std::cell::OnceCell::new();
        let cue = || *nearest.get_or_init(|| cues.nearest(span.clone()));
        if is_emirates_id(digits) && cue() != Some(Cue::Other) {
            out.push((K::EmiratesId, span));
        } else if is_egyptian_id(digits) && cue() != Some(Cue::Other) {
            out.push((K::EgyptianId, span));
        } else if is_saudi_id(digits)
            && !run.in_code
            && !matches!(cue(), Some(Cue::Other | Cue::Phone | Cue::Ssn))
        {
            out.push((K::SaudiId, span));
        } else if digits.len() == 9
            && is_ssn(digits)
            && !run.in_code
            && n == 1
            && cue() == Some(Cue::Ssn)
        {
            out.push((K::UsSsn, span));
        }
    }
    // SSN written in three groups: dashes alone, spaces or dots with an SSN cue nearby.
    if lengths == [3, 2, 4] && !run.in_code {
        let digits = run.digits(all.clone());
        let span = run.span(all.clone());
        let dashed = run.separators(&all).all(|s| s == b"-");
        let other = run.separators(&all).all(|s| s == b" " || s == b".")
            && cues.nearest(span.clone()) == Some(Cue::Ssn);
        if (dashed || other) && is_ssn(digits) {
            out.push((K::UsSsn, span));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saudi_ids() {
        assert!(is_saudi_id("1000000008"));
        assert!(!is_saudi_id("1000000000"));
        assert!(!is_saudi_id("3000000008")); // neither citizen nor resident
        assert!(is_saudi_id("2000000006"));
        assert!(!is_saudi_id("100000008"));
    }

    #[test]
    fn emirates_ids() {
        assert!(is_emirates_id("784198012345678"));
        assert!(!is_emirates_id("784198012345679"));
        assert!(!is_emirates_id("785198012345673"));
        assert!(!is_emirates_id("784300012345671")); // year 3000
    }

    #[test]
    fn egyptian_ids() {
        assert!(is_egyptian_id("29501023201952"));
        assert!(is_egyptian_id("30002290101234")); // 29 Feb 2000, Cairo
        assert!(!is_egyptian_id("29902290101234")); // 29 Feb 1999 did not exist
        assert!(!is_egyptian_id("29513010101234")); // month 13
        assert!(!is_egyptian_id("29501020501234")); // governorate 05 does not exist
        assert!(!is_egyptian_id("19501023201952")); // century 1
        assert!(!is_egyptian_id("2950102320195")); // 13 digits
    }

    #[test]
    fn ssns() {
        assert!(is_ssn("460899847"));
        assert!(is_ssn("853371694"));
        assert!(!is_ssn("000123456"));
        assert!(!is_ssn("666123456"));
        assert!(!is_ssn("912345678"));
        assert!(!is_ssn("123004567"));
        assert!(!is_ssn("123450000"));
        assert!(!is_ssn("078051120"));
    }
}

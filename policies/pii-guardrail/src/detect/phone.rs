//! Phone numbers. A phone number has no checksum, so the detector asks for a reason to believe a
//! digit run is one:
//!
//! 1. International form: `+` (or `00` before a Gulf or Egyptian country code) and 8–15 digits
//!    (ITU-T E.164); for Saudi Arabia (+966), the UAE (+971), Qatar (+974), Kuwait (+965), Bahrain
//!    (+973), Oman (+968) and Egypt (+20) the national part must have that country's length.
//! 2. Gulf or Egyptian mobile numbers in national form: `05` + 8 digits (Saudi Arabia, UAE),
//!    `010`/`011`/`012`/`015` + 8 digits (Egypt).
//! 3. North American format with separators: `(212) 555-0123`, `212-555-0123`, `212.555.0123`.
//! 4. Anything else of 7–13 digits only when the nearest telling word is a phone word
//!    (`phone`, `call`, `fax`, `جوال`, `اتصل`, …, see `context`).
//!
//! In every case: no date inside (`2015-12-22`, `22.12.2015`), no time right after, not part of a
//! code (`INV-2024-…`), and a nearby "order"/"invoice"/"id" word vetoes rules 2–3. An extension
//! (`x4587`, `ext. 12`) belongs to the number.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use super::context::{Cue, Cues};
use super::digits::{MAX_GROUPS, Run};

/// National significant number lengths after the country code (trunk `0` removed), from the ITU
/// national numbering plans of each country.
const COUNTRIES: &[(&str, Range<usize>)] = &[
    ("966", 8..10), // Saudi Arabia: 9 digits mobile (5…), 8 landline (1x…), 9 toll/unified (8…, 9…)
    ("971", 8..10), // UAE: 9 digits mobile (5…), 8 landline
    ("974", 8..9),  // Qatar
    ("965", 8..9),  // Kuwait
    ("973", 8..9),  // Bahrain
    ("968", 8..9),  // Oman
    ("20", 9..11),  // Egypt: 10 digits mobile (1…), 9 Cairo landline (2…), 8–9 elsewhere
];

/// Longest printed phone number the detector accepts: 15 digits, up to 11 separators of up to 3
/// bytes, a `+`, and an extension (`ext. ` + 6 digits).
pub const MAX_PRINTED: usize = 15 + 11 * 3 + 1 + 11;

pub fn find(cues: &Cues<'_>, run: &Run<'_>, out: &mut Vec<Range<usize>>) {
    if run.in_code {
        return;
    }
    let n = run.groups().len();
    let mut i = 0;
    while i < n {
        let found = (i + 1..=n)
            .rev()
            .find_map(|j| check(cues, run, i..j).map(|span| (j, span)));
        match found {
            Some((j, span)) => {
                out.push(span);
                i = j;
            }
            None => i += 1,
        }
    }
}

fn check(cues: &Cues<'_>, run: &Run<'_>, w: Range<usize>) -> Option<Range<usize>> {
    if !run.window_stands_alone(&w) {
        return None;
    }
    let at_end = w.end == run.groups().len();
    let lengths = run.lengths(&w);
    let mut seps_buf: [&[u8]; MAX_GROUPS] = [b""; MAX_GROUPS];
    let mut n_seps = 0;
    for (slot, sep) in seps_buf.iter_mut().zip(run.separators(&w)) {
        *slot = sep;
        n_seps += 1;
    }
    let seps = &seps_buf[..n_seps];
    let plus = w.start == 0 && run.plus;
    let paren = w.start == 0 && run.paren;
    // A trunk `(0)` after the country code does not count.
    let trunk = (1..lengths.len()).find(|&k| {
        lengths[k] == 1
            && seps[k - 1].ends_with(b"(")
            && seps.get(k).is_some_and(|s| s.starts_with(b")"))
            && run.digits(w.start + k..w.start + k + 1) == "0"
    });
    let digits = match trunk {
        Some(k) => {
            let mut digits = run.digits(w.clone()).to_string();
            digits.remove(lengths[..k].iter().sum());
            Cow::Owned(digits)
        }
        None => Cow::Borrowed(run.digits(w.clone())),
    };
    if has_date(run, &w) {
        return None;
    }
    let mut span = run.span(w.clone());
    let bytes = cues.text().as_bytes();
    if at_end {
        match bytes.get(span.end) {
            Some(b':') if bytes.get(span.end + 1).is_some_and(u8::is_ascii_digit) => return None,
            Some(c) if c.is_ascii_alphanumeric() => span.end = extension(bytes, span.end)?,
            _ => {}
        }
    }
    // Asked up to three times below, answered once.
    let nearest = OnceCell::new();
    let cue = || *nearest.get_or_init(|| cues.nearest(span.clone()));
    let count = digits.len();
    // 1. International.
    if plus {
        return international(&digits, true).then_some(span);
    }
    if let Some(rest) = digits.strip_prefix("00")
        && international(rest, false)
    {
        return Some(span);
    }
    let vetoed = || matches!(cue(), Some(Cue::Other | Cue::Id | Cue::Ssn));
    // 2. Gulf and Egyptian mobiles.
    let gulf = count == 10 && digits.starts_with("05");
    let egypt = count == 11
        && ["010", "011", "012", "015"]
            .iter()
            .any(|p| digits.starts_with(p));
    if (gulf || egypt) && !vetoed() {
        return Some(span);
    }
    // 3. North American format with separators.
    let nanp_dashed = lengths == [3, 3, 4]
        && !paren
        && seps.iter().all(|s| *s == b"-" || *s == b".")
        && seps.first() == seps.get(1);
    let nanp_paren = paren && lengths == [3, 3, 4] && matches!(seps.first(), Some(&(b")" | b") ")));
    if (nanp_dashed || nanp_paren) && nanp(&digits) && !vetoed() {
        return Some(span);
    }
    // 4. A phone word nearby.
    let short_groups = lengths
        .iter()
        .enumerate()
        .filter(|&(k, &l)| l < 2 && Some(k) != trunk)
        .count();
    ((7..=13).contains(&count) && short_groups == 0 && cue() == Some(Cue::Phone)).then_some(span)
}

/// `+CC…` or `00CC…`: E.164 length; Gulf and Egyptian numbers must have their national length.
/// Other country codes are only accepted after a `+`.
fn international(digits: &str, plus: bool) -> bool {
    if !(8..=15).contains(&digits.len()) || digits.starts_with('0') {
        return false;
    }
    for (code, national) in COUNTRIES {
        if let Some(rest) = digits.strip_prefix(code) {
            let rest = rest.strip_prefix('0').unwrap_or(rest);
            return national.contains(&rest.len());
        }
    }
    plus
}

/// NANP: area code and exchange start with 2–9.
fn nanp(digits: &str) -> bool {
    let b = digits.as_bytes();
    b.len() == 10 && (b'2'..=b'9').contains(&b[0]) && (b'2'..=b'9').contains(&b[3])
}

/// An extension right after the number: `x123`, `ext123`, `ext. 123` (1–6 digits). Returns the
/// new end, or `None` when the number runs into some other word.
fn extension(b: &[u8], end: usize) -> Option<usize> {
    let rest = &b[end..];
    let lower = |k: usize| rest.get(k).map(u8::to_ascii_lowercase);
    let mut at = if lower(0) == Some(b'x') {
        1
    } else if lower(0) == Some(b'e') && lower(1) == Some(b'x') && lower(2) == Some(b't') {
        let mut k = 3;
        if rest.get(k) == Some(&b'.') {
            k += 1;
        }
        if rest.get(k) == Some(&b' ') {
            k += 1;
        }
        k
    } else {
        return None;
    };
    let digits_start = at;
    while rest.get(at).is_some_and(u8::is_ascii_digit) && at - digits_start < 6 {
        at += 1;
    }
    let ok = at > digits_start && !rest.get(at).is_some_and(u8::is_ascii_alphanumeric);
    ok.then_some(end + at)
}

/// Whether three consecutive groups of the window form a calendar date (`YYYY-MM-DD`,
/// `DD-MM-YYYY`, `DD.MM.YYYY`, `MM/DD/YYYY` never joins a run).
fn has_date(run: &Run<'_>, w: &Range<usize>) -> bool {
    let lengths = run.lengths(w);
    (0..lengths.len().saturating_sub(2)).any(|k| {
        let g = |d: usize| {
            run.digits(w.start + k + d..w.start + k + d + 1)
                .parse::<u32>()
                .unwrap_or(0)
        };
        let seps_ok = run.separator(w.start + k) == run.separator(w.start + k + 1)
            && matches!(run.separator(w.start + k), b"-" | b".");
        let year = |y: u32| (1900..=2099).contains(&y);
        let ymd = lengths[k..k + 3] == [4, 2, 2]
            && year(g(0))
            && (1..=12).contains(&g(1))
            && (1..=31).contains(&g(2));
        let dmy = lengths[k..k + 3] == [2, 2, 4]
            && (1..=31).contains(&g(0))
            && (1..=12).contains(&g(1))
            && year(g(2));
        seps_ok && (ymd || dmy)
    })
}

#[cfg(test)]
mod tests {
    use super::super::digits::runs;
    use super::*;

    fn phones(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let cues = Cues::new(text);
        for r in runs(text, 0..text.len()) {
            find(&cues, &r, &mut out);
        }
        out.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn international_numbers() {
        assert_eq!(phones("ring +966 50 123 4567 now"), ["+966 50 123 4567"]);
        assert_eq!(phones("+971-50-123-4567"), ["+971-50-123-4567"]);
        assert_eq!(phones("+974 5512 3456"), ["+974 5512 3456"]);
        assert_eq!(phones("+20 100 123 4567"), ["+20 100 123 4567"]);
        assert_eq!(phones("00966501234567"), ["00966501234567"]);
        assert_eq!(phones("+46 (0)8 928 571 38"), ["+46 (0)8 928 571 38"]);
        assert_eq!(phones("+1-903-140-4508x769"), ["+1-903-140-4508x769"]);
        // Wrong national length for the Gulf code.
        assert!(phones("+966 50 123 45").is_empty());
        assert!(phones("+974 5512 34567").is_empty());
    }

    #[test]
    fn gulf_and_egyptian_national_mobiles() {
        assert_eq!(phones("رقمي 0501234567"), ["0501234567"]);
        assert_eq!(phones("050-123-4567"), ["050-123-4567"]);
        assert_eq!(phones("0101 234 5678"), ["0101 234 5678"]);
        assert_eq!(phones("(050) 123 4567"), ["(050) 123 4567"]);
    }

    #[test]
    fn context_numbers() {
        assert_eq!(phones("Phone: 0490 75 40 81"), ["0490 75 40 81"]);
        assert_eq!(phones("Fax: 9498777106"), ["9498777106"]);
        assert_eq!(phones("هاتف المكتب ٤٤٥٥٦٦٧٧"), Vec::<&str>::new()); // not normalised here
        assert_eq!(phones("هاتف المكتب 44556677"), ["44556677"]);
        assert_eq!(phones("(37) 788-063-Office"), ["(37) 788-063"]);
    }

    #[test]
    fn look_alikes_are_not_phones() {
        assert!(phones("Date: 1978-04-13 12:20:39 Phone: none").is_empty());
        assert!(phones("order 0501234567").is_empty());
        assert!(phones("رقم الطلب 0501234567").is_empty());
        assert!(phones("INV-2024-0501234567").is_empty());
        assert!(phones("55470 72 Acheron Road").is_empty());
        assert!(phones("random 1234567890 here").is_empty());
        assert!(phones("call me on 22.12.2015").is_empty());
        assert!(phones("12345678x").is_empty());
        assert!(phones("+12 34").is_empty());
    }
}

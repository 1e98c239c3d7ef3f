//! Numeric runs: digit groups joined by the separators people type between them
//! (`050 123 4567`, `4111-1111-1111-1111`, `+46 (0)8 928 571 38`, `03.93.92.16.85`), the shared
//! raw material of the card, phone and id detectors, plus the Luhn check several of them use.

use std::cell::OnceCell;
use std::ops::Range;

/// Most groups and digits one run collects; longer runs are cut (no entity is that long).
pub const MAX_GROUPS: usize = 12;
const MAX_DIGITS: usize = 40;

/// Separators allowed between two digit groups (parentheses belong to phone numbers).
const SEPARATORS: [&[u8]; 9] = [b" ", b"-", b".", b" - ", b"(", b")", b" (", b") ", b")-"];

/// A run of digit groups in normalised text.
#[derive(Debug, Clone)]
pub struct Run<'t> {
    text: &'t [u8],
    /// Byte ranges of the digit groups: the first `count` (a run is scanned on the stack; no
    /// allocation per run).
    group_buf: [Range<usize>; MAX_GROUPS],
    count: usize,
    /// The digits of every group, concatenated on the first [`Run::digits`], so a window's
    /// digits are a slice of them.
    all_digits: OnceCell<String>,
    /// Group `k`'s digits are `all_digits[offsets[k]..offsets[k + 1]]`.
    offsets: [usize; MAX_GROUPS + 1],
    /// Group `k` has `lengths[k]` digits (the first `groups.len()` entries).
    lengths: [usize; MAX_GROUPS],
    /// The run starts with `+` (international phone number).
    pub plus: bool,
    /// The run starts with `(` (an area code in parentheses).
    pub paren: bool,
    /// The run follows `letters-`, `letters_`, `letters/` or `#`: part of a code such as
    /// `INV-2024-0501234567`, not a number on its own.
    pub in_code: bool,
}

impl<'t> Run<'t> {
    /// Byte ranges of the digit groups.
    pub fn groups(&self) -> &[Range<usize>] {
        self.group_buf.get(..self.count).unwrap_or(&[])
    }

    /// The digits of groups `groups` concatenated (empty for groups the run does not have).
    pub fn digits(&self, groups: Range<usize>) -> &str {
        let all = self.all_digits.get_or_init(|| {
            let mut all = String::with_capacity(self.offsets[self.groups().len()]);
            for g in self.groups() {
                all.extend(self.text[g.clone()].iter().map(|&c| char::from(c)));
            }
            all
        });
        self.offsets
            .get(groups.start)
            .zip(self.offsets.get(groups.end))
            .filter(|_| groups.end <= self.groups().len())
            .and_then(|(&from, &to)| all.get(from..to))
            .unwrap_or("")
    }

    /// The separator bytes between group `k` and group `k + 1`.
    pub fn separator(&self, k: usize) -> &'t [u8] {
        let groups = self.groups();
        match (groups.get(k), groups.get(k + 1)) {
            (Some(a), Some(b)) => &self.text[a.end..b.start],
            _ => b"",
        }
    }

    /// The byte span of groups `groups` (including a leading `+` or `(` for the first group).
    pub fn span(&self, groups: Range<usize>) -> Range<usize> {
        let first = self.groups().get(groups.start).map_or(0, |g| g.start);
        let last = groups
            .end
            .checked_sub(1)
            .and_then(|i| self.groups().get(i))
            .map_or(first, |g| g.end);
        let start = if groups.start == 0 && (self.plus || self.paren) {
            first - 1
        } else {
            first
        };
        start..last
    }

    /// The byte right after the run, if any.
    pub fn next_byte(&self) -> Option<u8> {
        self.groups()
            .last()
            .and_then(|g| self.text.get(g.end).copied())
    }

    /// Whether groups `groups` can stand alone: the run's own ends, or a space between it and
    /// the neighbouring group (so `a-b` is never split but `a b` may be two numbers).
    pub fn window_stands_alone(&self, groups: &Range<usize>) -> bool {
        let left = groups.start == 0 || self.separator(groups.start - 1) == b" ";
        let right = groups.end == self.groups().len() || self.separator(groups.end - 1) == b" ";
        left && right
    }

    /// The separators inside groups `groups`.
    pub fn separators(&self, groups: &Range<usize>) -> impl Iterator<Item = &'t [u8]> + '_ {
        (groups.start..groups.end.saturating_sub(1)).map(|k| self.separator(k))
    }

    /// Group lengths of `groups` (empty for groups the run does not have).
    pub fn lengths(&self, groups: &Range<usize>) -> &[usize] {
        self.lengths[..self.groups().len()]
            .get(groups.clone())
            .unwrap_or(&[])
    }
}

/// The length of the separator at `at` of `b` that a digit follows, if any. At most one can: of
/// two separators that both match, one is a prefix of the other, and the longer one's next byte
/// is no digit.
fn separator_at(b: &[u8], at: usize) -> Option<usize> {
    if !matches!(b.get(at), Some(b' ' | b'-' | b'.' | b'(' | b')')) {
        return None;
    }
    SEPARATORS
        .iter()
        .find(|sep| {
            sep.iter()
                .enumerate()
                .all(|(k, &c)| b.get(at + k) == Some(&c))
                && b.get(at + sep.len()).is_some_and(u8::is_ascii_digit)
        })
        .map(|sep| sep.len())
}

/// Finds every numeric run starting in `region` of `text`. A run starts at a digit that does not follow a letter or a
/// digit and ends at a digit; a run that runs into a letter (`12ab`) is still reported, the
/// detectors check [`Run::next_byte`].
pub fn runs(text: &str, region: Range<usize>) -> impl Iterator<Item = Run<'_>> {
    let b = text.as_bytes();
    let mut i = region.start;
    std::iter::from_fn(move || {
        while i < region.end.min(b.len()) {
            if !b[i].is_ascii_digit() {
                i += 1;
                continue;
            }
            let prev = i.checked_sub(1).map(|p| b[p]);
            if prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == b'_') {
                // Part of a word or an identifier: skip its digits.
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                continue;
            }
            let before = |k: usize| i.checked_sub(k).map(|p| b[p]);
            let plus = prev == Some(b'+') && !before(2).is_some_and(|p| p.is_ascii_alphanumeric());
            let paren = prev == Some(b'(') && !before(2).is_some_and(|p| p.is_ascii_alphanumeric());
            let in_code = prev == Some(b'#')
                || (matches!(prev, Some(b'-' | b'_' | b'/'))
                    && before(2).is_some_and(|p| p.is_ascii_alphanumeric()));
            let mut run = Run {
                text: b,
                group_buf: [const { 0..0 }; MAX_GROUPS],
                count: 0,
                all_digits: OnceCell::new(),
                offsets: [0; MAX_GROUPS + 1],
                lengths: [0; MAX_GROUPS],
                plus,
                paren,
                in_code,
            };
            let mut digits = 0;
            let mut at = i;
            while run.count < MAX_GROUPS {
                let start = at;
                while at < b.len() && b[at].is_ascii_digit() {
                    at += 1;
                }
                let k = run.count;
                digits += at - start;
                run.group_buf[k] = start..at;
                run.lengths[k] = at - start;
                run.offsets[k + 1] = run.offsets[k] + (at - start);
                run.count += 1;
                if run.count >= MAX_GROUPS || digits >= MAX_DIGITS {
                    break;
                }
                match separator_at(b, at) {
                    Some(len) => at += len,
                    None => break,
                }
            }
            // Skip the rest of an over-long run so it does not start another.
            let mut resume = at;
            while resume < b.len() && b[resume].is_ascii_digit() {
                resume += 1;
            }
            i = resume.max(i + 1);
            return Some(run);
        }
        None
    })
}

/// The Luhn (mod 10) check over ASCII digits, as used by payment cards (ISO/IEC 7812), Saudi
/// national/iqama numbers and Emirates ids.
pub fn luhn_valid(digits: &str) -> bool {
    let mut sum = 0u32;
    let mut count = 0;
    for (i, c) in digits.bytes().rev().enumerate() {
        if !c.is_ascii_digit() {
            return false;
        }
        let mut d = u32::from(c - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
        count += 1;
    }
    count > 1 && sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_runs(text: &str) -> Vec<Run<'_>> {
        runs(text, 0..text.len()).collect()
    }

    #[test]
    fn groups_and_separators() {
        let rs = all_runs("call +46 (0)8 928 571 38 now");
        assert_eq!(rs.len(), 1);
        let r = &rs[0];
        assert!(r.plus);
        assert_eq!(r.digits(0..r.groups().len()), "460892857138");
        assert_eq!(r.digits(2..4), "8928");
        assert_eq!(r.lengths(&(2..4)), [1, 3]);
        assert_eq!(r.digits(3..9), "");
        assert_eq!(r.lengths(&(3..9)), [0usize; 0]);
        assert_eq!(r.separator(0), b" (");
        assert_eq!(
            &"call +46 (0)8 928 571 38 now"[r.span(0..r.groups().len())],
            "+46 (0)8 928 571 38"
        );
    }

    #[test]
    fn words_with_digits_are_not_runs() {
        assert!(all_runs("abc123 x4587 v2").is_empty());
        assert!(all_runs("INV-2024-0501234567")[0].in_code);
    }

    #[test]
    fn sentence_end_is_not_a_separator_with_a_space() {
        let rs = all_runs("0501234567. 123");
        assert_eq!(rs.len(), 2);
    }

    #[test]
    fn luhn() {
        assert!(luhn_valid("4111111111111111"));
        assert!(!luhn_valid("4111111111111112"));
        assert!(luhn_valid("1000000008"));
        assert!(!luhn_valid("1000000000"));
    }
}

//! E-mail addresses: `local@domain.tld`, a pragmatic subset of RFC 5322 addr-spec (no quoted
//! local parts, no IP literals): local part of `A-Z a-z 0-9 . _ % + - '`, not starting or ending
//! with a dot and without `..`; a domain of at least two labels of letters, digits and inner
//! hyphens; a top-level label of two or more letters.

use std::ops::Range;

/// RFC 5321 limits.
pub const MAX_LOCAL: usize = 64;
pub const MAX_ADDRESS: usize = 254;

fn local_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-' | b'\'')
}

fn domain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

/// Addresses whose `@` lies in `region` of `text`.
pub fn find(text: &str, region: Range<usize>, out: &mut Vec<Range<usize>>) {
    let b = text.as_bytes();
    let mut from = region.start;
    while let Some(rel) = b
        .get(from..region.end)
        .and_then(|s| s.iter().position(|&c| c == b'@'))
    {
        let at = from + rel;
        from = at + 1;
        // Local part: back from the `@`.
        let mut start = at;
        while start > 0 && local_byte(b[start - 1]) && at - start < MAX_LOCAL {
            start -= 1;
        }
        // Leading punctuation is not part of the address (`'x@y.z'`, `(x@y.z)`).
        while start < at && matches!(b[start], b'.' | b'\'' | b'-' | b'+') {
            start += 1;
        }
        if start == at || b[at - 1] == b'.' || b[start..at].windows(2).any(|w| w == b"..") {
            continue;
        }
        // Domain: forward from the `@`; a trailing dot or hyphen ends a sentence, not the domain.
        let mut end = at + 1;
        while end < b.len() && domain_byte(b[end]) && end - start < MAX_ADDRESS {
            end += 1;
        }
        while end > at + 1 && matches!(b[end - 1], b'.' | b'-') {
            end -= 1;
        }
        let domain = &text[at + 1..end];
        if valid_domain(domain) {
            out.push(start..end);
            from = end;
        }
    }
}

fn valid_domain(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() < 2 {
        return false;
    }
    let labels_ok = labels
        .iter()
        .all(|l| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-'));
    let tld = labels.last().copied().unwrap_or("");
    labels_ok && tld.len() >= 2 && tld.bytes().all(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emails(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(text, 0..text.len(), &mut out);
        out.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn finds_addresses() {
        assert_eq!(
            emails("mail UtaKortig@jourrapide.com."),
            ["UtaKortig@jourrapide.com"]
        );
        assert_eq!(
            emails("راسلني على ahmed.ali+work@mail.example.sa، شكراً"),
            ["ahmed.ali+work@mail.example.sa"]
        );
        assert_eq!(emails("(a_b@x-y.co.uk)"), ["a_b@x-y.co.uk"]);
    }

    #[test]
    fn rejects_look_alikes() {
        assert!(emails("user@localhost").is_empty());
        assert!(emails("@handle on twitter").is_empty());
        assert!(emails("a..b@x.com").is_empty());
        assert!(emails("x@y.c0m").is_empty());
        assert!(emails("price 5@3.50").is_empty());
        assert!(emails("x@-y.com").is_empty());
    }
}

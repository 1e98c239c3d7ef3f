//! IP addresses: dotted-quad IPv4 (each part 0–255, at most three digits) and IPv6 in any form
//! `std::net::Ipv6Addr` parses (full, `::`-compressed, with an embedded IPv4 tail). A dotted quad
//! that is part of a longer dotted number (`1.2.3.4.5`, a version string) is not an address.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::ops::Range;

use super::context::{Cue, Cues};

/// Addresses starting in `region` of `text`.
pub fn find(cues: &Cues<'_>, region: Range<usize>, out: &mut Vec<Range<usize>>) {
    let text = cues.text();
    let b = text.as_bytes();
    let mut i = region.start;
    while i < region.end.min(b.len()) {
        let c = b[i];
        let candidate = c.is_ascii_hexdigit() || c == b':';
        let starts =
            || i == 0 || !(b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'.' | b':'));
        if !(candidate && starts()) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < b.len() && (b[end].is_ascii_hexdigit() || matches!(b[end], b'.' | b':')) {
            end += 1;
        }
        // Trailing punctuation ends a sentence.
        let mut trimmed = end;
        while trimmed > i && matches!(b[trimmed - 1], b'.' | b':') {
            trimmed -= 1;
        }
        let followed_by_word = b.get(end).is_some_and(|x| x.is_ascii_alphanumeric());
        let token = &text[i..trimmed];
        // Neither a dotted quad (three dots) nor anything with a colon: no address here. Most
        // tokens (words starting with a–f, plain numbers) end at this test.
        let (dots, colons) = token.bytes().fold((0, 0), |(d, c), x| {
            (d + usize::from(x == b'.'), c + usize::from(x == b':'))
        });
        if dots != 3 && colons == 0 {
            i = end.max(i + 1);
            continue;
        }
        // A dotted quad after "version", "build", "الإصدار"… is a version number.
        let version = || cues.nearest(i..trimmed) == Some(Cue::Other);
        if !followed_by_word && ((is_ipv4(token) && !version()) || is_ipv6(token)) {
            out.push(i..trimmed);
        } else if let Some((address, port)) = token.rsplit_once(':')
            && !followed_by_word
            && is_ipv4(address)
            && !port.is_empty()
            && port.bytes().all(|c| c.is_ascii_digit())
        {
            // `10.0.0.1:8080`: the address without its port.
            out.push(i..i + address.len());
        }
        i = end.max(i + 1);
    }
}

fn is_ipv4(token: &str) -> bool {
    token.split('.').count() == 4
        && token.split('.').all(|p| !p.is_empty() && p.len() <= 3)
        && token.parse::<Ipv4Addr>().is_ok()
}

fn is_ipv6(token: &str) -> bool {
    // At least two colons and one hex digit: `::` alone, times (`12:30`) and `a::b` in code are not
    // addresses worth reporting; a bare `::1` still is.
    let colons = token.bytes().filter(|&c| c == b':').count();
    colons >= 2
        && token.len() >= 3
        && token.bytes().any(|c| c.is_ascii_hexdigit())
        && token.parse::<Ipv6Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        find(&Cues::new(text), 0..text.len(), &mut out);
        out.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn finds_v4_and_v6() {
        assert_eq!(ips("from 106.31.73.20."), ["106.31.73.20"]);
        assert_eq!(
            ips("host 6e40:4041:c617:e898:c11:40d2:c669:2eb4 up"),
            ["6e40:4041:c617:e898:c11:40d2:c669:2eb4"]
        );
        assert_eq!(ips("عنوان الخادم ٢٠٠١:db8::1"), Vec::<&str>::new()); // not normalised here
        assert_eq!(
            ips("server 2001:db8::1 and ::ffff:10.0.0.1"),
            ["2001:db8::1", "::ffff:10.0.0.1"]
        );
    }

    #[test]
    fn drops_the_port() {
        assert_eq!(ips("السيرفر 61.32.231.2:8080 واقف"), ["61.32.231.2"]);
    }

    #[test]
    fn rejects_look_alikes() {
        assert!(ips("version 1.2.3.4.5").is_empty());
        assert!(ips("version 1.2.3.4 and الإصدار 10.0.19041.1").is_empty());
        assert!(ips("256.1.1.1").is_empty());
        assert!(ips("at 12:30:45 today").is_empty());
        assert!(ips("price 1.250.000").is_empty());
        assert!(ips("deadbeef").is_empty());
        assert!(ips("std::vector").is_empty());
    }
}

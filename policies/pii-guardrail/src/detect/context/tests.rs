//! The cue index against a plain scan of the window (what every number did before the index),
//! and the window's edges: just inside and outside, at the text's ends, in Arabic text, across
//! multi-byte characters and lines.

use super::*;

/// The window scanned byte by byte, every word tried at every position: the definition the
/// index must agree with.
fn scanned(text: &str, span: std::ops::Range<usize>) -> Option<Cue> {
    let lower_start = floor_boundary(text, span.start.saturating_sub(BEFORE));
    let upper_end = ceil_boundary(text, (span.end + AFTER).min(text.len()));
    let before = &text[lower_start..span.start];
    let before = &before[same_line_before(before)];
    let after = &text[span.end..upper_end];
    let after = after.split('\n').next().unwrap_or(after);
    let starts_word = |h: &[u8], at: usize| at == 0 || !h[at - 1].is_ascii_alphabetic();
    let counts = |h: &[u8], at: usize, w: &Word| {
        matches_at(h, at, w.bytes) && (!w.bytes.is_ascii() || starts_word(h, at))
    };
    let h = before.as_bytes();
    let found_before = (0..=h.len()).rev().find_map(|end| {
        ALL.iter().find_map(|w| {
            let start = end.checked_sub(w.bytes.len())?;
            (!w.after_only && counts(h, start, w)).then_some(w.cue)
        })
    });
    let h = after.as_bytes();
    found_before.or_else(|| {
        (0..h.len()).find_map(|at| ALL.iter().find(|w| counts(h, at, w)).map(|w| w.cue))
    })
}

fn cue(text: &str, number: &str) -> Option<Cue> {
    let at = text.find(number).unwrap_or(0);
    let span = at..at + number.len();
    let indexed = Cues::new(text).nearest(span.clone());
    assert_eq!(indexed, scanned(text, span), "{text:?}");
    indexed
}

#[test]
fn nearest_word_wins() {
    assert_eq!(
        cue("Phone: 0490 75 40 81", "0490 75 40 81"),
        Some(Cue::Phone)
    );
    assert_eq!(
        cue("phone me about order 12345678", "12345678"),
        Some(Cue::Other)
    );
    assert_eq!(cue("رقم الطلب 12345678", "12345678"), Some(Cue::Other));
    assert_eq!(cue("رقم جوالي 12345678", "12345678"), Some(Cue::Phone));
    assert_eq!(cue("416 60 039 office", "416 60 039"), Some(Cue::Phone));
    assert_eq!(cue("the hotel 12345678", "12345678"), None);
    assert_eq!(cue("nothing here 12345678", "12345678"), None);
    // A word before beats a nearer one after; after-only words never count before.
    assert_eq!(cue("fax 12345678 order", "12345678"), Some(Cue::Phone));
    assert_eq!(cue("office 12345678", "12345678"), None);
    // Upper case, and a longer word ending at the same place as a shorter one.
    assert_eq!(cue("MASTERCARD 12345678", "12345678"), Some(Cue::Card));
}

#[test]
fn window_before_is_sixty_bytes() {
    // `phone` starting exactly 60 bytes before the number: inside.
    let pad = "x".repeat(BEFORE - "phone".len());
    let inside = format!("phone{pad}12345678");
    assert_eq!(cue(&inside, "12345678"), Some(Cue::Phone));
    // One byte further: the window cuts the word (`hone…`), nothing found.
    let outside = format!("phone {pad}12345678");
    assert_eq!(cue(&outside, "12345678"), None);
    // The window may cut into a word: what is left from the cut on still counts as its start
    // (`tel` of `hotel`), as it did when each number scanned its own window.
    let cut = format!("hotel{}12345678", "x".repeat(BEFORE - 3));
    assert_eq!(cue(&cut, "12345678"), Some(Cue::Phone));
}

#[test]
fn window_after_is_twenty_four_bytes() {
    let pad = " ".repeat(AFTER - "office".len());
    assert_eq!(
        cue(&format!("12345678{pad}office"), "12345678"),
        Some(Cue::Phone)
    );
    assert_eq!(cue(&format!("12345678{pad} office"), "12345678"), None);
    // The word must start a word after the number too, unless it starts right at its end.
    assert_eq!(cue("12345678 hotel", "12345678"), None);
    assert_eq!(cue("12345678tel", "12345678"), Some(Cue::Phone));
}

#[test]
fn windows_at_the_ends_of_the_text() {
    assert_eq!(cue("12345678", "12345678"), None);
    assert_eq!(cue("tel 12345678", "12345678"), Some(Cue::Phone));
    assert_eq!(cue("12345678 ssn", "12345678"), Some(Cue::Ssn));
    // A word cut by the end of the text is not there.
    assert_eq!(cue("12345678 ss", "12345678"), None);
    assert_eq!(cue("", ""), None);
}

#[test]
fn arabic_words_across_multi_byte_edges() {
    // A word of two-byte letters starting exactly 60 bytes before the number.
    let word = "هاتف"; // 8 bytes
    let filler = "ب".repeat((BEFORE - word.len()) / 2); // 26 letters, 52 bytes
    let text = format!("{word}{filler}12345678");
    assert_eq!(cue(&text, "12345678"), Some(Cue::Phone));
    // One byte more: the edge falls inside ه and moves back to its start, the word is whole.
    let text = format!("{word}{filler}x12345678");
    assert_eq!(cue(&text, "12345678"), Some(Cue::Phone));
    // Two bytes more: the window starts after ه, what is left (`اتف`) is no word.
    let text = format!("{word}{filler}xx12345678");
    assert_eq!(cue(&text, "12345678"), None);
    // Arabic words match after attached prefixes and before attached suffixes.
    assert_eq!(cue("وبالفاتورة 12345678", "12345678"), Some(Cue::Other));
    assert_eq!(cue("12345678 للشحنة", "12345678"), Some(Cue::Other));
    // After the number, the window ends inside an Arabic letter: moved to its end.
    let text = format!("12345678{}هوية", " ".repeat(AFTER - 7));
    assert_eq!(cue(&text, "12345678"), Some(Cue::Id));
    let text = format!("12345678{}هوية", " ".repeat(AFTER - 6));
    assert_eq!(cue(&text, "12345678"), None);
}

#[test]
fn lines_bound_the_windows() {
    assert_eq!(cue("Phone:\n60-56-85-91", "60-56-85-91"), Some(Cue::Phone));
    assert_eq!(cue("Phone:\n \n60-56-85-91", "60-56-85-91"), None);
    assert_eq!(
        cue("order\nPhone:\n60-56-85-91", "60-56-85-91"),
        Some(Cue::Phone)
    );
    assert_eq!(cue("fax\nname 60-56-85-91", "60-56-85-91"), None);
    assert_eq!(cue("60-56-85-91\nphone", "60-56-85-91"), None);
    assert_eq!(cue("60-56-85-91 phone\n", "60-56-85-91"), Some(Cue::Phone));
}

#[test]
fn agrees_with_the_scan_on_generated_text() {
    const PIECES: &[&str] = &[
        "phone",
        "Tel",
        "hotel",
        "order",
        "ORDER",
        "text me",
        "national id",
        "office",
        "card",
        "mastercard",
        "cc",
        "ref",
        "prefer",
        "هاتف",
        "هاتفي",
        "الفاتورة",
        "فاتورة",
        "بطاقة",
        "السجل المدني",
        "مدى",
        "ال",
        "و",
        "ب",
        " ",
        " ",
        "  ",
        "\n",
        "\n \n",
        "x",
        "é",
        "😀",
        "12",
        "0501234567",
        "-",
        ":",
        "ـ",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for _ in 0..3000 {
        let mut text = String::new();
        for _ in 0..next(40) {
            text.push_str(PIECES[next(PIECES.len())]);
        }
        let cues = Cues::new(&text);
        let bounds: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for _ in 0..20 {
            let a = bounds[next(bounds.len())];
            let b = bounds[next(bounds.len())];
            let span = a.min(b)..a.max(b);
            assert_eq!(
                cues.nearest(span.clone()),
                scanned(&text, span.clone()),
                "{text:?} {span:?}"
            );
        }
    }
}

//! Checking a streamed answer: how much text the host must hold back so that an entity split
//! across chunks is still seen whole.
//!
//! The host keeps a window = the text not yet sent to the client. On every chunk it appends the
//! chunk to the window, calls `check` (stage `output`) on the window, and then:
//! - `block` → ends the stream with an error event;
//! - otherwise applies the redactions to the window and releases the window's text up to
//!   [`release_point`] (never inside an entity), keeping the rest as the next window;
//! - at the end of the stream, checks and releases everything.
//!
//! Why [`HOLD_BACK_BYTES`] is enough: an entity is at most [`MAX_ENTITY_NORMALIZED_BYTES`] bytes of
//! normalised text, and every normalised byte comes from one original character of at most 4
//! bytes. Text further back than that from the end of the window cannot be the start of an entity
//! still being written. (Invisible characters, which normalisation removes, could pad an entity
//! beyond it; a model that pads its own output to defeat its guardrail is out of scope.)

use crate::detect::{Detection, MAX_ENTITY_NORMALIZED_BYTES};

/// Bytes of original text to hold back at the end of the window: 4 × 254 = 1,016.
pub const HOLD_BACK_BYTES: usize = 4 * MAX_ENTITY_NORMALIZED_BYTES;

/// How many leading bytes of `window` can be released, given the detections `check` found in
/// it: everything but the last [`HOLD_BACK_BYTES`] (or all of it at the end of the stream),
/// moved back to a character boundary and to the start of any entity the cut would split.
pub fn release_point(window: &str, detections: &[Detection], end_of_stream: bool) -> usize {
    if end_of_stream {
        return window.len();
    }
    let mut cut = window.len().saturating_sub(HOLD_BACK_BYTES);
    while cut > 0 && !window.is_char_boundary(cut) {
        cut -= 1;
    }
    for d in detections {
        if d.span.start < cut && cut < d.span.end {
            cut = d.span.start;
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::detect;
    use crate::entity::EntityKind;

    #[test]
    fn hold_back_covers_the_longest_entity() {
        assert_eq!(HOLD_BACK_BYTES, 1016);
    }

    #[test]
    fn a_phone_number_split_across_two_chunks_is_caught_in_the_window() {
        let chunks = ["للتواصل اتصل على +966 50 12", "3 4567 في أي وقت"];
        // Each chunk alone holds no complete phone number…
        assert!(
            detect(chunks[0])
                .iter()
                .all(|d| d.kind != EntityKind::Phone)
        );
        assert!(detect(chunks[1]).is_empty());
        // …the first chunk is held back entirely (shorter than the window)…
        let window = chunks[0].to_owned();
        assert_eq!(release_point(&window, &detect(&window), false), 0);
        // …so the window after the second chunk holds the whole number.
        let window = window + chunks[1];
        let found = detect(&window);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, EntityKind::Phone);
        assert_eq!(&window[found[0].span.clone()], "+966 50 123 4567");
    }

    #[test]
    fn the_cut_never_splits_an_entity_or_a_character() {
        let filler = "ك".repeat(600); // 1,200 bytes of two-byte letters
        let window = format!("{filler} a@example.com {}", "x".repeat(1000));
        let found = detect(&window);
        let cut = release_point(&window, &found, false);
        assert!(window.is_char_boundary(cut));
        let email = &found[0].span;
        assert!(cut <= email.start || cut >= email.end);
        assert_eq!(release_point(&window, &found, true), window.len());
    }
}

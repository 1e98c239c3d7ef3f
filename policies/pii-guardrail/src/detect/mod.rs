//! Finding personal data in a text: normalise, run every detector over the normalised text,
//! settle overlaps, map the spans back to the original text.

mod card;
mod context;
mod digits;
mod email;
mod iban;
mod ids;
mod ip;
mod phone;

use std::ops::Range;

pub use crate::entity::{Detection, EntityKind};
use crate::normalize::Normalized;
use context::Cues;

pub use card::is_card_number;
pub use ids::{is_egyptian_id, is_emirates_id, is_saudi_id, is_ssn};

/// The longest entity any detector reports, in bytes of normalised text: an e-mail address
/// (RFC 5321: 254). The next longest are phone numbers with separators and an extension
/// ([`phone::MAX_PRINTED`]), IPv6 (45), IBANs in groups (41), cards (25).
pub const MAX_ENTITY_NORMALIZED_BYTES: usize = max(
    email::MAX_ADDRESS,
    max(
        phone::MAX_PRINTED,
        max(iban::MAX_PRINTED, max(card::MAX_PRINTED, 45)),
    ),
);

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

/// Every entity in `text`, spans in bytes of `text` (on character boundaries), sorted by start,
/// never overlapping.
pub fn detect(text: &str) -> Vec<Detection> {
    let normalized = Normalized::new(text);
    detect_normalized(normalized.text())
        .into_iter()
        .map(|d| Detection {
            kind: d.kind,
            span: normalized.to_original(d.span),
        })
        .collect()
}

/// [`detect`] on text that is already normalised; spans are in bytes of `text`.
pub fn detect_normalized(text: &str) -> Vec<Detection> {
    let mut found: Vec<(EntityKind, Range<usize>)> = Vec::new();
    let mut spans = Vec::new();
    let cues = Cues::new(text);
    let take = |kind, spans: &mut Vec<Range<usize>>, found: &mut Vec<_>| {
        found.extend(spans.drain(..).map(|s| (kind, s)));
    };
    for region in regions(text) {
        email::find(text, region.clone(), &mut spans);
        take(EntityKind::Email, &mut spans, &mut found);
        iban::find(text, region.clone(), &mut spans);
        take(EntityKind::Iban, &mut spans, &mut found);
        ip::find(&cues, region.clone(), &mut spans);
        take(EntityKind::IpAddress, &mut spans, &mut found);
        for run in digits::runs(text, region) {
            // Nothing below has fewer than 7 digits (the shortest phone number).
            if run.groups().iter().map(|g| g.len()).sum::<usize>() < 7 {
                continue;
            }
            card::find(&cues, &run, &mut spans);
            take(EntityKind::CreditCard, &mut spans, &mut found);
            ids::find(&cues, &run, &mut found);
            phone::find(&cues, &run, &mut spans);
            take(EntityKind::Phone, &mut spans, &mut found);
        }
    }
    resolve(found)
}

/// How far a region reaches from the byte that caused it (an e-mail address is at most 254
/// bytes), and how close two regions must be to merge (an IBAN group of letters, `WEST`, sits
/// between groups with digits).
const REACH: usize = 256;
const MERGE_GAP: usize = 16;

/// The parts of `text` any detector could match in: every entity holds an ASCII digit, an `@`
/// or a `:` (after normalisation), so only the whitespace-delimited tokens around those bytes,
/// and the gaps between close ones, are scanned. Prose without digits costs one pass.
fn regions(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut i = 0;
    while let Some(rel) = b.get(i..).and_then(|s| {
        s.iter()
            .position(|&c| c.is_ascii_digit() || c == b'@' || c == b':')
    }) {
        let at = i + rel;
        let mut start = at;
        while start > 0 && !b[start - 1].is_ascii_whitespace() && at - start < REACH {
            start -= 1;
        }
        let mut end = at + 1;
        while end < b.len() && !b[end].is_ascii_whitespace() && end - at < REACH {
            end += 1;
        }
        match out.last_mut() {
            Some(last) if start <= last.end + MERGE_GAP => last.end = last.end.max(end),
            _ => out.push(start..end),
        }
        i = end.max(at + 1);
    }
    out
}

/// Keeps the strongest of overlapping detections: higher priority first, then the longer span,
/// then the earlier one.
fn resolve(mut found: Vec<(EntityKind, Range<usize>)>) -> Vec<Detection> {
    found.sort_by(|(ka, a), (kb, b)| {
        kb.priority()
            .cmp(&ka.priority())
            .then((b.end - b.start).cmp(&(a.end - a.start)))
            .then(a.start.cmp(&b.start))
    });
    let mut kept: Vec<Detection> = Vec::new();
    for (kind, span) in found {
        if span.is_empty() {
            continue;
        }
        let overlaps = kept
            .iter()
            .any(|d| d.span.start < span.end && span.start < d.span.end);
        if !overlaps {
            kept.push(Detection { kind, span });
        }
    }
    kept.sort_by_key(|d| d.span.start);
    kept
}

#[cfg(test)]
mod tests;

//! Scoring detections against a labelled set (Presidio's JSON shape): per entity type, precision
//! and recall under the overlap rule. Shared by the `eval` example and the integration tests.
//!
//! Matching rule: a detection is a true positive when its span overlaps (shares at least one
//! character with) a gold span of the same type; a gold span is found when at least one detection
//! of its type overlaps it. Precision = true-positive detections / detections; recall = gold spans
//! found / gold spans. Offsets in the files are characters (code points); detections are converted
//! from bytes to characters before matching.

use std::collections::BTreeMap;
use std::ops::Range;

use pii_guardrail::detect::detect;
use pii_guardrail::entity::EntityKind;
use serde::Deserialize;

#[derive(Deserialize)]
pub struct Record {
    pub full_text: String,
    pub spans: Vec<Span>,
}

#[derive(Deserialize)]
pub struct Span {
    pub entity_type: String,
    pub start_position: usize,
    pub end_position: usize,
}

/// The label a kind is scored under (Presidio's names where Presidio has the type).
pub fn label(kind: EntityKind) -> &'static str {
    match kind {
        EntityKind::Email => "EMAIL_ADDRESS",
        EntityKind::Phone => "PHONE_NUMBER",
        EntityKind::CreditCard => "CREDIT_CARD",
        EntityKind::Iban => "IBAN_CODE",
        EntityKind::IpAddress => "IP_ADDRESS",
        EntityKind::UsSsn => "US_SSN",
        EntityKind::SaudiId => "SAUDI_ID",
        EntityKind::EmiratesId => "EMIRATES_ID",
        EntityKind::EgyptianId => "EGYPTIAN_ID",
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub gold: usize,
    pub found: usize,
    pub detected: usize,
    pub correct: usize,
}

impl Counts {
    pub fn precision(&self) -> f64 {
        if self.detected == 0 {
            1.0
        } else {
            self.correct as f64 / self.detected as f64
        }
    }
    pub fn recall(&self) -> f64 {
        if self.gold == 0 {
            1.0
        } else {
            self.found as f64 / self.gold as f64
        }
    }
}

/// A miss or a false alarm, for `--verbose`.
pub struct Mistake {
    pub label: &'static str,
    pub false_positive: bool,
    pub value: String,
    pub text: String,
}

pub struct Report {
    pub by_label: BTreeMap<&'static str, Counts>,
    pub mistakes: Vec<Mistake>,
    pub records: usize,
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

fn char_range(text: &str, bytes: Range<usize>) -> Range<usize> {
    let start = text.get(..bytes.start).map_or(0, |s| s.chars().count());
    let len = text.get(bytes).map_or(0, |s| s.chars().count());
    start..start + len
}

/// Scores `records`, counting only gold types that some detector can produce.
pub fn score(records: &[Record]) -> Report {
    let labels: Vec<&'static str> = EntityKind::ALL.iter().map(|&k| label(k)).collect();
    let mut by_label: BTreeMap<&'static str, Counts> = BTreeMap::new();
    let mut mistakes = Vec::new();
    for r in records {
        let chars: Vec<char> = r.full_text.chars().collect();
        let slice = |s: &Range<usize>| {
            chars
                .get(s.clone())
                .map(|c| c.iter().collect::<String>())
                .unwrap_or_default()
        };
        let gold: Vec<(&'static str, Range<usize>)> = r
            .spans
            .iter()
            .filter_map(|s| {
                let l = labels.iter().find(|l| **l == s.entity_type)?;
                Some((*l, s.start_position..s.end_position))
            })
            .collect();
        let found: Vec<(&'static str, Range<usize>)> = detect(&r.full_text)
            .into_iter()
            .map(|d| (label(d.kind), char_range(&r.full_text, d.span)))
            .collect();
        for (l, g) in &gold {
            let c = by_label.entry(l).or_default();
            c.gold += 1;
            if found.iter().any(|(fl, f)| fl == l && overlaps(f, g)) {
                c.found += 1;
            } else {
                mistakes.push(Mistake {
                    label: l,
                    false_positive: false,
                    value: slice(g),
                    text: r.full_text.clone(),
                });
            }
        }
        for (l, f) in &found {
            let c = by_label.entry(l).or_default();
            c.detected += 1;
            if gold.iter().any(|(gl, g)| gl == l && overlaps(f, g)) {
                c.correct += 1;
            } else {
                mistakes.push(Mistake {
                    label: l,
                    false_positive: true,
                    value: slice(f),
                    text: r.full_text.clone(),
                });
            }
        }
    }
    Report {
        by_label,
        mistakes,
        records: records.len(),
    }
}

pub fn table(report: &Report) -> String {
    let mut out = String::from(
        "| entity | gold | found | detected | correct | precision | recall |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (l, c) in &report.by_label {
        out.push_str(&format!(
            "| {l} | {} | {} | {} | {} | {:.3} | {:.3} |\n",
            c.gold,
            c.found,
            c.detected,
            c.correct,
            c.precision(),
            c.recall()
        ));
    }
    out
}

//! From detections to the verdict the host acts on (the pure-Rust mirror of the WIT `verdict`).

use std::collections::BTreeSet;

use crate::detect::detect;
use crate::entity::EntityKind;
use crate::settings::{Action, Settings};

/// Which way the text is going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Input,
    Output,
}

/// Replace bytes `start..end` of message `message` with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub message: u32,
    pub start: u32,
    pub end: u32,
    pub replacement: &'static str,
    pub entity: EntityKind,
}

/// A refusal: the kinds that caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub entities: Vec<EntityKind>,
    pub action_taken: &'static str,
}

impl Violation {
    pub const TYPE: &'static str = "pii_detected";
}

/// What the host must do. `block` set: refuse, and the other fields are empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    pub block: Option<Violation>,
    pub redactions: Vec<Redaction>,
    pub flagged: Vec<EntityKind>,
}

/// Checks `messages` (their contents, in order) for team `team`.
pub fn check(stage: Stage, team: &str, messages: &[&str], settings: &Settings) -> Verdict {
    let mut blocked = BTreeSet::new();
    let mut flagged = BTreeSet::new();
    let mut redactions = Vec::new();
    for (index, content) in messages.iter().enumerate() {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        for d in detect(content) {
            match settings.action(team, d.kind) {
                Action::Block => {
                    blocked.insert(d.kind);
                }
                Action::Flag => {
                    flagged.insert(d.kind);
                }
                Action::Off => {}
                Action::Redact => redactions.push(Redaction {
                    message: index,
                    start: u32::try_from(d.span.start).unwrap_or(u32::MAX),
                    end: u32::try_from(d.span.end).unwrap_or(u32::MAX),
                    replacement: d.kind.placeholder(),
                    entity: d.kind,
                }),
            }
        }
    }
    if !blocked.is_empty() {
        return Verdict {
            block: Some(Violation {
                entities: blocked.into_iter().collect(),
                action_taken: match stage {
                    Stage::Input => "request_blocked",
                    Stage::Output => "response_blocked",
                },
            }),
            ..Verdict::default()
        };
    }
    Verdict {
        block: None,
        redactions,
        flagged: flagged.into_iter().collect(),
    }
}

/// Applies one message's redactions (sorted, non-overlapping, on character boundaries, as
/// [`check`] produces them) — what the host does, for tests and reference.
pub fn apply(content: &str, redactions: &[&Redaction]) -> Option<String> {
    let mut out = String::with_capacity(content.len());
    let mut at = 0;
    for r in redactions {
        let (start, end) = (r.start as usize, r.end as usize);
        if start < at || end < start {
            return None;
        }
        out.push_str(content.get(at..start)?);
        out.push_str(r.replacement);
        at = end;
    }
    out.push_str(content.get(at..)?);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(json: &str) -> Settings {
        Settings::parse(json).unwrap()
    }

    #[test]
    fn redacts_mixed_arabic_and_latin_text() {
        let text = "مرحبا، أنا سارة. إيميلي sara.k@example.com وجوالي ٠٥٠ ١٢٣ ٤٥٦٧ \u{200F}والآيبان SA03 8000 0000 6080 1016 7519 شكراً";
        let v = check(Stage::Input, "t", &[text], &Settings::default());
        assert_eq!(v.block, None);
        let kinds: Vec<EntityKind> = v.redactions.iter().map(|r| r.entity).collect();
        assert_eq!(
            kinds,
            [EntityKind::Email, EntityKind::Phone, EntityKind::Iban]
        );
        let refs: Vec<&Redaction> = v.redactions.iter().collect();
        assert_eq!(
            apply(text, &refs).unwrap(),
            "مرحبا، أنا سارة. إيميلي [EMAIL] وجوالي [PHONE] \u{200F}والآيبان [IBAN] شكراً"
        );
    }

    #[test]
    fn redactions_point_into_the_right_message() {
        let v = check(
            Stage::Input,
            "t",
            &["no pii here", "هويتي ١٠٠٠٠٠٠٠٠٨ فقط"],
            &Settings::default(),
        );
        assert_eq!(v.redactions.len(), 1);
        let r = &v.redactions[0];
        assert_eq!((r.message, r.entity), (1, EntityKind::SaudiId));
        assert_eq!(
            apply("هويتي ١٠٠٠٠٠٠٠٠٨ فقط", &[r]).unwrap(),
            "هويتي [NATIONAL_ID] فقط"
        );
    }

    #[test]
    fn block_wins_and_names_kinds_only() {
        let s = settings(
            r#"{"entities": {"credit_card": "block", "email": "block", "phone": "flag"}}"#,
        );
        let v = check(
            Stage::Output,
            "t",
            &["card 4111 1111 1111 1111, mail a@b.co, call +966501234567"],
            &s,
        );
        let block = v.block.unwrap();
        assert_eq!(block.entities, [EntityKind::Email, EntityKind::CreditCard]);
        assert_eq!(block.action_taken, "response_blocked");
        assert!(v.redactions.is_empty() && v.flagged.is_empty());
    }

    #[test]
    fn flag_and_off_per_team() {
        let s = settings(
            r#"{"entities": {"phone": "flag"}, "teams": {"ops": {"phone": "off", "ip_address": "flag"}}}"#,
        );
        let text = ["call +966501234567 from 10.1.2.3"];
        let v = check(Stage::Input, "sales", &text, &s);
        assert_eq!(v.flagged, [EntityKind::Phone]);
        assert_eq!(v.redactions.len(), 1); // the IP, by default
        let v = check(Stage::Input, "ops", &text, &s);
        assert_eq!(v.flagged, [EntityKind::IpAddress]);
        assert!(v.redactions.is_empty());
    }

    #[test]
    fn clean_text_is_allowed() {
        let v = check(
            Stage::Input,
            "t",
            &["السعر ٢٥٠ ريال والطلب رقم 12345"],
            &Settings::default(),
        );
        assert_eq!(v, Verdict::default());
    }
}

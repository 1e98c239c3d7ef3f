//! The built-in PII guardrail: a guardrail policy component. It finds personal data in the
//! messages it is given (stage `input`) or in an answer (stage `output`) and answers, per entity
//! kind and team, block, redact (with a placeholder such as `[EMAIL]`) or flag.
//!
//! The logic is plain Rust tested natively: [`normalize`] (digit folding and invisible
//! characters, with a map back to original byte offsets), [`detect`] (the detectors),
//! [`settings`] (the JSON settings, read by [`json`]), [`verdict`] (detections to verdict), [`stream`] (the
//! hold-back window for streamed answers). The component glue below only converts between the
//! WIT types and those. See docs/GUARDRAIL.md.

pub mod detect;
pub mod entity;
pub mod json;
pub mod normalize;
pub mod settings;
pub mod stream;
pub mod verdict;

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::guardrail::{
        Guardrail, Message, Redaction, Rejection, RequestFacts, Stage, Verdict, Violation,
    };
    use sovereign_policy_sdk::host::{self, Level};

    use std::cell::RefCell;
    use std::rc::Rc;

    use crate::settings::Settings;
    use crate::verdict::{self, Violation as PureViolation};

    struct PiiGuardrail;

    thread_local! {
        /// The settings, parsed on this instance's first call. An instance's settings never
        /// change (new settings are a new version with new instances; wit/policy.wit,
        /// `config-get`), so a warm instance reads and parses them once.
        static PARSED: RefCell<Option<Rc<Settings>>> = const { RefCell::new(None) };
    }

    /// The `settings` document, parsed (once per instance).
    fn settings() -> Result<Rc<Settings>, Rejection> {
        if let Some(s) = PARSED.with_borrow(Option::clone) {
            return Ok(s);
        }
        let s = match host::config_get("settings") {
            Some(text) => Settings::parse(&text).map_err(|e| misconfigured(e.to_string()))?,
            None => Settings::default(),
        };
        let s = Rc::new(s);
        PARSED.set(Some(s.clone()));
        Ok(s)
    }

    fn misconfigured(message: String) -> Rejection {
        host::log(Level::Error, &message);
        Rejection {
            status: 500,
            code: "policy_misconfigured".into(),
            message,
        }
    }

    impl Guardrail for PiiGuardrail {
        fn check(
            stage: Stage,
            facts: RequestFacts,
            messages: Vec<Message>,
        ) -> Result<Verdict, Rejection> {
            let settings = settings()?;
            let stage = match stage {
                Stage::Input => verdict::Stage::Input,
                Stage::Output => verdict::Stage::Output,
            };
            let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
            let v = verdict::check(stage, &facts.team_id, &contents, &settings);
            Ok(Verdict {
                block: v.block.map(|b| Violation {
                    violation_type: PureViolation::TYPE.into(),
                    entities: b.entities.iter().map(|k| k.name().into()).collect(),
                    action_taken: b.action_taken.into(),
                }),
                redactions: v
                    .redactions
                    .into_iter()
                    .map(|r| Redaction {
                        message: r.message,
                        start: r.start,
                        end: r.end,
                        replacement: r.replacement.into(),
                        entity: r.entity.name().into(),
                    })
                    .collect(),
                flagged: v.flagged.iter().map(|k| k.name().into()).collect(),
            })
        }
    }

    sovereign_policy_sdk::export_guardrail!(PiiGuardrail);
}

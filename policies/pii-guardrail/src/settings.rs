//! The guardrail's settings: what to do with each kind of entity, globally and per team. Read
//! from the host setting `settings`, a JSON document:
//!
//! ```json
//! {
//!   "default": "redact",
//!   "entities": { "credit_card": "block", "phone": "flag", "ip_address": "off" },
//!   "teams": { "research": { "credit_card": "redact", "email": "off" } }
//! }
//! ```
//!
//! The action for an entity found in a request of team `t` is `teams[t][entity]`, else
//! `entities[entity]`, else `default` (itself `redact` when absent). Actions: `block`, `redact`,
//! `flag`, `off` (not reported at all). Unknown fields, entity names and actions are errors.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use crate::entity::EntityKind;

/// Largest settings document accepted, in bytes.
pub const MAX_SETTINGS_BYTES: usize = 64 * 1024;

/// What happens when an entity is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Refuse the request (or end the answer).
    Block,
    /// Replace the value with its placeholder.
    Redact,
    /// Let it through, classify the request sensitive.
    Flag,
    /// Ignore this kind.
    Off,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    default: Option<Action>,
    #[serde(default)]
    entities: BTreeMap<String, Action>,
    #[serde(default)]
    teams: BTreeMap<String, BTreeMap<String, Action>>,
}

/// Validated settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    default: Action,
    entities: BTreeMap<EntityKind, Action>,
    teams: BTreeMap<String, BTreeMap<EntityKind, Action>>,
}

impl Default for Settings {
    /// No settings: redact every kind.
    fn default() -> Self {
        Self {
            default: Action::Redact,
            entities: BTreeMap::new(),
            teams: BTreeMap::new(),
        }
    }
}

/// Why a settings document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsError {
    TooLarge(usize),
    /// The JSON does not parse or has the wrong shape (serde's message names line and column).
    Syntax(String),
    /// Entity names that do not exist, with their paths (`entities.mail`, `teams.x.cc`).
    UnknownEntities(Vec<String>),
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::TooLarge(n) => write!(
                f,
                "invalid guardrail settings: {n} bytes, at most {MAX_SETTINGS_BYTES} allowed"
            ),
            SettingsError::Syntax(e) => write!(f, "invalid guardrail settings: {e}"),
            SettingsError::UnknownEntities(paths) => {
                let known: Vec<&str> = EntityKind::ALL.iter().map(|k| k.name()).collect();
                write!(
                    f,
                    "invalid guardrail settings: unknown entity at {} (known: {})",
                    paths.join(", "),
                    known.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    pub fn parse(document: &str) -> Result<Self, SettingsError> {
        if document.len() > MAX_SETTINGS_BYTES {
            return Err(SettingsError::TooLarge(document.len()));
        }
        let raw: Raw =
            serde_json::from_str(document).map_err(|e| SettingsError::Syntax(e.to_string()))?;
        let mut unknown = Vec::new();
        let mut kinds = |map: BTreeMap<String, Action>, path: &str| {
            let mut out = BTreeMap::new();
            for (name, action) in map {
                match EntityKind::from_name(&name) {
                    Some(kind) => {
                        out.insert(kind, action);
                    }
                    None => unknown.push(format!("{path}.{name}")),
                }
            }
            out
        };
        let entities = kinds(raw.entities, "entities");
        let teams = raw
            .teams
            .into_iter()
            .map(|(team, map)| {
                let parsed = kinds(map, &format!("teams.{team}"));
                (team, parsed)
            })
            .collect();
        if !unknown.is_empty() {
            return Err(SettingsError::UnknownEntities(unknown));
        }
        Ok(Self {
            default: raw.default.unwrap_or(Action::Redact),
            entities,
            teams,
        })
    }

    /// The action for `kind` in a request of team `team`.
    pub fn action(&self, team: &str, kind: EntityKind) -> Action {
        self.teams
            .get(team)
            .and_then(|m| m.get(&kind))
            .or_else(|| self.entities.get(&kind))
            .copied()
            .unwrap_or(self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_overrides_entity_overrides_default() {
        let s = Settings::parse(
            r#"{"default": "flag",
                "entities": {"credit_card": "block", "email": "redact"},
                "teams": {"research": {"credit_card": "redact"}}}"#,
        )
        .unwrap();
        assert_eq!(s.action("sales", EntityKind::CreditCard), Action::Block);
        assert_eq!(s.action("research", EntityKind::CreditCard), Action::Redact);
        assert_eq!(s.action("research", EntityKind::Email), Action::Redact);
        assert_eq!(s.action("research", EntityKind::Phone), Action::Flag);
    }

    #[test]
    fn empty_and_missing_settings_redact_everything() {
        assert_eq!(Settings::parse("{}").unwrap(), Settings::default());
        assert_eq!(
            Settings::default().action("t", EntityKind::UsSsn),
            Action::Redact
        );
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let e = Settings::parse(
            r#"{"entities": {"mail": "block", "phone": "flag"}, "teams": {"t": {"cc": "off"}}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e,
            SettingsError::UnknownEntities(vec!["entities.mail".into(), "teams.t.cc".into()])
        );
        assert!(e.to_string().contains("known: email, phone"));

        let e = Settings::parse(r#"{"entities": {"email": "hide"}}"#).unwrap_err();
        assert!(e.to_string().contains("unknown variant `hide`"), "{e}");
        assert!(e.to_string().contains("line 1"), "{e}");

        let e = Settings::parse(r#"{"defaults": "block"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `defaults`"), "{e}");

        let e = Settings::parse("{\n  \"default\": \"block\",\n").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");

        let big = format!(
            "{{\"default\": \"block\"{}}}",
            " ".repeat(MAX_SETTINGS_BYTES)
        );
        assert!(matches!(
            Settings::parse(&big),
            Err(SettingsError::TooLarge(_))
        ));
    }
}

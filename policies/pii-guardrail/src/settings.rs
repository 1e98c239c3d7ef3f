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

use crate::entity::EntityKind;
use crate::json::{self, Pos, Value};

/// Largest settings document accepted, in bytes.
pub const MAX_SETTINGS_BYTES: usize = 64 * 1024;

/// What happens when an entity is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

impl Action {
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "block" => Some(Action::Block),
            "redact" => Some(Action::Redact),
            "flag" => Some(Action::Flag),
            "off" => Some(Action::Off),
            _ => None,
        }
    }
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
    /// Not JSON.
    Syntax(json::Error),
    /// JSON of the wrong shape: every problem, each with its path and position.
    Invalid(Vec<String>),
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::TooLarge(n) => write!(
                f,
                "invalid guardrail settings: {n} bytes, at most {MAX_SETTINGS_BYTES} allowed"
            ),
            SettingsError::Syntax(e) => write!(f, "invalid guardrail settings: {e}"),
            SettingsError::Invalid(problems) => {
                write!(f, "invalid guardrail settings: {}", problems.join("; "))
            }
        }
    }
}

impl std::error::Error for SettingsError {}

/// Collects every problem found while reading the document.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, path: &str, pos: Pos, message: impl fmt::Display) {
        self.0.push(format!("{path} ({pos}): {message}"));
    }

    fn action(&mut self, path: &str, v: &Value, pos: Pos) -> Option<Action> {
        match v {
            Value::String(name) => {
                let action = Action::from_name(name);
                if action.is_none() {
                    self.add(
                        path,
                        pos,
                        format!("unknown action `{name}` (block, redact, flag or off)"),
                    );
                }
                action
            }
            other => {
                self.add(
                    path,
                    pos,
                    format!("expected an action, found {}", other.kind()),
                );
                None
            }
        }
    }

    fn members<'v>(
        &mut self,
        path: &str,
        v: &'v Value,
        pos: Pos,
    ) -> &'v [(String, Pos, Value, Pos)] {
        match v {
            Value::Object(m) => m,
            other => {
                self.add(
                    path,
                    pos,
                    format!("expected an object, found {}", other.kind()),
                );
                &[]
            }
        }
    }

    /// An `{entity: action}` map.
    fn entity_actions(&mut self, path: &str, v: &Value, pos: Pos) -> BTreeMap<EntityKind, Action> {
        let mut out = BTreeMap::new();
        for (name, key_pos, value, value_pos) in self.members(path, v, pos) {
            // The common case, a known entity and action, needs no path for a message.
            if let (Some(kind), Value::String(action)) = (EntityKind::from_name(name), value)
                && let Some(action) = Action::from_name(action)
            {
                out.insert(kind, action);
                continue;
            }
            let member = format!("{path}.{name}");
            let Some(kind) = EntityKind::from_name(name) else {
                let known: Vec<&str> = EntityKind::ALL.iter().map(|k| k.name()).collect();
                self.add(
                    &member,
                    *key_pos,
                    format!("unknown entity (known: {})", known.join(", ")),
                );
                continue;
            };
            if let Some(action) = self.action(&member, value, *value_pos) {
                out.insert(kind, action);
            }
        }
        out
    }
}

impl Settings {
    pub fn parse(document: &str) -> Result<Self, SettingsError> {
        if document.len() > MAX_SETTINGS_BYTES {
            return Err(SettingsError::TooLarge(document.len()));
        }
        let (root, pos) = json::parse(document).map_err(SettingsError::Syntax)?;
        let mut problems = Problems::default();
        let mut settings = Settings::default();
        for (key, key_pos, value, value_pos) in problems.members("settings", &root, pos) {
            match key.as_str() {
                "default" => {
                    if let Some(a) = problems.action("default", value, *value_pos) {
                        settings.default = a;
                    }
                }
                "entities" => {
                    settings.entities = problems.entity_actions("entities", value, *value_pos);
                }
                "teams" => {
                    for (team, _, map, map_pos) in problems.members("teams", value, *value_pos) {
                        let path = format!("teams.{team}");
                        let actions = problems.entity_actions(&path, map, *map_pos);
                        settings.teams.insert(team.clone(), actions);
                    }
                }
                other => problems.add(
                    other,
                    *key_pos,
                    "unknown field (expected default, entities or teams)",
                ),
            }
        }
        if problems.0.is_empty() {
            Ok(settings)
        } else {
            Err(SettingsError::Invalid(problems.0))
        }
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
    fn errors_name_what_is_wrong_all_at_once() {
        let e = Settings::parse(
            "{\"entities\": {\"mail\": \"block\", \"phone\": \"hide\"},\n \"teams\": {\"t\": {\"cc\": 1}}, \"defaults\": \"block\"}",
        )
        .unwrap_err();
        let SettingsError::Invalid(problems) = &e else {
            panic!("{e}")
        };
        assert_eq!(
            problems,
            &[
                "entities.mail (line 1, column 15): unknown entity (known: email, phone, \
                 credit_card, iban, ip_address, saudi_id, emirates_id, egyptian_id, us_ssn)",
                "entities.phone (line 1, column 41): unknown action `hide` (block, redact, flag or off)",
                "teams.t.cc (line 2, column 18): unknown entity (known: email, phone, \
                 credit_card, iban, ip_address, saudi_id, emirates_id, egyptian_id, us_ssn)",
                "defaults (line 2, column 29): unknown field (expected default, entities or teams)",
            ]
        );

        let e = Settings::parse(r#"{"default": ["block"]}"#).unwrap_err();
        assert!(
            e.to_string().contains("expected an action, found an array"),
            "{e}"
        );

        let e = Settings::parse(r#"["block"]"#).unwrap_err();
        assert!(
            e.to_string().contains("expected an object, found an array"),
            "{e}"
        );

        let e = Settings::parse("{\n  \"default\": \"block\",\n").unwrap_err();
        assert!(matches!(e, SettingsError::Syntax(_)));
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

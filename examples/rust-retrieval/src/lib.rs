//! Example retrieval policy: a document classified above the caller's clearance never leaves the
//! gateway, whatever the ranking; among what is left, the newest version of a document comes
//! first. Its settings (`config-get("settings")`, JSON):
//!
//! ```json
//! {"levels": ["public", "internal", "confidential", "secret"],
//!  "clearance": {"team:team_ops": "internal", "key:key_42": "secret",
//!                "identity:records-bot": "confidential", "role:auditor": "confidential"},
//!  "default": "public",
//!  "newest_first": "version"}
//! ```
//!
//! The caller's clearance is the first entry found for, in this order, its certificate identity
//! (`identity:<name>`), its key (`key:<id>`), its team (`team:<id>`), its role (`role:<role>`),
//! else `default` (else the lowest level). A document's level is its metadata's
//! `classification`; a document without one is at the lowest level, and one whose
//! classification is not a known level is treated as above every clearance (fail closed).
//! `newest_first` names a numeric metadata field: candidates with a higher value come first
//! (stable: equal values keep the ranking's order); absent, the ranking's order stays.

use serde_json::{Map, Value};

/// The caller, as the policy sees it.
pub struct Who<'a> {
    pub team: &'a str,
    pub key: &'a str,
    pub role: &'a str,
    pub identity: Option<&'a str>,
}

/// Parsed settings.
pub struct Rules {
    levels: Vec<String>,
    clearance: Map<String, Value>,
    default: Option<String>,
    newest_first: Option<String>,
}

impl Rules {
    pub fn parse(text: Option<&str>) -> Result<Rules, String> {
        let v: Value = match text {
            Some(t) => serde_json::from_str(t).map_err(|e| format!("settings: {e}"))?,
            None => Value::Object(Map::new()),
        };
        let levels = match v.get("levels") {
            None => ["public", "internal", "confidential", "secret"]
                .map(String::from)
                .to_vec(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|l| l.as_str().map(String::from).ok_or("levels must be strings"))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("`levels` must be an array of strings".into()),
        };
        Ok(Rules {
            levels,
            clearance: v
                .get("clearance")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            default: v.get("default").and_then(Value::as_str).map(String::from),
            newest_first: v
                .get("newest_first")
                .and_then(Value::as_str)
                .map(String::from),
        })
    }

    fn level(&self, name: &str) -> Option<usize> {
        self.levels.iter().position(|l| l == name)
    }

    /// The caller's clearance, as a level index.
    pub fn clearance(&self, who: &Who<'_>) -> usize {
        let keys = [
            who.identity.map(|i| format!("identity:{i}")),
            Some(format!("key:{}", who.key)),
            Some(format!("team:{}", who.team)),
            Some(format!("role:{}", who.role)),
        ];
        keys.iter()
            .flatten()
            .find_map(|k| self.clearance.get(k).and_then(Value::as_str))
            .or(self.default.as_deref())
            .and_then(|l| self.level(l))
            .unwrap_or(0)
    }

    /// A document's level (its metadata as JSON text); unknown classifications are above all.
    pub fn document_level(&self, metadata: &Value) -> usize {
        match metadata.get("classification").and_then(Value::as_str) {
            None => 0,
            Some(c) => self.level(c).unwrap_or(usize::MAX),
        }
    }

    /// Indices of the candidates (their metadata) the caller may see, in the order they leave.
    pub fn select(&self, who: &Who<'_>, metadata: &[Value]) -> Vec<u32> {
        let clearance = self.clearance(who);
        let mut keep: Vec<u32> = (0u32..)
            .zip(metadata)
            .filter(|(_, m)| self.document_level(m) <= clearance)
            .map(|(i, _)| i)
            .collect();
        if let Some(field) = &self.newest_first {
            let version = |i: &u32| {
                metadata
                    .get(*i as usize)
                    .and_then(|m| m.get(field))
                    .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
                    .unwrap_or(f64::NEG_INFINITY)
            };
            keep.sort_by(|a, b| version(b).total_cmp(&version(a)));
        }
        keep
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    use serde_json::Value;
    use sovereign_policy_sdk::host::config_get;
    use sovereign_policy_sdk::retrieval::{Caller, Chunk, Rejection, RetrievalPolicy, Selection};

    use crate::{Rules, Who};

    struct Clearance;

    impl RetrievalPolicy for Clearance {
        fn review(
            caller: Caller,
            _query: String,
            candidates: Vec<Chunk>,
        ) -> Result<Selection, Rejection> {
            let rules = Rules::parse(config_get("settings").as_deref()).map_err(|e| Rejection {
                status: 500,
                code: "policy_misconfigured".into(),
                message: e,
            })?;
            let metadata: Vec<Value> = candidates
                .iter()
                .map(|c| serde_json::from_str(&c.metadata).unwrap_or(Value::Null))
                .collect();
            let who = Who {
                team: &caller.team_id,
                key: &caller.key_id,
                role: &caller.role,
                identity: caller.identity.as_deref(),
            };
            Ok(Selection {
                keep: rules.select(&who, &metadata),
                rule: "clearance".into(),
            })
        }
    }

    sovereign_policy_sdk::export_retrieval_policy!(Clearance);
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = r#"{"clearance": {"team:t_ops": "internal", "key:k_boss": "secret", "role:auditor": "confidential"},
        "default": "public", "newest_first": "version"}"#;

    fn who<'a>(team: &'a str, key: &'a str, role: &'a str) -> Who<'a> {
        Who {
            team,
            key,
            role,
            identity: None,
        }
    }

    fn meta(c: Option<&str>, v: u32) -> Value {
        let mut m = Map::new();
        if let Some(c) = c {
            m.insert("classification".into(), c.into());
        }
        m.insert("version".into(), v.to_string().into());
        Value::Object(m)
    }

    #[test]
    fn the_most_specific_clearance_wins() {
        let r = Rules::parse(Some(S)).unwrap();
        assert_eq!(r.clearance(&who("t_ops", "k", "member")), 1);
        assert_eq!(r.clearance(&who("t_ops", "k_boss", "member")), 3);
        assert_eq!(r.clearance(&who("t_x", "k", "auditor")), 2);
        assert_eq!(r.clearance(&who("t_x", "k", "member")), 0);
    }

    #[test]
    fn above_clearance_never_leaves_and_newest_comes_first() {
        let r = Rules::parse(Some(S)).unwrap();
        let m = [
            meta(Some("public"), 1),
            meta(Some("secret"), 9),
            meta(None, 3),
            meta(Some("internal"), 2),
            meta(Some("bogus"), 5),
        ];
        assert_eq!(r.select(&who("t_x", "k", "member"), &m), [2, 0]);
        assert_eq!(r.select(&who("t_ops", "k", "member"), &m), [2, 3, 0]);
        assert_eq!(r.select(&who("t", "k_boss", "member"), &m), [1, 2, 3, 0]);
    }
}

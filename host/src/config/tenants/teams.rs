//! `[[teams]]` and `[[keys]]`: the teams and keys the file declares (keys by the hash of their
//! secret only), each key with its role and each team on its plan (`crate::domain` defines both).

use std::collections::HashMap;

use serde::Deserialize;

use crate::domain::{Plan, Role};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct RawTeam {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    plan: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::config) struct RawKey {
    name: String,
    team: String,
    role: Role,
    /// `sha256:<64 hex>` of the secret; the secret itself is never in the file.
    hash: String,
}

#[derive(Debug, Clone)]
pub struct TeamConfig {
    pub id: String,
    pub name: String,
    pub plan: Plan,
}

#[derive(Debug, Clone)]
pub struct KeyConfig {
    pub name: String,
    pub team: String,
    pub role: Role,
    pub hash: [u8; 32],
}

/// The teams, and every team id seen (first index of each).
pub(in crate::config) fn validate_teams(
    raw: Vec<RawTeam>,
    err: &mut impl FnMut(String, &str),
) -> (Vec<TeamConfig>, HashMap<String, usize>) {
    let mut teams = Vec::new();
    let mut team_ids = HashMap::new();
    for (i, t) in raw.into_iter().enumerate() {
        if t.id.trim().is_empty() {
            err(format!("teams[{i}].id"), "must not be empty");
        } else if let Some(j) = team_ids.insert(t.id.clone(), i) {
            err(
                format!("teams[{i}].id"),
                &format!("duplicate of teams[{j}].id"),
            );
        }
        let plan = match t.plan.as_deref() {
            None => Plan::default(),
            Some(p) => Plan::parse(p).unwrap_or_else(|| {
                err(
                    format!("teams[{i}].plan"),
                    "must be `development`, `professional` or `enterprise`",
                );
                Plan::default()
            }),
        };
        teams.push(TeamConfig {
            plan,
            name: t.name.unwrap_or_else(|| t.id.clone()),
            id: t.id,
        });
    }
    (teams, team_ids)
}

/// The keys; each names one of `team_ids` and a hash no other key has.
pub(in crate::config) fn validate_keys(
    raw: Vec<RawKey>,
    team_ids: &HashMap<String, usize>,
    err: &mut impl FnMut(String, &str),
) -> Vec<KeyConfig> {
    let mut keys = Vec::new();
    let mut hashes = HashMap::new();
    for (i, k) in raw.into_iter().enumerate() {
        let p = format!("keys[{i}]");
        if !team_ids.contains_key(&k.team) {
            err(
                format!("{p}.team"),
                &format!("`{}` is not one of the teams", k.team),
            );
        }
        match parse_key_hash(&k.hash) {
            Some(hash) => {
                if let Some(j) = hashes.insert(hash, i) {
                    err(format!("{p}.hash"), &format!("same key as keys[{j}]"));
                }
                keys.push(KeyConfig {
                    name: k.name,
                    team: k.team,
                    role: k.role,
                    hash,
                });
            }
            None => err(
                format!("{p}.hash"),
                "must be `sha256:` followed by 64 hex digits (see `sovereign hash-key`)",
            ),
        }
    }
    keys
}

fn parse_key_hash(s: &str) -> Option<[u8; 32]> {
    let hex_part = s.strip_prefix("sha256:")?;
    let bytes = hex::decode(hex_part).ok()?;
    bytes.try_into().ok()
}

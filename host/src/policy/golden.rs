//! Golden inputs for router policies: `sovereign policy test` runs a component against them
//! under the production limits and prints each decision. A case is a request's facts (what the
//! gateway would tell the router) and, optionally, what the decision must be.
//!
//! A golden file is JSON Lines, one case per line (blank lines and lines starting with `#` are
//! skipped); every key is optional:
//!
//! ```json
//! {"name": "arabic", "facts": {"language": "ar", "prompt_tokens": 40}, "expect": {"model": "jais-30b-chat", "rule": "arabic"}}
//! {"facts": {"team_id": "research", "labels": {"tier": "gold"}}, "expect": {"policy": "my-router"}}
//! {"facts": {"classification": "restricted"}, "expect": {"rejected": 403}}
//! ```
//!
//! `facts` keys: `request_id`, `team_id`, `key_id`, `actor_id`, `requested_model` (default
//! `auto-router`), `language` (default `en`), `prompt_tokens` (default 100), `profile`,
//! `classification`, `allowed_regions`, `stream`, `labels` (an object). `expect` keys: `model`,
//! `fallbacks`, `rule`, `policy`, or `rejected` (the 4xx/5xx status the router must refuse with).
//! A case fails when the call traps, times out, exceeds its memory, answers with a model that is
//! not a candidate, or does not match its `expect`; without `expect`, any decision or 4xx
//! rejection passes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{Candidate, PolicyError, RouteFacts, RouterDecision, RouterPolicy};
use crate::domain::AUTO_ROUTER;

/// One golden input.
#[derive(Debug, Clone)]
pub struct GoldenCase {
    pub name: String,
    pub facts: RouteFacts,
    pub expect: Option<Expect>,
}

/// What a case's decision must be; unset fields are not checked.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub fallbacks: Option<Vec<String>>,
    #[serde(default)]
    pub rule: Option<String>,
    #[serde(default)]
    pub policy: Option<String>,
    /// The router must refuse with this status.
    #[serde(default)]
    pub rejected: Option<u16>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    facts: RawFacts,
    #[serde(default)]
    expect: Option<Expect>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFacts {
    request_id: Option<String>,
    team_id: Option<String>,
    key_id: Option<String>,
    actor_id: Option<String>,
    requested_model: Option<String>,
    language: Option<String>,
    prompt_tokens: Option<u32>,
    profile: Option<String>,
    classification: Option<String>,
    #[serde(default)]
    allowed_regions: Vec<String>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

impl RawFacts {
    fn into_facts(self, n: usize) -> RouteFacts {
        RouteFacts {
            request_id: self.request_id.unwrap_or_else(|| format!("golden-{n}")),
            team_id: self.team_id.unwrap_or_else(|| "golden-team".into()),
            key_id: self.key_id.unwrap_or_else(|| "golden-key".into()),
            actor_id: self.actor_id.unwrap_or_else(|| "golden-actor".into()),
            requested_model: self.requested_model.unwrap_or_else(|| AUTO_ROUTER.into()),
            language: self.language.unwrap_or_else(|| "en".into()),
            prompt_tokens: self.prompt_tokens.unwrap_or(100),
            profile: self.profile,
            classification: self.classification,
            allowed_regions: self.allowed_regions,
            stream: self.stream,
            labels: self.labels.into_iter().collect(),
        }
    }
}

/// Parses a golden file (JSON Lines); an error names the line.
pub fn parse_jsonl(text: &str) -> Result<Vec<GoldenCase>, String> {
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let raw: RawCase =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let n = cases.len() + 1;
        cases.push(GoldenCase {
            name: raw.name.unwrap_or_else(|| format!("line-{}", i + 1)),
            facts: raw.facts.into_facts(n),
            expect: raw.expect,
        });
    }
    if cases.is_empty() {
        return Err("the golden file holds no case".into());
    }
    Ok(cases)
}

/// The built-in set, used when no golden file is given: the requests every router meets (short
/// and long English, Arabic, Persian, French, an unknown language, a stream, each profile, a
/// team), with no expectations beyond a valid answer.
pub fn builtin() -> Vec<GoldenCase> {
    let case = |name: &str, f: &dyn Fn(&mut RawFacts)| {
        let mut raw = RawFacts::default();
        f(&mut raw);
        (name.to_string(), raw)
    };
    let cases = [
        case("en-short", &|f| f.prompt_tokens = Some(12)),
        case("en-long", &|f| f.prompt_tokens = Some(6000)),
        case("ar-short", &|f| {
            f.language = Some("ar".into());
            f.prompt_tokens = Some(20);
        }),
        case("fa", &|f| f.language = Some("fa".into())),
        case("fr", &|f| f.language = Some("fr".into())),
        case("und", &|f| f.language = Some("und".into())),
        case("stream", &|f| f.stream = true),
        case("profile-cost", &|f| f.profile = Some("cost".into())),
        case("profile-performance", &|f| {
            f.profile = Some("performance".into())
        }),
        case("profile-balanced", &|f| f.profile = Some("balanced".into())),
        case("team-research", &|f| f.team_id = Some("research".into())),
        case("classified", &|f| {
            f.classification = Some("sensitive".into())
        }),
    ];
    cases
        .into_iter()
        .enumerate()
        .map(|(i, (name, raw))| GoldenCase {
            name,
            facts: raw.into_facts(i + 1),
            expect: None,
        })
        .collect()
}

/// One case's result.
#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    pub result: Result<RouterDecision, PolicyError>,
    pub elapsed: Duration,
    /// Why the case failed; `None` when it passed.
    pub failure: Option<String>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.passed() { "ok  " } else { "FAIL" };
        let us = self.elapsed.as_secs_f64() * 1e6;
        match &self.result {
            Ok(d) => {
                let fallbacks: Vec<&str> = d.fallbacks.iter().map(|m| m.id.0.as_str()).collect();
                write!(
                    f,
                    "{verdict} {:<22} -> {} (rule `{}`, policy `{}`, fallbacks [{}]) {us:.0} µs",
                    self.name,
                    d.model.id.0,
                    d.rule,
                    d.policy,
                    fallbacks.join(", ")
                )?;
            }
            Err(PolicyError::Rejected {
                status,
                code,
                message,
                ..
            }) => write!(
                f,
                "{verdict} {:<22} -> rejected {status} {code}: {message} {us:.0} µs",
                self.name
            )?,
            Err(e) => write!(f, "{verdict} {:<22} -> error: {e}", self.name)?,
        }
        if let Some(why) = &self.failure {
            write!(f, "\n     {why}")?;
        }
        Ok(())
    }
}

/// Runs every case in order through `policy`.
pub async fn run(
    policy: &RouterPolicy,
    cases: &[GoldenCase],
    candidates: &[Candidate],
) -> Vec<Outcome> {
    let mut out = Vec::with_capacity(cases.len());
    for case in cases {
        let started = Instant::now();
        let result = policy.route(&case.facts, candidates).await;
        let elapsed = started.elapsed();
        let failure = judge(&result, case.expect.as_ref());
        out.push(Outcome {
            name: case.name.clone(),
            result,
            elapsed,
            failure,
        });
    }
    out
}

fn judge(result: &Result<RouterDecision, PolicyError>, expect: Option<&Expect>) -> Option<String> {
    let want = expect.cloned().unwrap_or_default();
    match (result, want.rejected) {
        (Err(PolicyError::Rejected { status, .. }), Some(w)) if *status == w => None,
        (Err(PolicyError::Rejected { status, .. }), Some(w)) => {
            Some(format!("expected a {w} rejection, got {status}"))
        }
        (Err(PolicyError::Rejected { status, .. }), None) if expect.is_none() && *status < 500 => {
            None
        }
        (Err(PolicyError::Rejected { status, .. }), None) => {
            Some(format!("expected a decision, got a {status} rejection"))
        }
        (Err(e), _) => Some(e.to_string()),
        (Ok(_), Some(w)) => Some(format!("expected a {w} rejection, got a decision")),
        (Ok(d), None) => {
            let mut wrong = Vec::new();
            let mut check = |what: &str, want: &Option<String>, got: &str| {
                if let Some(w) = want
                    && w != got
                {
                    wrong.push(format!("{what}: expected `{w}`, got `{got}`"));
                }
            };
            check("model", &want.model, &d.model.id.0);
            check("rule", &want.rule, &d.rule);
            check("policy", &want.policy, &d.policy);
            if let Some(w) = &want.fallbacks {
                let got: Vec<&str> = d.fallbacks.iter().map(|m| m.id.0.as_str()).collect();
                if *w != got {
                    wrong.push(format!("fallbacks: expected {w:?}, got {got:?}"));
                }
            }
            (!wrong.is_empty()).then(|| wrong.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_lines_parse_with_defaults_and_errors_name_the_line() {
        let cases = parse_jsonl(
            "# a comment\n\n{\"name\": \"a\", \"facts\": {\"language\": \"ar\", \"labels\": {\"k\": \"v\"}}, \"expect\": {\"model\": \"m\"}}\n{}\n",
        )
        .unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].facts.language, "ar");
        assert_eq!(cases[0].facts.labels, [("k".to_string(), "v".to_string())]);
        assert_eq!(
            cases[0].expect.as_ref().unwrap().model.as_deref(),
            Some("m")
        );
        assert_eq!(cases[1].name, "line-4");
        assert_eq!(cases[1].facts.requested_model, AUTO_ROUTER);
        assert_eq!(cases[1].facts.prompt_tokens, 100);
        let err = parse_jsonl("{}\n{\"fact\": {}}\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(parse_jsonl("\n# nothing\n").is_err());
    }

    #[test]
    fn the_builtin_set_covers_languages_profiles_and_streams() {
        let cases = builtin();
        assert!(cases.len() >= 10);
        assert!(cases.iter().any(|c| c.facts.language == "ar"));
        assert!(cases.iter().any(|c| c.facts.stream));
        assert!(cases.iter().all(|c| c.expect.is_none()));
    }
}

//! The routing policy document (YAML) and the decision it makes: ordered rules first, then the
//! request's profile among healthy candidates that speak the prompt's language, then `default`.
//!
//! ```yaml
//! name: sovereign-default
//! routes:
//!   - name: arabic
//!     condition: "language == 'ar'"
//!     model: jais-30b
//! default: llama-3.1-70b
//! ```

use std::fmt;

use crate::condition::{Condition, Facts};
use crate::yaml::{self, Node, Pos, Scalar};

/// The model id that asks the gateway to choose.
pub const AUTO_ROUTER: &str = "auto-router";

/// Largest document accepted, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Most routes a document may hold.
pub const MAX_ROUTES: usize = 1024;

struct RawRoute {
    name: Scalar,
    condition: Scalar,
    model: Scalar,
}

/// One rule: when `condition` holds, route to `model`.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub condition: Condition,
    pub model: String,
}

/// A validated routing policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub name: String,
    pub rules: Vec<Rule>,
    pub default: String,
}

/// Why a document is not a valid policy. `line`/`column` are 1-based positions in the document
/// when known; `path` names the offending field (`routes[1].condition`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentError {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub path: Option<String>,
    pub message: String,
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid routing policy")?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, " at line {l}, column {c}")?;
        }
        if let Some(p) = &self.path {
            write!(f, " ({p})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for DocumentError {}

/// A candidate model as the router sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub languages: Vec<String>,
    pub healthy: bool,
    pub input_cost_per_mtok: f64,
    pub output_cost_per_mtok: f64,
    pub latency_p50_ms: Option<f64>,
}

/// The router's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub model: String,
    pub fallbacks: Vec<String>,
    /// The rule that decided: a route's name, `profile:<name>`, or `default`.
    pub rule: String,
}

fn at_path(path: String, message: impl Into<String>) -> DocumentError {
    DocumentError {
        line: None,
        column: None,
        path: Some(path),
        message: message.into(),
    }
}

fn at_scalar(s: &Scalar, path: &str, message: impl Into<String>) -> DocumentError {
    at_node(s.at, path, message)
}

fn at_node(at: Pos, path: &str, message: impl Into<String>) -> DocumentError {
    DocumentError {
        line: Some(at.line),
        column: Some(at.column),
        path: Some(path.to_string()),
        message: message.into(),
    }
}

fn string(node: &Node, path: &str) -> Result<Scalar, DocumentError> {
    match node {
        Node::Scalar(s) => Ok(s.clone()),
        other => Err(at_node(other.at(), path, "expected a string")),
    }
}

/// Takes the named keys of a mapping: unknown keys are errors, `required` ones must be present.
fn take<'n>(
    node: &'n Node,
    path: &str,
    known: &[&str],
    required: &[&str],
) -> Result<Vec<Option<&'n Node>>, DocumentError> {
    let Node::Map { entries, at } = node else {
        return Err(at_node(node.at(), path, "expected a mapping"));
    };
    let mut found = vec![None; known.len()];
    for (k, v) in entries {
        let Some(i) = known.iter().position(|n| *n == k.text) else {
            let list = known
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(at_node(
                k.at,
                path,
                format!("unknown field `{}`, expected one of {list}", k.text),
            ));
        };
        found[i] = Some(v);
    }
    for r in required {
        if let Some(i) = known.iter().position(|n| n == r)
            && found[i].is_none()
        {
            return Err(at_node(*at, path, format!("missing field `{r}`")));
        }
    }
    Ok(found)
}

/// The document's `name`, `routes` and `default`.
fn fields(root: &Node) -> Result<(Scalar, Vec<RawRoute>, Scalar), DocumentError> {
    let top = take(
        root,
        "document",
        &["name", "routes", "default"],
        &["name", "default"],
    )?;
    let (Some(name), Some(default)) = (top[0], top[2]) else {
        return Err(at_node(root.at(), "document", "missing field"));
    };
    let mut routes = Vec::new();
    match top[1] {
        None => {}
        Some(Node::Seq { items, .. }) => {
            for (i, item) in items.iter().enumerate() {
                let path = format!("routes[{i}]");
                let f = take(
                    item,
                    &path,
                    &["name", "condition", "model"],
                    &["name", "condition", "model"],
                )?;
                let (Some(n), Some(c), Some(m)) = (f[0], f[1], f[2]) else {
                    return Err(at_node(item.at(), &path, "missing field"));
                };
                routes.push(RawRoute {
                    name: string(n, &format!("{path}.name"))?,
                    condition: string(c, &format!("{path}.condition"))?,
                    model: string(m, &format!("{path}.model"))?,
                });
            }
        }
        Some(other) => return Err(at_node(other.at(), "routes", "expected a list of routes")),
    }
    Ok((string(name, "name")?, routes, string(default, "default")?))
}

impl Policy {
    /// Parses and validates a routing policy document.
    pub fn parse(text: &str) -> Result<Policy, DocumentError> {
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(DocumentError {
                line: None,
                column: None,
                path: None,
                message: format!("document larger than {MAX_DOCUMENT_BYTES} bytes"),
            });
        }
        let root = yaml::parse(text).map_err(|e| DocumentError {
            line: Some(e.at.line),
            column: Some(e.at.column),
            path: None,
            message: e.message,
        })?;
        let (name, routes, default) = fields(&root)?;
        if name.text.trim().is_empty() {
            return Err(at_scalar(&name, "name", "must not be empty"));
        }
        if default.text.trim().is_empty() {
            return Err(at_scalar(&default, "default", "must name a model"));
        }
        if routes.len() > MAX_ROUTES {
            return Err(at_path(
                "routes".into(),
                format!("more than {MAX_ROUTES} routes"),
            ));
        }
        let mut rules: Vec<Rule> = Vec::with_capacity(routes.len());
        for (i, r) in routes.into_iter().enumerate() {
            if r.name.text.trim().is_empty() {
                return Err(at_scalar(
                    &r.name,
                    &format!("routes[{i}].name"),
                    "must not be empty",
                ));
            }
            if rules.iter().any(|x| x.name == r.name.text) {
                return Err(at_scalar(
                    &r.name,
                    &format!("routes[{i}].name"),
                    format!("duplicate route name `{}`", r.name.text),
                ));
            }
            if r.model.text.trim().is_empty() {
                return Err(at_scalar(
                    &r.model,
                    &format!("routes[{i}].model"),
                    "must name a model",
                ));
            }
            let c = &r.condition;
            let condition = Condition::parse(&c.text).map_err(|e| {
                // Point into the document when the condition is written there verbatim.
                let at = if c.verbatim && !c.text.is_empty() {
                    let before = c.text.get(..e.offset).unwrap_or(&c.text).chars().count();
                    Pos {
                        line: c.at.line,
                        column: c.at.column + usize::from(c.quoted) + before,
                    }
                } else {
                    c.at
                };
                DocumentError {
                    line: Some(at.line),
                    column: Some(at.column),
                    path: Some(format!("routes[{i}].condition")),
                    message: format!("{} (offset {} in the condition)", e.message, e.offset),
                }
            })?;
            rules.push(Rule {
                name: r.name.text,
                condition,
                model: r.model.text,
            });
        }
        Ok(Policy {
            name: name.text,
            rules,
            default: default.text,
        })
    }

    /// Chooses the model for a request.
    ///
    /// 1. Rules top to bottom; the first whose condition holds and whose model is a healthy
    ///    candidate wins (a rule naming a missing or unhealthy model is passed over).
    /// 2. No rule: a request for `auto-router` with a profile picks among the healthy candidates
    ///    that list the prompt's language (see [`pick_by_profile`]).
    /// 3. Otherwise `default`.
    ///
    /// Fallbacks: `default`, when it is a healthy candidate other than the chosen model.
    pub fn decide(&self, facts: &Facts, candidates: &[Candidate]) -> Decision {
        let usable = |id: &str| candidates.iter().any(|c| c.id == id && c.healthy);
        let (model, rule) = self
            .rules
            .iter()
            .find(|r| r.condition.matches(facts) && usable(&r.model))
            .map(|r| (r.model.clone(), r.name.clone()))
            .or_else(|| {
                if facts.model != AUTO_ROUTER {
                    return None;
                }
                let profile = facts.profile.as_deref()?;
                let chosen = pick_by_profile(profile, &facts.language, candidates)?;
                Some((chosen.id.clone(), format!("profile:{profile}")))
            })
            .unwrap_or_else(|| (self.default.clone(), "default".to_string()));
        let fallbacks = if model != self.default && usable(&self.default) {
            vec![self.default.clone()]
        } else {
            Vec::new()
        };
        Decision {
            model,
            fallbacks,
            rule,
        }
    }
}

/// Weight of cost in the `balanced` profile; latency gets the rest.
pub const BALANCED_COST_WEIGHT: f64 = 0.5;

/// Picks among the healthy candidates that list `language`:
///
/// - `cost`: lowest input + output price per million tokens;
/// - `performance`: lowest observed p50 latency (unmeasured models rank last, then by cost);
/// - `balanced`: lowest `0.5 * cost' + 0.5 * latency'`, where each is scaled to 0..1 between the
///   cheapest/fastest and the dearest/slowest eligible candidate (unmeasured latency counts as the
///   slowest).
///
/// Ties keep the candidates' order. Unknown profiles and no eligible candidate give `None`.
pub fn pick_by_profile<'a>(
    profile: &str,
    language: &str,
    candidates: &'a [Candidate],
) -> Option<&'a Candidate> {
    let eligible: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.healthy && c.languages.iter().any(|l| l == language))
        .collect();
    let cost = |c: &Candidate| c.input_cost_per_mtok + c.output_cost_per_mtok;
    let min_by = |key: &dyn Fn(&Candidate) -> (f64, f64)| {
        eligible.iter().copied().reduce(|best, c| {
            // Strictly better only, so the first of equals stays.
            if key(c).partial_cmp(&key(best)) == Some(std::cmp::Ordering::Less) {
                c
            } else {
                best
            }
        })
    };
    match profile {
        "cost" => min_by(&|c| (cost(c), 0.0)),
        "performance" => min_by(&|c| (c.latency_p50_ms.unwrap_or(f64::INFINITY), cost(c))),
        "balanced" => {
            let range = |f: &dyn Fn(&Candidate) -> Option<f64>| {
                let vals = eligible.iter().filter_map(|c| f(c));
                let lo = vals.clone().fold(f64::INFINITY, f64::min);
                let hi = vals.fold(f64::NEG_INFINITY, f64::max);
                (lo, hi)
            };
            let scale = |v: Option<f64>, (lo, hi): (f64, f64)| match v {
                None => 1.0,
                Some(_) if hi <= lo => 0.0,
                Some(v) => (v - lo) / (hi - lo),
            };
            let cost_range = range(&|c| Some(cost(c)));
            let lat_range = range(&|c| c.latency_p50_ms);
            min_by(&|c| {
                let score = BALANCED_COST_WEIGHT * scale(Some(cost(c)), cost_range)
                    + (1.0 - BALANCED_COST_WEIGHT) * scale(c.latency_p50_ms, lat_range);
                (score, 0.0)
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "\
name: sovereign-default
routes:
  - name: arabic
    condition: \"language == 'ar'\"
    model: jais-30b
  - name: small-prompts
    condition: \"prompt_tokens < 500\"
    model: llama-3.2-3b
default: llama-3.1-70b
";

    fn cand(id: &str, langs: &[&str], cost: (f64, f64), p50: Option<f64>) -> Candidate {
        Candidate {
            id: id.into(),
            languages: langs.iter().map(|s| s.to_string()).collect(),
            healthy: true,
            input_cost_per_mtok: cost.0,
            output_cost_per_mtok: cost.1,
            latency_p50_ms: p50,
        }
    }

    fn fleet() -> Vec<Candidate> {
        vec![
            cand(
                "llama-3.1-70b",
                &["en", "fr", "ar"],
                (0.6, 0.8),
                Some(900.0),
            ),
            cand("jais-30b", &["ar", "en"], (0.4, 0.6), Some(700.0)),
            cand("llama-3.2-3b", &["en", "fr"], (0.05, 0.1), Some(120.0)),
            cand("mistral-7b", &["en", "fr"], (0.1, 0.2), Some(90.0)),
        ]
    }

    fn facts(language: &str, tokens: u32) -> Facts {
        Facts {
            language: language.into(),
            prompt_tokens: tokens,
            team: "t1".into(),
            model: AUTO_ROUTER.into(),
            ..Facts::default()
        }
    }

    fn policy(text: &str) -> Policy {
        match Policy::parse(text) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    fn parse_err(text: &str) -> DocumentError {
        match Policy::parse(text) {
            Ok(p) => panic!("parsed: {p:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn seed_document_parses() {
        let p = policy(SEED);
        assert_eq!(p.name, "sovereign-default");
        assert_eq!(p.rules.len(), 2);
        assert_eq!(p.rules[0].name, "arabic");
        assert_eq!(p.default, "llama-3.1-70b");
    }

    #[test]
    fn arabic_goes_to_the_arabic_model() {
        let d = policy(SEED).decide(&facts("ar", 2000), &fleet());
        assert_eq!(d.model, "jais-30b");
        assert_eq!(d.rule, "arabic");
        assert_eq!(d.fallbacks, vec!["llama-3.1-70b".to_string()]);
    }

    #[test]
    fn short_prompt_goes_to_the_small_model() {
        let d = policy(SEED).decide(&facts("en", 42), &fleet());
        assert_eq!(
            (d.model.as_str(), d.rule.as_str()),
            ("llama-3.2-3b", "small-prompts")
        );
    }

    #[test]
    fn first_matching_rule_wins() {
        // A short Arabic prompt matches both rules; the earlier one decides.
        let d = policy(SEED).decide(&facts("ar", 10), &fleet());
        assert_eq!(d.rule, "arabic");
        let swapped = "\
name: swapped
routes:
  - {name: small-prompts, condition: 'prompt_tokens < 500', model: llama-3.2-3b}
  - {name: arabic, condition: \"language == 'ar'\", model: jais-30b}
default: llama-3.1-70b
";
        let d = policy(swapped).decide(&facts("ar", 10), &fleet());
        assert_eq!(d.rule, "small-prompts");
    }

    #[test]
    fn no_match_goes_to_default() {
        let d = policy(SEED).decide(&facts("en", 2000), &fleet());
        assert_eq!(
            (d.model.as_str(), d.rule.as_str()),
            ("llama-3.1-70b", "default")
        );
        assert!(d.fallbacks.is_empty());
    }

    #[test]
    fn rules_naming_unhealthy_or_unknown_models_are_passed_over() {
        let mut f = fleet();
        f[1].healthy = false; // jais-30b
        let d = policy(SEED).decide(&facts("ar", 10), &f);
        assert_eq!(d.rule, "small-prompts");
        let d = policy(SEED).decide(&facts("ar", 10), &f[2..]);
        assert_eq!(d.rule, "small-prompts");
    }

    #[test]
    fn profiles_choose_among_healthy_speakers_of_the_language() {
        let p = policy("name: p\ndefault: llama-3.1-70b\n");
        let f = fleet();
        let pick = |profile: &str, lang: &str| {
            let mut fa = facts(lang, 2000);
            fa.profile = Some(profile.into());
            p.decide(&fa, &f)
        };
        let d = pick("cost", "en");
        assert_eq!(
            (d.model.as_str(), d.rule.as_str()),
            ("llama-3.2-3b", "profile:cost")
        );
        assert_eq!(pick("performance", "en").model, "mistral-7b");
        // Arabic: only llama-3.1-70b and jais-30b speak it; jais is cheaper and faster.
        assert_eq!(pick("cost", "ar").model, "jais-30b");
        assert_eq!(pick("performance", "ar").model, "jais-30b");
        assert_eq!(pick("balanced", "ar").model, "jais-30b");
        // Nobody speaks Urdu: default.
        assert_eq!(pick("cost", "ur").rule, "default");
        // Unknown profile: default.
        assert_eq!(pick("fastest", "en").rule, "default");
    }

    #[test]
    fn profiles_apply_only_to_auto_router_and_only_when_no_rule_matched() {
        let p = policy(SEED);
        let mut fa = facts("en", 2000);
        fa.profile = Some("cost".into());
        fa.model = "llama-3.1-70b".into();
        assert_eq!(p.decide(&fa, &fleet()).rule, "default");
        fa.model = AUTO_ROUTER.into();
        fa.prompt_tokens = 10;
        assert_eq!(p.decide(&fa, &fleet()).rule, "small-prompts");
    }

    #[test]
    fn balanced_blends_cost_and_latency() {
        let f = vec![
            // cheapest but slowest
            cand("cheap-slow", &["en"], (0.1, 0.1), Some(1000.0)),
            // dearest but fastest
            cand("dear-fast", &["en"], (1.0, 1.0), Some(100.0)),
            // close to the cheapest and close to the fastest
            cand("middle", &["en"], (0.2, 0.2), Some(200.0)),
        ];
        assert_eq!(
            pick_by_profile("balanced", "en", &f).map(|c| c.id.as_str()),
            Some("middle")
        );
        assert_eq!(
            pick_by_profile("cost", "en", &f).map(|c| c.id.as_str()),
            Some("cheap-slow")
        );
        assert_eq!(
            pick_by_profile("performance", "en", &f).map(|c| c.id.as_str()),
            Some("dear-fast")
        );
    }

    #[test]
    fn unmeasured_latency_ranks_last_and_ties_keep_order() {
        let f = vec![
            cand("a", &["en"], (1.0, 1.0), None),
            cand("b", &["en"], (1.0, 1.0), Some(500.0)),
            cand("c", &["en"], (1.0, 1.0), Some(500.0)),
        ];
        assert_eq!(
            pick_by_profile("performance", "en", &f).map(|c| c.id.as_str()),
            Some("b")
        );
        assert_eq!(
            pick_by_profile("cost", "en", &f).map(|c| c.id.as_str()),
            Some("a")
        );
        assert_eq!(
            pick_by_profile("balanced", "en", &f).map(|c| c.id.as_str()),
            Some("b")
        );
        let single = vec![cand("only", &["en"], (0.0, 0.0), None)];
        assert_eq!(
            pick_by_profile("balanced", "en", &single).map(|c| c.id.as_str()),
            Some("only")
        );
        let none: Vec<Candidate> = Vec::new();
        assert!(pick_by_profile("cost", "en", &none).is_none());
    }

    #[test]
    fn bad_condition_is_reported_at_its_line_and_column() {
        let doc = "\
name: broken
routes:
  - name: arabic
    condition: \"language == 'ar'\"
    model: jais-30b
  - name: small
    condition: \"prompt_tokens <> 500\"
    model: llama-3.2-3b
default: llama-3.1-70b
";
        let e = parse_err(doc);
        assert_eq!(e.path.as_deref(), Some("routes[1].condition"));
        // `<>`: `<` then `>` where an operand is expected, column of the `>`.
        assert_eq!((e.line, e.column), (Some(7), Some(32)), "{e}");
        assert!(e.to_string().contains("line 7, column 32"), "{e}");
    }

    #[test]
    fn yaml_errors_carry_their_position() {
        let e = parse_err("name: x\nroutes: [\ndefault: y\n");
        assert!(e.line.is_some() && e.column.is_some(), "{e}");
        let e = parse_err(
            "name: x\nroutes:\n  - name: a\n    condition: stream\n    modle: m\ndefault: y\n",
        );
        assert!(e.message.contains("unknown field `modle`"), "{e}");
        assert_eq!(e.line, Some(5), "{e}");
        let e = parse_err("name: x\nroutes: []\n");
        assert!(e.message.contains("missing field `default`"), "{e}");
        let e = parse_err("name: x\nroutes: []\ndefault: y\nextra: 1\n");
        assert!(e.message.contains("unknown field `extra`"), "{e}");
        assert_eq!(e.line, Some(4), "{e}");
    }

    #[test]
    fn semantic_errors_name_the_field() {
        let e = parse_err("name: ''\ndefault: y\n");
        assert_eq!(e.path.as_deref(), Some("name"));
        let e = parse_err("name: x\ndefault: ' '\n");
        assert_eq!(e.path.as_deref(), Some("default"));
        let dup = "name: x\nroutes:\n  - {name: a, condition: stream, model: m}\n  - {name: a, condition: stream, model: n}\ndefault: y\n";
        let e = parse_err(dup);
        assert_eq!(e.path.as_deref(), Some("routes[1].name"));
        let e = parse_err(
            "name: x\nroutes:\n  - {name: a, condition: stream, model: ''}\ndefault: y\n",
        );
        assert_eq!(e.path.as_deref(), Some("routes[0].model"));
        let e = parse_err("name: x\nroutes:\n  - {name: a, condition: '', model: m}\ndefault: y\n");
        assert_eq!(e.path.as_deref(), Some("routes[0].condition"));
        assert!(e.message.contains("empty"));
    }

    #[test]
    fn condition_positions_for_plain_and_escaped_scalars() {
        // Plain scalar: the column is exact.
        let e = parse_err(
            "name: x\nroutes:\n  - name: a\n    condition: stream and\n    model: m\ndefault: y\n",
        );
        assert_eq!((e.line, e.column), (Some(4), Some(26)), "{e}");
        // With escapes the text is not verbatim: the scalar's own position is reported.
        let e = parse_err(
            "name: x\nroutes:\n  - {name: a, condition: \"team == \\\"x\\\" or\", model: m}\ndefault: y\n",
        );
        assert_eq!((e.line, e.column), (Some(3), Some(26)), "{e}");
        assert!(e.message.contains("unexpected end"), "{e}");
    }

    #[test]
    fn wrong_shapes_are_reported_where_they_are() {
        let e = parse_err("name: x\nroutes: oops\ndefault: y\n");
        assert_eq!(
            (e.path.as_deref(), e.line, e.column),
            (Some("routes"), Some(2), Some(9))
        );
        let e = parse_err("name: [a]\ndefault: y\n");
        assert_eq!((e.path.as_deref(), e.line), (Some("name"), Some(1)));
        let e = parse_err("- a\n- b\n");
        assert!(e.message.contains("expected a mapping"), "{e}");
        let e = parse_err("name: x\nroutes:\n  - {name: a, model: m}\ndefault: y\n");
        assert!(e.message.contains("missing field `condition`"), "{e}");
        assert_eq!(e.line, Some(3));
    }

    #[test]
    fn oversized_documents_are_rejected() {
        let big = format!("name: x\ndefault: y\n#{}\n", "x".repeat(MAX_DOCUMENT_BYTES));
        assert!(parse_err(&big).message.contains("larger than"));
    }
}

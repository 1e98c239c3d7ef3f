//! The built-in rules router: a routing policy component. It reads its policy document from the
//! host (`config-get("policy")`), evaluates the routes top to bottom and answers with a model.
//!
//! The logic lives in [`condition`], [`policy`] and [`yaml`], plain Rust tested natively; the component
//! glue below (on `sovereign-policy-sdk`) only converts between the WIT types and those.

pub mod condition;
pub mod policy;
pub mod yaml;

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::host::{self, Level};
    use sovereign_policy_sdk::router::{ModelInfo, Rejection, RequestFacts, RouteDecision, Router};

    use std::cell::RefCell;
    use std::rc::Rc;

    use crate::condition::Facts;
    use crate::policy::{Candidate, Policy};

    struct RulesRouter;

    thread_local! {
        /// The document, parsed on this instance's first call. An instance's settings never
        /// change (new settings are a new version with new instances; wit/policy.wit,
        /// `config-get`), so a warm instance reads and parses it once.
        static PARSED: RefCell<Option<Rc<Policy>>> = const { RefCell::new(None) };
    }

    /// The policy document, parsed (once per instance).
    fn policy() -> Result<Rc<Policy>, Rejection> {
        if let Some(p) = PARSED.with_borrow(Option::clone) {
            return Ok(p);
        }
        let Some(text) = host::document() else {
            return Err(misconfigured(
                "the rules router has no `policy` setting".into(),
            ));
        };
        let p = Rc::new(Policy::parse(&text).map_err(|e| misconfigured(e.to_string()))?);
        PARSED.set(Some(p.clone()));
        Ok(p)
    }

    fn misconfigured(message: String) -> Rejection {
        host::log(Level::Error, &message);
        Rejection::new(500, "policy_misconfigured", &message)
    }

    impl Router for RulesRouter {
        fn route(
            facts: RequestFacts,
            candidates: Vec<ModelInfo>,
        ) -> Result<RouteDecision, Rejection> {
            let policy = policy()?;
            let facts = Facts {
                language: facts.language,
                prompt_tokens: facts.prompt_tokens,
                team: facts.team_id,
                profile: facts.profile,
                classification: facts.classification,
                stream: facts.stream,
                model: facts.requested_model,
            };
            let candidates: Vec<Candidate> = candidates
                .into_iter()
                .map(|m| Candidate {
                    id: m.id,
                    languages: m.languages,
                    healthy: m.healthy,
                    input_cost_per_mtok: m.input_cost_per_mtok,
                    output_cost_per_mtok: m.output_cost_per_mtok,
                    latency_p50_ms: m.latency_p50_ms,
                })
                .collect();
            let d = policy.decide(&facts, &candidates);
            Ok(RouteDecision {
                model: d.model,
                fallbacks: d.fallbacks,
                rule: d.rule,
                policy: policy.name.clone(),
            })
        }
    }

    sovereign_policy_sdk::export_router!(RulesRouter);
}

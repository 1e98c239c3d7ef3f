//! An example router on `sovereign-policy-sdk`: data residency first. A request goes to the
//! cheapest healthy **local** model that speaks its language; when no local model does, to the
//! cheapest healthy remote one that does; else to the cheapest healthy model. The policy name
//! (`X-Route-Policy`) is `rust-residency`.
//!
//! Build: `cargo build --release --target wasm32-wasip2 --manifest-path policies/Cargo.toml -p rust-router`
//! (or `scripts/build-examples`).

use sovereign_policy_sdk::router::{ModelInfo, Rejection, RequestFacts, RouteDecision, Router};

pub const POLICY: &str = "rust-residency";

pub struct Residency;

fn cheapest<'a>(models: impl Iterator<Item = &'a ModelInfo>) -> Option<&'a ModelInfo> {
    models.min_by(|a, b| a.total_cost().total_cmp(&b.total_cost()))
}

impl Router for Residency {
    fn route(facts: RequestFacts, candidates: Vec<ModelInfo>) -> Result<RouteDecision, Rejection> {
        let healthy = || candidates.iter().filter(|m| m.healthy);
        let speakers = || healthy().filter(|m| m.speaks(&facts.language));
        let (model, rule) = if let Some(m) = cheapest(speakers().filter(|m| m.local)) {
            (m, "local-speaker")
        } else if let Some(m) = cheapest(speakers()) {
            (m, "remote-speaker")
        } else if let Some(m) = cheapest(healthy()) {
            (m, "cheapest-healthy")
        } else {
            return Err(Rejection::new(
                503,
                "no_healthy_model",
                "No model is available.",
            ));
        };
        // Fall back to the other local speakers, cheapest first.
        let mut rest: Vec<&ModelInfo> =
            speakers().filter(|m| m.local && m.id != model.id).collect();
        rest.sort_by(|a, b| a.total_cost().total_cmp(&b.total_cost()));
        Ok(RouteDecision::new(&model.id, rule, POLICY)
            .with_fallbacks(rest.iter().map(|m| m.id.as_str())))
    }
}

sovereign_policy_sdk::export_router!(Residency);

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, languages: &[&str], local: bool, cost: f64) -> ModelInfo {
        ModelInfo {
            id: id.into(),
            family: "f".into(),
            languages: languages.iter().map(|l| l.to_string()).collect(),
            region: "r".into(),
            local,
            input_cost_per_mtok: cost,
            output_cost_per_mtok: cost,
            context_window: 8192,
            healthy: true,
            latency_p50_ms: None,
            tags: Vec::new(),
        }
    }

    fn facts(language: &str) -> RequestFacts {
        RequestFacts {
            request_id: "r".into(),
            team_id: "t".into(),
            key_id: "k".into(),
            actor_id: "a".into(),
            requested_model: "auto-router".into(),
            language: language.into(),
            prompt_tokens: 10,
            profile: None,
            classification: None,
            allowed_regions: Vec::new(),
            stream: false,
            labels: Vec::new(),
        }
    }

    fn fleet() -> Vec<ModelInfo> {
        vec![
            model("jais", &["ar", "en"], true, 1.0),
            model("allam", &["ar", "en"], true, 0.5),
            model("mistral", &["fr", "en"], false, 0.7),
            model("big-remote", &["en"], false, 0.1),
        ]
    }

    #[test]
    fn local_speakers_first_then_remote_then_any() {
        let d = Residency::route(facts("ar"), fleet()).unwrap();
        assert_eq!(
            (d.model.as_str(), d.rule.as_str()),
            ("allam", "local-speaker")
        );
        assert_eq!(d.fallbacks, ["jais"]);
        let d = Residency::route(facts("fr"), fleet()).unwrap();
        assert_eq!(
            (d.model.as_str(), d.rule.as_str()),
            ("mistral", "remote-speaker")
        );
        let d = Residency::route(facts("de"), fleet()).unwrap();
        assert_eq!(
            (d.model.as_str(), d.rule.as_str()),
            ("big-remote", "cheapest-healthy")
        );
        assert_eq!(d.policy, POLICY);
    }

    #[test]
    fn no_healthy_model_is_a_503() {
        let mut f = fleet();
        f.iter_mut().for_each(|m| m.healthy = false);
        assert_eq!(Residency::route(facts("en"), f).unwrap_err().status, 503);
    }
}

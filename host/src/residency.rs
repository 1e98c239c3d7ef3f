//! The residency guard: where a request may be processed. After routing and before any upstream
//! call, the serving model must be in a region the team allows, and a **sensitive** request must
//! stay on a `local` model; the same holds for every fallback. No policy can override it: the
//! router only ever sees compliant candidates, and its answer is checked again here. When no
//! compliant model exists the request is refused with 451 `sovereignty_error`, naming the
//! constraint.

use std::sync::Arc;

use crate::config::{Config, ModelConfig, ModelKind};
use crate::routing::{DEFAULT_POLICY, Route};

/// Classification labels that make a request sensitive (`X-Data-Classification` or the body's
/// `routing.classification`), besides a guardrail's flag.
pub const SENSITIVE_LABELS: &[&str] = &["sensitive", "confidential", "restricted", "secret"];

pub fn is_sensitive_label(label: &str) -> bool {
    SENSITIVE_LABELS.contains(&label)
}

/// What a request's processing must respect.
#[derive(Debug, Clone, Copy)]
pub struct Boundary<'a> {
    /// Regions the team may use; empty: every region.
    pub allowed_regions: &'a [String],
    /// Models the team may use; empty: every model (a breach is a 403, not a 451).
    pub allowed_models: &'a [String],
    /// Only `local` models.
    pub sensitive: bool,
}

/// The constraint a model breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Breach {
    #[error(
        "The model `{model}` runs in region `{region}`, outside the regions this team may use ({allowed}); no compliant model is available."
    )]
    Region {
        model: String,
        region: String,
        allowed: String,
    },
    #[error(
        "This request is classified sensitive and may only be processed by a local model; `{model}` is not local and no compliant model is available."
    )]
    NotLocal { model: String },
    #[error("No configured model satisfies this request's residency constraints.")]
    NoCandidate,
    #[error("This team may not use the model `{model}`.")]
    ModelNotAllowed { model: String },
}

impl Boundary<'static> {
    /// No constraint (policy smoke calls).
    pub const OPEN: Boundary<'static> = Boundary {
        allowed_regions: &[],
        allowed_models: &[],
        sensitive: false,
    };
}

impl Boundary<'_> {
    pub fn check(&self, m: &ModelConfig) -> Result<(), Breach> {
        if !self.allowed_models.is_empty() && !self.allowed_models.contains(&m.id.0) {
            return Err(Breach::ModelNotAllowed {
                model: m.id.0.clone(),
            });
        }
        if !self.allowed_regions.is_empty() && !self.allowed_regions.contains(&m.region) {
            return Err(Breach::Region {
                model: m.id.0.clone(),
                region: m.region.clone(),
                allowed: self.allowed_regions.join(", "),
            });
        }
        if self.sensitive && !m.local {
            return Err(Breach::NotLocal {
                model: m.id.0.clone(),
            });
        }
        Ok(())
    }

    pub fn admits(&self, m: &ModelConfig) -> bool {
        self.check(m).is_ok()
    }
}

/// The route, made compliant: its model if compliant, else its first compliant fallback; for the
/// default route (no policy decided), else the first compliant model of `kind` in config order.
/// Non-compliant fallbacks are dropped. `Err` when nothing complies.
pub fn guard(
    mut route: Route,
    boundary: &Boundary<'_>,
    config: &Config,
    kind: ModelKind,
) -> Result<Route, Breach> {
    route.fallbacks.retain(|m| boundary.admits(m));
    let Err(breach) = boundary.check(&route.model) else {
        return Ok(route);
    };
    if !route.fallbacks.is_empty() {
        route.model = route.fallbacks.remove(0);
        return Ok(route);
    }
    if &*route.policy == DEFAULT_POLICY {
        return match first_compliant(config, boundary, kind) {
            Some(m) => {
                route.model = m;
                Ok(route)
            }
            None => Err(Breach::NoCandidate),
        };
    }
    Err(breach)
}

fn first_compliant(
    config: &Config,
    boundary: &Boundary<'_>,
    kind: ModelKind,
) -> Option<Arc<ModelConfig>> {
    config
        .models
        .iter()
        .find(|m| m.kind == kind && boundary.admits(m))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::EXPLICIT_POLICY;

    const CONFIG: &str = "sovereign_id = \"t\"\nregion = \"sa\"\ndefault_model = \"cloud\"\n\
        [[models]]\nid = \"cloud\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"eu\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n\
        [[models]]\nid = \"onprem\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"sa\"\nlocal = true\n\
        base_url = \"http://127.0.0.1:9/v1\"\n";

    fn route(config: &Config, model: &str, policy: &str) -> Route {
        Route {
            model: config.model(model).unwrap().clone(),
            fallbacks: Vec::new(),
            policy: policy.into(),
            rule: "r".into(),
        }
    }

    #[test]
    fn explicit_models_outside_the_boundary_are_refused() {
        let c = Config::parse(CONFIG).unwrap();
        let sa = vec!["sa".to_string()];
        let b = Boundary {
            allowed_regions: &sa,
            allowed_models: &[],
            sensitive: false,
        };
        let e = guard(route(&c, "cloud", EXPLICIT_POLICY), &b, &c, ModelKind::Chat).unwrap_err();
        assert!(matches!(e, Breach::Region { .. }), "{e}");
        assert!(
            guard(
                route(&c, "onprem", EXPLICIT_POLICY),
                &b,
                &c,
                ModelKind::Chat
            )
            .is_ok()
        );
        let sensitive = Boundary {
            allowed_regions: &[],
            allowed_models: &[],
            sensitive: true,
        };
        let e = guard(
            route(&c, "cloud", EXPLICIT_POLICY),
            &sensitive,
            &c,
            ModelKind::Chat,
        )
        .unwrap_err();
        assert_eq!(
            e,
            Breach::NotLocal {
                model: "cloud".into()
            }
        );
    }

    #[test]
    fn the_default_route_and_fallbacks_move_to_a_compliant_model() {
        let c = Config::parse(CONFIG).unwrap();
        let sensitive = Boundary {
            allowed_regions: &[],
            allowed_models: &[],
            sensitive: true,
        };
        let r = guard(
            route(&c, "cloud", DEFAULT_POLICY),
            &sensitive,
            &c,
            ModelKind::Chat,
        )
        .unwrap();
        assert_eq!(r.model.id.0, "onprem");
        let mut with_fallback = route(&c, "cloud", "rules");
        with_fallback.fallbacks = vec![c.model("onprem").unwrap().clone()];
        let r = guard(with_fallback, &sensitive, &c, ModelKind::Chat).unwrap();
        assert_eq!(r.model.id.0, "onprem");
        let nowhere = vec!["us".to_string()];
        let b = Boundary {
            allowed_regions: &nowhere,
            allowed_models: &[],
            sensitive: false,
        };
        assert_eq!(
            guard(route(&c, "cloud", DEFAULT_POLICY), &b, &c, ModelKind::Chat).unwrap_err(),
            Breach::NoCandidate
        );
    }
}

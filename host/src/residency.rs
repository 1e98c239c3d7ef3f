//! The residency guard: where a request may be processed. After routing and before any upstream
//! call, the serving model must be in a region the team allows, and a **sensitive** request must
//! stay on a `local` model; the same holds for every fallback. No policy can override it: the
//! router only ever sees compliant candidates, and its answer is checked again here. When no
//! compliant model exists the request is refused with 451 `sovereignty_error`, naming the
//! constraint.
//!
//! Below routing: the router filters its candidates through a [`Boundary`], and [`guard`] takes
//! any route that implements [`Guarded`] (`crate::routing::Route` does); this module knows no
//! router.

use std::sync::Arc;

use crate::config::Config;
use crate::domain::{ModelConfig, ModelKind};

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

/// What the guard needs of a route: its model, its fallbacks, and whether it is the default route
/// (no policy decided, so any compliant model may serve instead).
pub trait Guarded {
    fn model(&self) -> &Arc<ModelConfig>;
    fn set_model(&mut self, model: Arc<ModelConfig>);
    fn fallbacks_mut(&mut self) -> &mut Vec<Arc<ModelConfig>>;
    fn is_default(&self) -> bool;
}

/// The route, made compliant: its model if compliant, else its first compliant fallback; for the
/// default route (no policy decided), else the first compliant model of `kind` in config order.
/// Non-compliant fallbacks are dropped. `Err` when nothing complies.
pub fn guard<R: Guarded>(
    mut route: R,
    boundary: &Boundary<'_>,
    config: &Config,
    kind: ModelKind,
) -> Result<R, Breach> {
    route.fallbacks_mut().retain(|m| boundary.admits(m));
    let Err(breach) = boundary.check(route.model()) else {
        return Ok(route);
    };
    if !route.fallbacks_mut().is_empty() {
        let first = route.fallbacks_mut().remove(0);
        route.set_model(first);
        return Ok(route);
    }
    if route.is_default() {
        return match first_compliant(config, boundary, kind) {
            Some(m) => {
                route.set_model(m);
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

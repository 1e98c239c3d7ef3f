//! The residency guard (`crate::residency::guard`) on real routes (moved from residency.rs, which
//! sits below routing).

use crate::config::Config;
use crate::domain::ModelKind;
use crate::residency::{Boundary, Breach, guard};

use super::{DEFAULT_POLICY, EXPLICIT_POLICY, Route};

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

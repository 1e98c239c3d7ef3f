//! Fallback and passive health in the configuration: a model's `fallbacks` (checked against the
//! other models) and the `[health]` section (the per-model circuit breaker and how many models
//! one request may try). Used by `crate::upstream::health` and the chat request path.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::Deserialize;

use crate::domain::ModelKind;

/// Most fallbacks one model may list.
pub const MAX_FALLBACKS: usize = 8;
/// Most models one request may try (`health.max_attempts`).
pub const MAX_ATTEMPTS: u32 = 10;

/// `[health]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawHealth {
    failure_threshold: u32,
    open_ms: u64,
    max_attempts: u32,
}

impl Default for RawHealth {
    fn default() -> Self {
        RawHealth {
            failure_threshold: 5,
            open_ms: 30_000,
            max_attempts: 3,
        }
    }
}

/// `[health]`, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthConfig {
    /// Consecutive failures that open a model's breaker.
    pub failure_threshold: u32,
    /// How long an open breaker keeps its model out before one probe request is let through.
    pub open: Duration,
    /// Models one request may try, the first included.
    pub max_attempts: usize,
}

impl Default for HealthConfig {
    fn default() -> Self {
        validate(&RawHealth::default(), &mut |_, _| {})
    }
}

pub(super) fn validate(h: &RawHealth, err: &mut impl FnMut(String, &str)) -> HealthConfig {
    if h.failure_threshold == 0 || h.failure_threshold > 1_000 {
        err(
            "health.failure_threshold".into(),
            "must be between 1 and 1000",
        );
    }
    if h.open_ms == 0 || h.open_ms > 3_600_000 {
        err(
            "health.open_ms".into(),
            "must be between 1 and 3600000 (one hour)",
        );
    }
    if h.max_attempts == 0 || h.max_attempts > MAX_ATTEMPTS {
        err(
            "health.max_attempts".into(),
            &format!("must be between 1 and {MAX_ATTEMPTS}"),
        );
    }
    HealthConfig {
        failure_threshold: h.failure_threshold.max(1),
        open: Duration::from_millis(h.open_ms.max(1)),
        max_attempts: h.max_attempts.clamp(1, MAX_ATTEMPTS) as usize,
    }
}

/// Checks `models[index].fallbacks`: each names another configured model of the same kind, once.
/// `kinds` holds every configured model id and its kind.
pub(super) fn check_fallbacks(
    index: usize,
    id: &str,
    kind: ModelKind,
    fallbacks: &[String],
    kinds: &HashMap<&str, ModelKind>,
    err: &mut impl FnMut(String, &str),
) {
    let p = format!("models[{index}].fallbacks");
    if fallbacks.len() > MAX_FALLBACKS {
        err(p.clone(), &format!("at most {MAX_FALLBACKS} models"));
    }
    let mut seen = HashSet::new();
    for (j, f) in fallbacks.iter().enumerate() {
        let path = format!("{p}[{j}]");
        if f == id {
            err(path, "a model cannot be its own fallback");
        } else if !seen.insert(f.as_str()) {
            err(path, &format!("`{f}` is listed twice"));
        } else {
            match kinds.get(f.as_str()) {
                None => err(path, &format!("`{f}` is not one of the configured models")),
                Some(k) if *k != kind => err(
                    path,
                    &format!(
                        "`{f}` is of kind `{}`, not `{}`: a fallback must be of the same kind",
                        k.as_str(),
                        kind.as_str()
                    ),
                ),
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::domain::ModelId;
    use std::time::Duration;

    const MODELS: &str = "sovereign_id = \"t\"\nregion = \"r\"\ndefault_model = \"a\"\n\
        [[models]]\nid = \"a\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\nFALLBACKS\n\
        [[models]]\nid = \"b\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n\
        [[models]]\nid = \"e\"\nfamily = \"f\"\nkind = \"embedding\"\nregion = \"r\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n";

    fn with(fallbacks: &str, extra: &str) -> Result<Config, Vec<String>> {
        Config::parse(&(MODELS.replace("FALLBACKS", fallbacks) + extra)).map_err(|e| e.0)
    }

    #[test]
    fn fallbacks_and_health_parse_with_defaults() {
        let c = with("fallbacks = [\"b\"]", "").unwrap();
        assert_eq!(c.models[0].fallbacks, vec![ModelId("b".into())]);
        assert!(c.models[1].fallbacks.is_empty());
        assert_eq!(c.health.failure_threshold, 5);
        assert_eq!(c.health.open, Duration::from_secs(30));
        assert_eq!(c.health.max_attempts, 3);
        let c = with(
            "",
            "[health]\nfailure_threshold = 2\nopen_ms = 300\nmax_attempts = 5\n",
        )
        .unwrap();
        assert_eq!(c.health.failure_threshold, 2);
        assert_eq!(c.health.open, Duration::from_millis(300));
        assert_eq!(c.health.max_attempts, 5);
    }

    #[test]
    fn bad_fallbacks_are_reported_with_their_paths() {
        let e = with("fallbacks = [\"a\", \"nope\", \"e\", \"b\", \"b\"]", "").unwrap_err();
        assert_eq!(
            e,
            vec![
                "models[0].fallbacks[0]: a model cannot be its own fallback",
                "models[0].fallbacks[1]: `nope` is not one of the configured models",
                "models[0].fallbacks[2]: `e` is of kind `embedding`, not `chat`: a fallback must be of the same kind",
                "models[0].fallbacks[4]: `b` is listed twice",
            ]
        );
        let e = with(
            "",
            "[health]\nfailure_threshold = 0\nopen_ms = 0\nmax_attempts = 11\nbogus = 1\n",
        )
        .unwrap_err();
        assert!(e[0].contains("bogus"), "{e:?}");
        let e = with(
            "",
            "[health]\nfailure_threshold = 0\nopen_ms = 0\nmax_attempts = 11\n",
        )
        .unwrap_err();
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].starts_with("health.failure_threshold: "), "{e:?}");
        assert!(e[1].starts_with("health.open_ms: "), "{e:?}");
        assert!(e[2].starts_with("health.max_attempts: "), "{e:?}");
    }
}

//! `[guardrail]`: the PII guardrail (`docs/GUARDRAIL.md`); present means enabled. A component to
//! run instead of the built-in one, its settings document, its per-call deadline and memory.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::{default_policy_deadline_ms, default_policy_memory_mb, read_file};

/// `[guardrail]`: the PII guardrail (docs/GUARDRAIL.md). Present: enabled.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuardrail {
    /// A guardrail component (.wasm) to run instead of the built-in PII guardrail.
    #[serde(default)]
    component: Option<String>,
    /// The guardrail's settings document (JSON text, given to it as `settings`).
    #[serde(default)]
    settings: Option<String>,
    #[serde(default = "default_policy_deadline_ms")]
    deadline_ms: u64,
    #[serde(default = "default_policy_memory_mb")]
    memory_mb: u64,
}

/// `[guardrail]`, validated.
#[derive(Debug, Clone)]
pub struct GuardrailConfig {
    /// `None`: the built-in PII guardrail.
    pub component: Option<Arc<[u8]>>,
    pub settings: Option<String>,
    pub deadline: Duration,
    pub memory_bytes: usize,
}

pub(super) fn validate(
    g: RawGuardrail,
    base: &Path,
    err: &mut impl FnMut(String, &str),
) -> GuardrailConfig {
    let component = g.component.as_deref().and_then(|p| {
        read_file(base, p)
            .map(Arc::from)
            .map_err(|e| err("guardrail.component".into(), &e))
            .ok()
    });
    if let Some(s) = &g.settings
        && serde_json::from_str::<serde_json::Value>(s).is_err()
    {
        err(
            "guardrail.settings".into(),
            "must be a JSON document (docs/GUARDRAIL.md)",
        );
    }
    if g.deadline_ms == 0 || g.deadline_ms > 1_000 {
        err("guardrail.deadline_ms".into(), "must be between 1 and 1000");
    }
    if g.memory_mb == 0 || g.memory_mb > 128 {
        err("guardrail.memory_mb".into(), "must be between 1 and 128");
    }
    GuardrailConfig {
        component,
        settings: g.settings,
        deadline: Duration::from_millis(g.deadline_ms),
        memory_bytes: usize::try_from(g.memory_mb << 20).unwrap_or(usize::MAX),
    }
}

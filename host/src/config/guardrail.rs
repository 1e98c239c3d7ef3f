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
    /// Added to `deadline_ms` per MiB of text checked.
    #[serde(default = "default_deadline_ms_per_mib")]
    deadline_ms_per_mib: u64,
    /// Added to `memory_mb` per MiB of text checked (the host's 128 MiB cap still bounds it).
    #[serde(default = "default_memory_mb_per_mib")]
    memory_mb_per_mib: u64,
    /// The most text one check covers; a request with more is refused with a 413.
    #[serde(default = "default_max_scanned_mib")]
    max_scanned_mib: u64,
    /// `fresh` (a new instance per check) or `warm` (instances reused, settings parsed once);
    /// unset: `warm` for the built-in guardrail (first-party code that keeps nothing of a
    /// request), `fresh` for a `component`.
    #[serde(default)]
    pool: Option<super::PoolMode>,
    /// With `pool = "warm"`: checks one instance serves before it is retired.
    #[serde(default = "default_warm_max_calls")]
    warm_max_calls: u32,
}

fn default_warm_max_calls() -> u32 {
    super::DEFAULT_WARM_MAX_CALLS
}

/// The defaults of the keys that scale a check with its text (`policy::guardrail::InputScaling`).
/// The built-in guardrail takes about 6–8 ms and more than ~2.3 MiB of memory per MiB of text
/// (docs/GUARDRAIL.md, "Large inputs"): the deadline leaves a wide margin for a loaded machine;
/// 8 MiB is twice the default body limit, so every accepted prompt is scanned.
pub mod defaults {
    pub const DEADLINE_MS_PER_MIB: u64 = 100;
    pub const MEMORY_MIB_PER_MIB: usize = 4;
    pub const MAX_SCANNED_MIB: usize = 8;
}

fn default_deadline_ms_per_mib() -> u64 {
    defaults::DEADLINE_MS_PER_MIB
}
fn default_memory_mb_per_mib() -> u64 {
    defaults::MEMORY_MIB_PER_MIB as u64
}
fn default_max_scanned_mib() -> u64 {
    defaults::MAX_SCANNED_MIB as u64
}

/// `[guardrail]`, validated.
#[derive(Debug, Clone)]
pub struct GuardrailConfig {
    /// `None`: the built-in PII guardrail.
    pub component: Option<Arc<[u8]>>,
    pub settings: Option<String>,
    pub deadline: Duration,
    pub memory_bytes: usize,
    pub deadline_per_mib: Duration,
    pub memory_per_mib: usize,
    pub max_scanned_bytes: usize,
    pub pool: super::PoolMode,
    pub warm_max_calls: u32,
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
    if g.deadline_ms_per_mib > 10_000 {
        err(
            "guardrail.deadline_ms_per_mib".into(),
            "must be at most 10000",
        );
    }
    if g.memory_mb_per_mib > 64 {
        err("guardrail.memory_mb_per_mib".into(), "must be at most 64");
    }
    if g.max_scanned_mib == 0 || g.max_scanned_mib > 64 {
        err(
            "guardrail.max_scanned_mib".into(),
            "must be between 1 and 64",
        );
    }
    if g.warm_max_calls == 0 || g.warm_max_calls > 1_000_000 {
        err(
            "guardrail.warm_max_calls".into(),
            "must be between 1 and 1000000",
        );
    }
    let mib = |n: u64| usize::try_from(n.min(1 << 16) << 20).unwrap_or(usize::MAX);
    GuardrailConfig {
        component,
        settings: g.settings,
        deadline: Duration::from_millis(g.deadline_ms),
        memory_bytes: mib(g.memory_mb),
        deadline_per_mib: Duration::from_millis(g.deadline_ms_per_mib),
        memory_per_mib: mib(g.memory_mb_per_mib),
        max_scanned_bytes: mib(g.max_scanned_mib),
        pool: g.pool.unwrap_or(if g.component.is_none() {
            super::PoolMode::Warm
        } else {
            super::PoolMode::Fresh
        }),
        warm_max_calls: g.warm_max_calls,
    }
}

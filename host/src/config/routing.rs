//! `[routing]`: the router policy (a routing document for the built-in rules router, or a router
//! component), its per-call deadline and memory, the compiled-policy cache and the instance pool
//! ([`PoolMode`], re-exported by `crate::policy`, whose uploads choose it too).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::{default_policy_deadline_ms, default_policy_memory_mb, read_file};

/// Calls one warm instance serves before it is retired, unless configured otherwise.
pub const DEFAULT_WARM_MAX_CALLS: u32 = 1000;

/// How a policy's calls get their instance.
///
/// `Fresh` (the default): a new store and instance per call, dropped afterwards: no state
/// survives a call. `Warm`: instances are kept and reused, each for at most
/// `crate::policy::CallLimits::warm_max_calls` calls and never after a trap, timeout or memory blow-up, for
/// guests whose instantiation costs more than their call (Python, JavaScript). Reuse means a
/// policy's module-level state persists between the requests one instance serves; the same
/// deadline and memory cap apply to every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolMode {
    #[default]
    Fresh,
    Warm,
}

impl PoolMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PoolMode::Fresh => "fresh",
            PoolMode::Warm => "warm",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRouting {
    /// The routing document (YAML) given to the router as its `policy` setting; a path relative
    /// to the config file.
    #[serde(default)]
    document: Option<String>,
    /// A router component (.wasm) to run instead of the built-in rules router.
    #[serde(default)]
    component: Option<String>,
    #[serde(default = "default_policy_deadline_ms")]
    deadline_ms: u64,
    #[serde(default = "default_policy_memory_mb")]
    memory_mb: u64,
    /// Where compiled policies are cached (a directory only the gateway writes to); relative to
    /// the config file. Unset: policies are compiled at every start.
    #[serde(default)]
    cache_dir: Option<String>,
    /// `fresh` (a new instance per call) or `warm` (reused instances); unset: `warm` for the
    /// built-in rules router (first-party code that keeps nothing of a request), `fresh` for a
    /// `component`. Uploads choose per version.
    #[serde(default)]
    pool: Option<PoolMode>,
    /// With `pool = "warm"`: calls one instance serves before it is retired.
    #[serde(default = "default_warm_max_calls")]
    warm_max_calls: u32,
}

fn default_warm_max_calls() -> u32 {
    DEFAULT_WARM_MAX_CALLS
}

#[derive(Debug, Clone)]
pub struct RoutingConfig {
    /// The routing document's text (the router's `policy` setting).
    pub document: Option<String>,
    /// Where the document was read from; the gateway reloads it when the file changes.
    pub document_path: Option<PathBuf>,
    /// A router component to use instead of the built-in rules router: its path and bytes.
    pub component: Option<(PathBuf, Arc<[u8]>)>,
    pub deadline: Duration,
    pub memory_bytes: usize,
    pub cache_dir: Option<PathBuf>,
    /// How the configured router's calls get their instance (uploads may override).
    pub pool: PoolMode,
    pub warm_max_calls: u32,
}

pub(super) fn validate(
    r: RawRouting,
    base: &Path,
    err: &mut impl FnMut(String, &str),
) -> RoutingConfig {
    let document = r.document.as_deref().and_then(|p| {
        read_file(base, p)
            .and_then(|bytes| String::from_utf8(bytes).map_err(|_| format!("{p}: not UTF-8 text")))
            .map_err(|e| err("routing.document".into(), &e))
            .ok()
    });
    let component = r.component.as_deref().and_then(|p| {
        read_file(base, p)
            .map(|bytes| (base.join(p), Arc::from(bytes)))
            .map_err(|e| err("routing.component".into(), &e))
            .ok()
    });
    if r.document.is_none() && r.component.is_none() {
        err(
            "routing".into(),
            "name a `document` for the built-in rules router, or a router `component`",
        );
    }
    if r.deadline_ms == 0 || r.deadline_ms > 1_000 {
        err("routing.deadline_ms".into(), "must be between 1 and 1000");
    }
    if r.memory_mb == 0 || r.memory_mb > 128 {
        err("routing.memory_mb".into(), "must be between 1 and 128");
    }
    if r.warm_max_calls == 0 || r.warm_max_calls > 1_000_000 {
        err(
            "routing.warm_max_calls".into(),
            "must be between 1 and 1000000",
        );
    }
    RoutingConfig {
        document,
        document_path: r.document.as_deref().map(|p| base.join(p)),
        component,
        deadline: Duration::from_millis(r.deadline_ms),
        memory_bytes: usize::try_from(r.memory_mb << 20).unwrap_or(usize::MAX),
        cache_dir: r.cache_dir.as_deref().map(|d| base.join(d)),
        pool: r.pool.unwrap_or(if r.component.is_none() {
            PoolMode::Warm
        } else {
            PoolMode::Fresh
        }),
        warm_max_calls: r.warm_max_calls,
    }
}

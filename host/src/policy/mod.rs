//! The Wasm policy host: one wasmtime `Engine` (pooling allocator, epoch interruption) for every
//! policy component, compiled artifacts cached on disk, and typed policies that run each call in a
//! fresh `Store` with a memory cap and an epoch deadline, so a trap, a runaway loop or a bad answer
//! becomes a [`PolicyError`] and never takes the gateway down.
//!
//! The contract is `wit/policy.wit`, bound once in [`bindings`]. Routers: [`RouterPolicy`];
//! guardrails: [`GuardrailPolicy`]; webhook shapers: [`shaper::Shapers`]; MCP tool calls:
//! [`tool::ToolPolicies`]; retrieved chunks: [`retrieval::RetrievalPolicies`].

mod bindings;
mod cache;
mod call;
pub mod golden;
pub mod guardrail;
mod pool;
pub mod retrieval;
mod router;
pub mod shaper;
mod slot;
pub mod tool;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub use crate::config::{DEFAULT_WARM_MAX_CALLS, PoolMode};
pub use guardrail::{GuardrailPolicy, Stage as GuardrailStage, Verdict as GuardrailVerdict};
pub use router::{Candidate, RouteFacts, RouterDecision, RouterPolicy, WORLD as ROUTER_WORLD};
pub use slot::Installed;

/// Settings of the policy host (one per process).
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Most policy calls in flight at once (pool slots). Calls beyond it fail to instantiate.
    pub max_instances: u32,
    /// Hard cap on any policy's linear memory; each policy may set a lower one.
    pub max_memory_bytes: usize,
    /// How often the epoch ticks. A running guest yields to the async runtime once per tick and
    /// its deadline counts the ticks it was running for.
    pub epoch_tick: Duration,
    /// Where compiled artifacts are cached; `None` compiles every load.
    pub cache_dir: Option<PathBuf>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            max_instances: 1000,
            max_memory_bytes: 128 << 20,
            epoch_tick: Duration::from_millis(1),
            cache_dir: None,
        }
    }
}

/// Limits for each call into one policy, and how its instances are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Budget of one call: the time the guest spends running, counted in epoch ticks (rounded
    /// up). Time spent waiting for a worker after a yield does not count, so a busy runtime does
    /// not make good calls fail; the guest is stopped at the first tick past the budget.
    pub deadline: Duration,
    /// Linear memory cap of one call (bounded by [`HostConfig::max_memory_bytes`]); for a warm
    /// instance, of every call it serves (memory does not shrink between calls).
    pub memory_bytes: usize,
    /// A fresh instance per call (the default), or a warm pool of reused instances.
    pub pool: PoolMode,
    /// With [`PoolMode::Warm`]: calls one instance serves before it is retired.
    pub warm_max_calls: u32,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            deadline: Duration::from_millis(5),
            memory_bytes: 32 << 20,
            pool: PoolMode::Fresh,
            warm_max_calls: DEFAULT_WARM_MAX_CALLS,
        }
    }
}

/// Everything that can go wrong loading or calling a policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy engine: {0}")]
    Engine(String),
    #[error("not a valid component: {0}")]
    Compile(String),
    #[error("the component does not fit the `{world}` world: {reason}")]
    WrongWorld { world: &'static str, reason: String },
    #[error("policy `{policy}` could not be instantiated: {reason}")]
    Instantiate { policy: String, reason: String },
    #[error("policy `{policy}` ran past its {deadline:?} deadline and was stopped")]
    Timeout { policy: String, deadline: Duration },
    #[error("policy `{policy}` exceeded its memory cap of {cap} bytes and was stopped")]
    MemoryLimit { policy: String, cap: usize },
    #[error("policy `{policy}` checks at most {max} bytes of text per call; this call had {bytes}")]
    TooLarge {
        policy: String,
        bytes: usize,
        max: usize,
    },
    #[error("policy `{policy}` trapped: {message}")]
    Trap { policy: String, message: String },
    #[error("policy `{policy}` gave an invalid answer: {reason}")]
    BadAnswer { policy: String, reason: String },
    #[error("policy `{policy}` rejected the request ({status} {code}): {message}")]
    Rejected {
        policy: String,
        status: u16,
        code: String,
        message: String,
    },
    /// The cause is part of the message (not a `source`), so error chains print it once.
    #[error("policy `{policy}` failed its smoke call: {cause}")]
    SmokeCall {
        policy: String,
        cause: Box<PolicyError>,
    },
    #[error("policy loading was cancelled: {0}")]
    Cancelled(String),
}

/// The shared engine every policy runs on. Cheap to clone.
#[derive(Clone)]
pub struct PolicyHost {
    inner: Arc<HostInner>,
}

struct HostInner {
    engine: Engine,
    linker: wasmtime::component::Linker<bindings::CallState>,
    engine_key: String,
    config: HostConfig,
    /// Stops the epoch ticker when the host is dropped.
    _ticker: EpochTicker,
}

impl std::fmt::Debug for PolicyHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyHost")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl PolicyHost {
    /// Builds the engine and starts its epoch ticker thread.
    pub fn new(config: HostConfig) -> Result<PolicyHost, PolicyError> {
        let n = config.max_instances.max(1);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(n)
            // A Rust component holds a few core instances (the module, WASI shims).
            .total_core_instances(n.saturating_mul(4))
            .total_memories(n.saturating_mul(2))
            .total_tables(n.saturating_mul(4))
            .total_stacks(n)
            .max_memory_size(config.max_memory_bytes)
            // Keep the pages a call touched mapped, and reset only the dirty ones (Linux >= 6.7):
            // WASM-HOST.md §1.3 measured 21.6 µs -> 6.2 µs per call with both.
            .linear_memory_keep_resident(2 << 20)
            .table_keep_resident(512 << 10)
            .pagemap_scan(Enabled::Auto);
        let mut cfg = Config::new();
        cfg.wasm_component_model(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .memory_init_cow(true)
            .epoch_interruption(true)
            .max_wasm_stack(512 << 10);
        let engine = Engine::new(&cfg).map_err(|e| PolicyError::Engine(format!("{e:#}")))?;
        let linker = bindings::linker(&engine)?;
        let engine_key = cache::engine_key(&engine);
        let ticker = EpochTicker::start(&engine, config.epoch_tick)?;
        Ok(PolicyHost {
            inner: Arc::new(HostInner {
                engine,
                linker,
                engine_key,
                config,
                _ticker: ticker,
            }),
        })
    }

    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// A deadline in epoch ticks (at least one, rounded up).
    fn ticks(&self, deadline: Duration) -> u64 {
        let tick = self.inner.config.epoch_tick.as_nanos().max(1);
        let n = deadline.as_nanos().div_ceil(tick);
        u64::try_from(n).unwrap_or(u64::MAX).max(1)
    }
}

/// A thread that advances the engine's epoch every tick; it ends when dropped.
struct EpochTicker {
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl EpochTicker {
    fn start(engine: &Engine, tick: Duration) -> Result<EpochTicker, PolicyError> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let weak = engine.weak();
        let stop2 = stop.clone();
        std::thread::Builder::new()
            .name("policy-epoch".into())
            .spawn(move || {
                while !stop2.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| PolicyError::Engine(format!("starting the epoch ticker: {e}")))?;
        Ok(EpochTicker { stop })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

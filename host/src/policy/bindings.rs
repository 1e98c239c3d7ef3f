//! The one place the WIT contract (`wit/policy.wit`) is bound in the host, and the conversions
//! between the host's types and the WIT types. Also the per-call store state and the `host`
//! interface a policy imports (`log`, `config-get`).

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::{Candidate, PolicyError};

// Exports are called with `call_async`: wasmtime-wasi's synchronous p2 implementation runs its
// streams with `block_on`, which panics on a tokio thread (measured: a guest writing its panic
// message to stderr took the test down). The host imports stay synchronous (they never block).
wasmtime::component::bindgen!({
    path: "../wit",
    world: "router-policy",
    exports: { default: async },
});

/// The `guardrail-policy` world, sharing the router world's `types` and `host` bindings (one
/// `host` implementation for every policy, one linker).
pub(crate) mod guardrail_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "guardrail-policy",
        exports: { default: async },
        with: {
            "sovereign:policy/types": super::sovereign::policy::types,
            "sovereign:policy/host": super::sovereign::policy::host,
        },
    });
}

/// The `webhook-policy` world, sharing the router world's `host` binding (its interface uses no
/// shared types).
pub(crate) mod webhook_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "webhook-policy",
        exports: { default: async },
        with: {
            "sovereign:policy/host": super::sovereign::policy::host,
        },
    });
}

/// The `tool-policy` world (MCP tool calls), sharing the router world's `types` and `host`.
pub mod tool_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "tool-policy",
        exports: { default: async },
        with: {
            "sovereign:policy/types": super::sovereign::policy::types,
            "sovereign:policy/host": super::sovereign::policy::host,
        },
    });
}

/// The `retrieval-policy` world (filter and re-rank retrieved chunks), sharing the router
/// world's `types` and `host`.
pub mod retrieval_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "retrieval-policy",
        exports: { default: async },
        with: {
            "sovereign:policy/types": super::sovereign::policy::types,
            "sovereign:policy/host": super::sovereign::policy::host,
        },
    });
}

pub(crate) use guardrail_world::exports::sovereign::policy::guardrail::{
    Message as WitMessage, Stage as WitStage, Verdict as WitVerdict,
};
pub(crate) use guardrail_world::{GuardrailPolicy as GuardrailInstance, GuardrailPolicyPre};
pub(crate) use webhook_world::WebhookPolicyPre;
pub(crate) use webhook_world::exports::sovereign::policy::webhook_shaper::{
    Delivery as WitDelivery, Event as WitEvent,
};

use self::sovereign::policy::host::Level;
pub(crate) use self::sovereign::policy::types::{Caller as WitCaller, ModelInfo, RequestFacts};
pub(crate) use exports::sovereign::policy::router::RouteDecision;
pub(crate) use retrieval_world::RetrievalPolicyPre;
pub(crate) use retrieval_world::exports::sovereign::policy::retrieval::Selection as WitSelection;
pub(crate) use tool_world::ToolPolicyPre;
pub(crate) use tool_world::exports::sovereign::policy::tool::{
    CallVerdict as WitCallVerdict, ResultVerdict as WitResultVerdict, ToolCall as WitToolCall,
};

/// Longest log message kept from a policy, in bytes; the rest is cut.
const MAX_LOG_BYTES: usize = 1024;
/// Most log lines a policy may write per call; the rest are dropped.
const MAX_LOGS_PER_CALL: u32 = 16;

/// What a store holds for one call.
pub(crate) struct CallState {
    pub policy_id: Arc<str>,
    pub settings: Arc<HashMap<String, String>>,
    pub limiter: Limiter,
    logs: u32,
    /// Epoch ticks the current call has run for, and its budget in ticks.
    ticks: u64,
    budget: u64,
    /// Empty: no preopens, no environment, no arguments, stdio discarded, sockets denied. Rust
    /// guests built for wasm32-wasip2 import WASI through std even when they use none of it.
    wasi: WasiCtx,
    table: ResourceTable,
}

impl CallState {
    pub fn new(
        policy_id: Arc<str>,
        settings: Arc<HashMap<String, String>>,
        memory_cap: usize,
    ) -> Self {
        CallState {
            policy_id,
            settings,
            limiter: Limiter::new(memory_cap),
            logs: 0,
            ticks: 0,
            budget: 1,
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        }
    }
}

impl CallState {
    /// Starts a call (the first in a fresh store, or the next in a warm one): a new time
    /// budget of `budget` epoch ticks, a new log allowance, the memory flag cleared.
    pub fn begin_call(&mut self, budget: u64) {
        self.ticks = 0;
        self.budget = budget.max(1);
        self.logs = 0;
        self.limiter.memory_cap_hit = false;
    }

    /// Called on each epoch tick while the guest runs: counts the tick; true once the call's
    /// budget is spent.
    pub fn tick(&mut self) -> bool {
        self.ticks += 1;
        self.ticks >= self.budget
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// `StoreLimits` (memory cap, instance/table/memory counts, trap on grow failure) that also
/// remembers whether the memory cap was what stopped the guest.
pub(crate) struct Limiter {
    inner: StoreLimits,
    pub memory_cap_hit: bool,
}

impl Limiter {
    fn new(memory_cap: usize) -> Self {
        Limiter {
            inner: wasmtime::StoreLimitsBuilder::new()
                .memory_size(memory_cap)
                .instances(64)
                .tables(64)
                .memories(16)
                .table_elements(100_000)
                .trap_on_grow_failure(true)
                .build(),
            memory_cap_hit: false,
        }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let r = self.inner.memory_growing(current, desired, maximum);
        if !matches!(r, Ok(true)) {
            self.memory_cap_hit = true;
        }
        r
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory_cap_hit = true;
        self.inner.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

impl sovereign::policy::types::Host for CallState {}

impl sovereign::policy::host::Host for CallState {
    fn log(&mut self, level: Level, message: String) {
        self.logs += 1;
        if self.logs > MAX_LOGS_PER_CALL {
            return;
        }
        let mut end = message.len().min(MAX_LOG_BYTES);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let message = &message[..end];
        let policy = &*self.policy_id;
        match level {
            Level::Debug => tracing::debug!(policy, "{message}"),
            Level::Info => tracing::info!(policy, "{message}"),
            Level::Warn => tracing::warn!(policy, "{message}"),
            Level::Error => tracing::error!(policy, "{message}"),
        }
    }

    fn config_get(&mut self, key: String) -> Option<String> {
        self.settings.get(&key).cloned()
    }
}

/// The linker every policy is instantiated through: our `host` interface plus a WASI p2 that
/// grants nothing (see [`CallState`]).
pub(crate) fn linker(engine: &wasmtime::Engine) -> Result<Linker<CallState>, PolicyError> {
    let mut linker = Linker::<CallState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)
        .map_err(|e| PolicyError::Engine(format!("linking WASI: {e}")))?;
    RouterPolicy::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
        .map_err(|e| PolicyError::Engine(format!("linking the host interface: {e}")))?;
    Ok(linker)
}

/// Facts with every field empty (tests, smoke calls and the guardrail's calls fill what they know).
impl Default for RequestFacts {
    fn default() -> Self {
        RequestFacts {
            request_id: String::new(),
            team_id: String::new(),
            key_id: String::new(),
            actor_id: String::new(),
            requested_model: String::new(),
            language: String::new(),
            prompt_tokens: 0,
            profile: None,
            classification: None,
            allowed_regions: Vec::new(),
            stream: false,
            labels: Vec::new(),
        }
    }
}

impl From<&Candidate> for ModelInfo {
    fn from(c: &Candidate) -> Self {
        let m = &c.model;
        ModelInfo {
            id: m.id.0.clone(),
            family: m.family.clone(),
            languages: m.languages.clone(),
            region: m.region.clone(),
            local: m.local,
            input_cost_per_mtok: m.input_cost_per_mtok,
            output_cost_per_mtok: m.output_cost_per_mtok,
            context_window: m.context_window,
            healthy: c.healthy,
            latency_p50_ms: c.latency_p50_ms,
            tags: Vec::new(),
        }
    }
}

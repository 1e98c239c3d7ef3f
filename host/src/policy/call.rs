//! What every policy call shares, whatever its world: a fresh store (memory limiter, the
//! deadline counted in epoch ticks, a yield to the runtime on every tick) and turning a failed
//! call into a [`PolicyError`] (deadline, memory cap, trap, instantiation).

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::InstancePre;
use wasmtime::{Store, Trap, UpdateDeadline};

use super::bindings::CallState;
use super::{CallLimits, PolicyError, PolicyHost, cache};

/// A component compiled (or read from the cache) and linked against the host's imports, ready
/// for its world's typed pre-instance; its sha256 (hex). Blocking: call off the runtime.
pub(super) fn compile_and_link(
    host: &PolicyHost,
    wasm: &[u8],
    world: &'static str,
) -> Result<(String, InstancePre<CallState>), PolicyError> {
    let inner = &host.inner;
    let sha256 = cache::sha256_hex(wasm);
    let component = cache::compile(
        &inner.engine,
        &inner.engine_key,
        inner.config.cache_dir.as_deref(),
        wasm,
        &sha256,
    )?;
    let pre = inner
        .linker
        .instantiate_pre(&component)
        .map_err(|e| wrong_world(world, &e))?;
    Ok((sha256, pre))
}

/// A component whose imports or exports do not fit `world`.
pub(super) fn wrong_world(world: &'static str, e: &wasmtime::Error) -> PolicyError {
    PolicyError::WrongWorld {
        world,
        reason: format!("{e:#}"),
    }
}

/// A policy's limits, its memory cap bounded by the host's.
pub(super) fn capped(host: &PolicyHost, limits: CallLimits) -> CallLimits {
    CallLimits {
        memory_bytes: limits.memory_bytes.min(host.inner.config.max_memory_bytes),
        ..limits
    }
}

/// A new store for one call (or, warm, one instance's life), its budget set to `budget` ticks.
pub(super) fn new_store(
    host: &PolicyHost,
    id: Arc<str>,
    settings: Arc<HashMap<String, String>>,
    limits: CallLimits,
    budget: u64,
) -> Store<CallState> {
    let state = CallState::new(id, settings, limits.memory_bytes);
    let mut store = Store::new(&host.inner.engine, state);
    store.limiter(|s| &mut s.limiter);
    // Called once per epoch tick while the guest runs: count the tick, then yield to the
    // runtime or stop the guest. Touches host data only (WASM-HOST.md §4.2 rule 4).
    store.epoch_deadline_callback(|mut ctx| {
        Ok(if ctx.data_mut().tick() {
            UpdateDeadline::Interrupt
        } else {
            UpdateDeadline::Yield(1)
        })
    });
    store.data_mut().begin_call(budget);
    store.set_epoch_deadline(1);
    store
}

/// Why a call failed: the memory cap, the deadline, a trap, or (while instantiating) anything.
pub(super) fn classify(
    id: &str,
    limits: CallLimits,
    store: &Store<CallState>,
    e: wasmtime::Error,
    instantiating: bool,
) -> PolicyError {
    let policy = id.to_string();
    if store.data().limiter.memory_cap_hit {
        return PolicyError::MemoryLimit {
            policy,
            cap: limits.memory_bytes,
        };
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => PolicyError::Timeout {
            policy,
            deadline: limits.deadline,
        },
        Some(trap) => PolicyError::Trap {
            policy,
            message: trap.to_string(),
        },
        None if instantiating => PolicyError::Instantiate {
            policy,
            reason: format!("{e:#}"),
        },
        None => PolicyError::Trap {
            policy,
            message: e.to_string(),
        },
    }
}

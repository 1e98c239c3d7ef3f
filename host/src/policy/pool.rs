//! The warm pool: instances of one policy kept between calls, for guests whose instantiation
//! costs far more than their call (a Python or JavaScript component is a whole interpreter:
//! WASM-HOST.md §6 measured 71–854 µs to instantiate against 3–15 µs per call). Opt-in per policy
//! ([`super::PoolMode::Warm`]); the fresh store per call stays the default.
//!
//! A call takes an idle instance out of the pool (or makes one), so concurrent calls never share
//! one; the caller gives it back only when the call returned normally and the instance has served
//! fewer than its maximum calls. Anything else — a trap, a timeout, a memory blow-up, a failed
//! instantiation — drops it: a store is never entered again after a trap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use wasmtime::Store;

use super::bindings::CallState;

/// Idle instances kept per policy; more concurrent calls make more, which are dropped on return.
pub(crate) const MAX_IDLE: usize = 8;

/// A live instance and its store.
pub(crate) struct Warm<I> {
    pub store: Store<CallState>,
    pub instance: I,
    /// Calls served so far.
    pub calls: u32,
}

pub(crate) struct WarmPool<I> {
    idle: Mutex<Vec<Warm<I>>>,
    max_calls: u32,
    created: AtomicU64,
    reused: AtomicU64,
}

impl<I> WarmPool<I> {
    pub fn new(max_calls: u32) -> Self {
        WarmPool {
            idle: Mutex::new(Vec::new()),
            max_calls: max_calls.max(1),
            created: AtomicU64::new(0),
            reused: AtomicU64::new(0),
        }
    }

    /// An idle instance, most recently used first (its pages are the likeliest to be resident).
    fn take(&self) -> Option<Warm<I>> {
        let w = self.lock().pop();
        if w.is_some() {
            self.reused.fetch_add(1, Ordering::Relaxed);
        }
        w
    }

    /// An idle instance with a fresh budget of `budget` epoch ticks for its next call.
    pub fn take_for(&self, budget: u64) -> Option<Warm<I>> {
        let mut w = self.take()?;
        w.store.data_mut().begin_call(budget);
        w.store.set_epoch_deadline(1);
        Some(w)
    }

    /// Counts an instance made for the pool.
    pub fn made_one(&self) {
        self.created.fetch_add(1, Ordering::Relaxed);
    }

    /// Returns an instance after a call that returned normally; retires it when it has served
    /// its calls or the pool is full.
    pub fn give_back(&self, mut w: Warm<I>) {
        w.calls += 1;
        if w.calls >= self.max_calls {
            return;
        }
        let mut idle = self.lock();
        if idle.len() < MAX_IDLE {
            idle.push(w);
        }
    }

    /// (instances made, calls served by a reused instance, idle now).
    pub fn stats(&self) -> (u64, u64, usize) {
        (
            self.created.load(Ordering::Relaxed),
            self.reused.load(Ordering::Relaxed),
            self.lock().len(),
        )
    }

    /// The list is only pushed to and popped from, so a poisoned lock is still consistent.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Warm<I>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

//! Time as the store sees it: a [`Clock`] giving Unix milliseconds, the real one
//! ([`SystemClock`]) and one tests move by hand ([`ManualClock`]), so expiry and rotation grace
//! are tested without sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Unix time in milliseconds: every timestamp the store keeps or compares.
pub type UnixMillis = i64;

/// Where the store reads "now" (key expiry, rotation grace, `created_at`, usage time).
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ms(&self) -> UnixMillis;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> UnixMillis {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to (tests).
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: UnixMillis) -> ManualClock {
        ManualClock(AtomicI64::new(start_ms))
    }

    pub fn set(&self, ms: UnixMillis) {
        self.0.store(ms, Ordering::SeqCst);
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> UnixMillis {
        self.0.load(Ordering::SeqCst)
    }
}

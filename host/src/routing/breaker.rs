//! The router's crash-loop breaker: a router version that fails (traps, times out, exceeds its
//! memory, answers nonsense) `TRIP_AFTER` times in a row is tripped off for `COOL_DOWN` — requests
//! take the default route without calling it — and reported; after the cool-down one request
//! tries it again (half-open): a success closes the breaker, a failure trips it again at once.
//! A newly activated version starts closed. (DESIGN.md: "a policy that keeps failing is tripped
//! off and reported, not retried in a loop".)

use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const TRIP_AFTER: u32 = 5;
pub const COOL_DOWN: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
pub struct Breaker {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The version the counts are about; another version resets them.
    version: String,
    failures: u32,
    open_until: Option<Instant>,
    trips: u64,
}

/// What the admin API shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BreakerStatus {
    pub version: String,
    pub consecutive_failures: u32,
    /// Seconds until the tripped version is tried again; `None` when closed.
    pub open_for_seconds: Option<u64>,
    pub trips: u64,
}

impl Breaker {
    /// Whether `version` may be called at `now`.
    pub fn allow(&self, version: &str, now: Instant) -> bool {
        let mut s = self.lock(version);
        match s.open_until {
            Some(until) if now < until => false,
            Some(_) => {
                // Half-open: let this call through; its outcome decides.
                s.open_until = None;
                s.failures = TRIP_AFTER - 1;
                true
            }
            None => true,
        }
    }

    pub fn success(&self, version: &str) {
        let mut s = self.lock(version);
        s.failures = 0;
    }

    /// Records a failure; true when it tripped the breaker.
    pub fn failure(&self, version: &str, now: Instant) -> bool {
        let mut s = self.lock(version);
        s.failures += 1;
        if s.failures >= TRIP_AFTER && s.open_until.is_none() {
            s.open_until = Some(now + COOL_DOWN);
            s.trips += 1;
            return true;
        }
        false
    }

    pub fn status(&self, now: Instant) -> BreakerStatus {
        let s = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        BreakerStatus {
            version: s.version.clone(),
            consecutive_failures: s.failures,
            open_for_seconds: s
                .open_until
                .filter(|u| *u > now)
                .map(|u| (u - now).as_secs().max(1)),
            trips: s.trips,
        }
    }

    fn lock(&self, version: &str) -> std::sync::MutexGuard<'_, State> {
        let mut s = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if s.version != version {
            let trips = s.trips;
            *s = State {
                version: version.to_string(),
                trips,
                ..State::default()
            };
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trips_after_consecutive_failures_and_retries_after_the_cool_down() {
        let b = Breaker::default();
        let t0 = Instant::now();
        for _ in 0..TRIP_AFTER - 1 {
            assert!(b.allow("v1", t0));
            assert!(!b.failure("v1", t0));
        }
        // A success in between resets the count.
        b.success("v1");
        for i in 0..TRIP_AFTER {
            assert!(b.allow("v1", t0));
            assert_eq!(b.failure("v1", t0), i == TRIP_AFTER - 1);
        }
        assert!(!b.allow("v1", t0 + COOL_DOWN - Duration::from_millis(1)));
        assert_eq!(b.status(t0).open_for_seconds, Some(30));
        // Half-open: one try; failing trips again at once.
        assert!(b.allow("v1", t0 + COOL_DOWN));
        assert!(b.failure("v1", t0 + COOL_DOWN));
        assert!(!b.allow("v1", t0 + COOL_DOWN + Duration::from_secs(1)));
        assert_eq!(b.status(t0).trips, 2);
        // A new version starts closed.
        assert!(b.allow("v2", t0 + COOL_DOWN + Duration::from_secs(1)));
        // Half-open success closes.
        let later = t0 + COOL_DOWN * 3;
        for _ in 0..TRIP_AFTER {
            b.failure("v2", later);
        }
        assert!(b.allow("v2", later + COOL_DOWN));
        b.success("v2");
        assert!(b.allow("v2", later + COOL_DOWN));
        assert_eq!(b.status(later + COOL_DOWN).open_for_seconds, None);
    }
}

//! Request-rate limits: GCRA (the `governor` crate) per key and per client address, on a clock
//! tests can move by hand, and the `X-RateLimit-*` / `Retry-After` headers that describe them.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::config::RateLimit;

pub const X_RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
pub const X_RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
pub const X_RATELIMIT_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Longest `Retry-After` the gateway sends (the bound; a client retrying after it is told
/// again).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Monotonic time for the limiters: the real one, or one tests advance by hand.
#[derive(Debug, Clone)]
pub enum LimitClock {
    Real(Instant),
    Manual(Arc<Mutex<Duration>>),
}

impl LimitClock {
    pub fn real() -> LimitClock {
        LimitClock::Real(Instant::now())
    }

    pub fn manual() -> LimitClock {
        LimitClock::Manual(Arc::default())
    }

    /// Moves a manual clock forward (no-op on the real one).
    pub fn advance(&self, by: Duration) {
        if let LimitClock::Manual(t) = self {
            let mut t = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *t += by;
        }
    }
}

impl governor::clock::Clock for LimitClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        match self {
            LimitClock::Real(start) => start.elapsed(),
            LimitClock::Manual(t) => *t.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
        }
    }
}

pub type KeyLimiter = RateLimiter<NotKeyed, InMemoryState, LimitClock, StateInformationMiddleware>;
type AddressLimiter =
    RateLimiter<IpAddr, DefaultKeyedStateStore<IpAddr>, LimitClock, StateInformationMiddleware>;

fn quota(rate: RateLimit) -> Quota {
    Quota::per_minute(rate.per_minute).allow_burst(rate.burst)
}

pub fn key_limiter(rate: RateLimit, clock: &LimitClock) -> KeyLimiter {
    RateLimiter::direct_with_clock(quota(rate), clock.clone())
        .with_middleware::<StateInformationMiddleware>()
}

/// One decision of a limiter, with what the headers say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateStatus {
    /// Requests per minute.
    pub limit: u32,
    /// Requests that would be admitted right now.
    pub remaining: u32,
    /// Until the full burst is available again.
    pub reset_after: Duration,
    /// Set when refused: until the next request can be admitted.
    pub retry_after: Option<Duration>,
}

impl RateStatus {
    pub fn allowed(&self) -> bool {
        self.retry_after.is_none()
    }

    /// `X-RateLimit-Limit`, `-Remaining`, `-Reset` (Unix seconds), and `Retry-After` when refused.
    pub fn write_headers(&self, h: &mut HeaderMap, now_unix_ms: i64) {
        let reset_ms = now_unix_ms
            .saturating_add(i64::try_from(self.reset_after.as_millis()).unwrap_or(i64::MAX));
        // Rounded up: a client waiting until the stated second is never early.
        let reset = (reset_ms.saturating_add(999)) / 1000;
        h.insert(X_RATELIMIT_LIMIT, HeaderValue::from(self.limit));
        h.insert(X_RATELIMIT_REMAINING, HeaderValue::from(self.remaining));
        h.insert(X_RATELIMIT_RESET, HeaderValue::from(reset));
        if let Some(wait) = self.retry_after {
            h.insert(
                http::header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs(wait)),
            );
        }
    }
}

/// Whole seconds, at least 1, at most [`MAX_RETRY_AFTER`].
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.clamp(1, MAX_RETRY_AFTER.as_secs())
}

fn status(
    rate: RateLimit,
    clock: &LimitClock,
    outcome: Result<governor::middleware::StateSnapshot, governor::NotUntil<Duration>>,
) -> RateStatus {
    let interval = Duration::from_secs(60) / rate.per_minute.get();
    let burst = rate.burst.get();
    match outcome {
        Ok(snapshot) => {
            let remaining = snapshot.remaining_burst_capacity();
            RateStatus {
                limit: rate.per_minute.get(),
                remaining,
                reset_after: interval * (burst - remaining),
                retry_after: None,
            }
        }
        Err(not_until) => {
            use governor::clock::Clock as _;
            let wait = not_until.wait_time_from(clock.now());
            RateStatus {
                limit: rate.per_minute.get(),
                remaining: 0,
                reset_after: wait + interval * (burst - 1),
                retry_after: Some(wait.max(Duration::from_millis(1))),
            }
        }
    }
}

/// Takes one request from a key's limiter.
pub fn check_key(limiter: &KeyLimiter, rate: RateLimit, clock: &LimitClock) -> RateStatus {
    status(rate, clock, limiter.check())
}

/// The per-client-address limiter (before authentication).
pub struct AddressLimits {
    rate: RateLimit,
    limiter: AddressLimiter,
    clock: LimitClock,
}

impl AddressLimits {
    pub fn new(rate: RateLimit, clock: LimitClock) -> AddressLimits {
        let limiter = RateLimiter::dashmap_with_clock(quota(rate), clock.clone())
            .with_middleware::<StateInformationMiddleware>();
        AddressLimits {
            rate,
            limiter,
            clock,
        }
    }

    pub fn rate(&self) -> RateLimit {
        self.rate
    }

    pub fn check(&self, ip: IpAddr) -> RateStatus {
        status(self.rate, &self.clock, self.limiter.check_key(&ip))
    }

    /// Forgets addresses whose bucket is full again (called periodically; bounds memory).
    pub fn prune(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

impl std::fmt::Debug for AddressLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddressLimits")
            .field("rate", &self.rate)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU32;

    fn rate(per_minute: u32, burst: u32) -> RateLimit {
        RateLimit {
            per_minute: NonZeroU32::new(per_minute).unwrap(),
            burst: NonZeroU32::new(burst).unwrap(),
        }
    }

    /// Exact under a burst, on a clock moved by hand: `burst` admitted at once, the next refused
    /// with the wait until one cell is back, then exactly one more per interval.
    #[test]
    fn key_limit_is_exact_under_a_burst() {
        let clock = LimitClock::manual();
        let r = rate(60, 5);
        let l = key_limiter(r, &clock);
        for expect_remaining in (0..5).rev() {
            let s = check_key(&l, r, &clock);
            assert!(s.allowed());
            assert_eq!(s.remaining, expect_remaining);
        }
        let refused = check_key(&l, r, &clock);
        assert_eq!(refused.retry_after, Some(Duration::from_secs(1)));
        assert_eq!(refused.remaining, 0);
        clock.advance(Duration::from_millis(999));
        assert!(!check_key(&l, r, &clock).allowed());
        clock.advance(Duration::from_millis(1));
        let s = check_key(&l, r, &clock);
        assert!(s.allowed());
        assert_eq!(s.remaining, 0);
        assert!(!check_key(&l, r, &clock).allowed());
        // A long pause refills the burst, never more.
        clock.advance(Duration::from_secs(3600));
        let admitted = (0..10)
            .filter(|_| check_key(&l, r, &clock).allowed())
            .count();
        assert_eq!(admitted, 5);
    }

    #[test]
    fn addresses_are_limited_separately() {
        let clock = LimitClock::manual();
        let a = AddressLimits::new(rate(1, 2), clock.clone());
        let x: IpAddr = "192.0.2.1".parse().unwrap();
        let y: IpAddr = "2001:db8::1".parse().unwrap();
        assert!(a.check(x).allowed());
        assert!(a.check(x).allowed());
        let refused = a.check(x);
        assert_eq!(refused.retry_after, Some(Duration::from_secs(60)));
        assert!(a.check(y).allowed());
    }

    #[test]
    fn headers_and_retry_after_bounds() {
        let s = RateStatus {
            limit: 60,
            remaining: 0,
            reset_after: Duration::from_millis(1500),
            retry_after: Some(Duration::from_secs(600)),
        };
        let mut h = HeaderMap::new();
        s.write_headers(&mut h, 1_000_000);
        assert_eq!(h[X_RATELIMIT_LIMIT], "60");
        assert_eq!(h[X_RATELIMIT_REMAINING], "0");
        assert_eq!(h[X_RATELIMIT_RESET], "1002");
        assert_eq!(h[http::header::RETRY_AFTER], "60");
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
    }
}

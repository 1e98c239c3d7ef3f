//! Passive health: one circuit breaker per model, fed by the outcome of real requests (no
//! probing traffic of its own). Closed, a model takes requests; `failure_threshold` failures in a
//! row open it, and for `open` it takes none (requests go to their fallbacks, the router sees it
//! unhealthy); then it is half-open: exactly one request at a time is let through as a probe, and
//! its outcome closes the breaker or opens it again. Time is passed in (`now`), so the state
//! machine is tested without sleeping.
//!
//! A request holds a [`Ticket`] while it uses a model and reports through it; a ticket dropped
//! without a report (the request was cancelled) frees the probe slot without deciding anything.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::config::HealthConfig;
use crate::domain::ModelConfig;
use crate::metrics::Metrics;

/// What `Retry-After` says while a half-open model's one probe is under way.
const PROBE_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Every model's breaker, built once at start-up.
pub struct Health {
    breakers: HashMap<String, Arc<Breaker>>,
}

/// One model's breaker.
pub struct Breaker {
    state: Mutex<State>,
    threshold: u32,
    open_for: Duration,
    metrics: Arc<Metrics>,
    model: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { probing: bool },
}

/// Whether a request may use a model now.
pub enum Admission {
    /// Go ahead, and report the outcome through the ticket.
    Go(Ticket),
    /// The breaker is open (or its one probe is under way): try again after this long.
    Open { retry_after: Duration },
}

/// A request's use of a model; report [`Ticket::success`] or [`Ticket::failure`].
pub struct Ticket {
    breaker: Arc<Breaker>,
    probe: bool,
    reported: bool,
}

/// A model's breaker as a test sees it (not reported anywhere yet).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Closed,
    Open,
    HalfOpen,
}

impl Health {
    pub fn new(models: &[Arc<ModelConfig>], config: HealthConfig, metrics: Arc<Metrics>) -> Health {
        let breakers = models
            .iter()
            .map(|m| {
                metrics.by.upstream_up(&m.id.0, true);
                let b = Breaker {
                    state: Mutex::new(State::Closed { failures: 0 }),
                    threshold: config.failure_threshold.max(1),
                    open_for: config.open,
                    metrics: metrics.clone(),
                    model: m.id.0.clone(),
                };
                (m.id.0.clone(), Arc::new(b))
            })
            .collect();
        Health { breakers }
    }

    /// Whether a request may use `model` at `now`. A model the gateway does not know is always
    /// admitted (its ticket reports to a breaker nobody reads).
    pub fn admit(&self, model: &str, now: Instant) -> Admission {
        let Some(b) = self.breakers.get(model) else {
            return Admission::Go(Ticket::detached());
        };
        let mut s = b.lock();
        let probe = match *s {
            State::Closed { .. } => false,
            State::Open { until } if now < until => {
                return Admission::Open {
                    retry_after: until - now,
                };
            }
            State::Open { .. } | State::HalfOpen { probing: false } => {
                *s = State::HalfOpen { probing: true };
                tracing::info!(model = %b.model, "model breaker half-open: one probe request let through");
                true
            }
            State::HalfOpen { probing: true } => {
                return Admission::Open {
                    retry_after: PROBE_RETRY_AFTER,
                };
            }
        };
        drop(s);
        Admission::Go(Ticket {
            breaker: b.clone(),
            probe,
            reported: false,
        })
    }

    /// What a router is told: false while the breaker keeps the model out (open, or half-open
    /// with its probe under way). A half-open model with no probe yet is healthy, so routing
    /// can send it the probe.
    pub fn healthy(&self, model: &str, now: Instant) -> bool {
        self.breakers.get(model).is_none_or(|b| match *b.lock() {
            State::Closed { .. } | State::HalfOpen { probing: false } => true,
            State::Open { until } => now >= until,
            State::HalfOpen { probing: true } => false,
        })
    }

    /// A model's breaker as the admin API shows it (`GET /v1/admin/models`): `closed`, `open`
    /// or `half_open`; `None` for a model without one.
    pub fn breaker(&self, model: &str, now: Instant) -> Option<&'static str> {
        self.breakers.get(model).map(|b| match *b.lock() {
            State::Closed { .. } => "closed",
            State::Open { until } if now < until => "open",
            State::Open { .. } | State::HalfOpen { .. } => "half_open",
        })
    }

    #[cfg(test)]
    pub fn status(&self, model: &str, now: Instant) -> Status {
        self.breakers
            .get(model)
            .map_or(Status::Closed, |b| match *b.lock() {
                State::Closed { .. } => Status::Closed,
                State::Open { until } if now < until => Status::Open,
                State::Open { .. } | State::HalfOpen { .. } => Status::HalfOpen,
            })
    }
}

impl Breaker {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Ticket {
    /// A ticket for a model without a breaker.
    fn detached() -> Ticket {
        Ticket {
            breaker: Arc::new(Breaker {
                state: Mutex::new(State::Closed { failures: 0 }),
                threshold: u32::MAX,
                open_for: Duration::ZERO,
                metrics: Arc::new(Metrics::default()),
                model: String::new(),
            }),
            probe: false,
            reported: true,
        }
    }

    /// Whether this request is its model's half-open probe.
    #[cfg(test)]
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// The model answered: a probe closes the breaker; otherwise the failure count restarts.
    pub fn success(mut self) {
        self.reported = true;
        let b = &self.breaker;
        let mut s = b.lock();
        match *s {
            State::Closed { .. } => *s = State::Closed { failures: 0 },
            State::HalfOpen { .. } if self.probe => {
                *s = State::Closed { failures: 0 };
                drop(s);
                Metrics::dec(&b.metrics.breakers_open);
                b.metrics.by.upstream_up(&b.model, true);
                tracing::info!(model = %b.model, "model breaker closed: the probe succeeded");
            }
            // Admitted while closed, answered after others opened it: one success does not
            // outweigh the failures that opened it.
            State::Open { .. } | State::HalfOpen { .. } => {}
        }
    }

    /// The model failed (connection, timeout, 5xx, 429, broken answer). True when this failure
    /// opened the breaker.
    pub fn failure(mut self, now: Instant) -> bool {
        self.reported = true;
        let b = &self.breaker;
        let mut s = b.lock();
        let until = now + b.open_for;
        match *s {
            State::Closed { failures } if failures + 1 >= b.threshold => {
                *s = State::Open { until };
                drop(s);
                Metrics::inc(&b.metrics.breakers_open);
                Metrics::inc(&b.metrics.breaker_trips_total);
                b.metrics.by.upstream_up(&b.model, false);
                tracing::warn!(model = %b.model, failures = b.threshold, open_for = ?b.open_for,
                    "model breaker opened: the model failed repeatedly and is out of rotation");
                true
            }
            State::Closed { failures } => {
                *s = State::Closed {
                    failures: failures + 1,
                };
                false
            }
            State::HalfOpen { .. } if self.probe => {
                *s = State::Open { until };
                drop(s);
                Metrics::inc(&b.metrics.breaker_trips_total);
                tracing::warn!(model = %b.model, open_for = ?b.open_for, "model breaker opened again: the probe failed");
                true
            }
            State::Open { .. } | State::HalfOpen { .. } => false,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.reported || !self.probe {
            return;
        }
        // Cancelled before it learned anything: the next request may probe.
        let mut s = self.breaker.lock();
        if *s == (State::HalfOpen { probing: true }) {
            *s = State::HalfOpen { probing: false };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::sync::atomic::Ordering;

    const CONFIG: &str = "sovereign_id = \"t\"\nregion = \"r\"\ndefault_model = \"a\"\n\
        [[models]]\nid = \"a\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n\
        [[models]]\nid = \"b\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
        base_url = \"http://127.0.0.1:9/v1\"\n\
        [health]\nfailure_threshold = 3\nopen_ms = 1000\n";

    fn health() -> (Health, Arc<Metrics>) {
        let c = Config::parse(CONFIG).unwrap();
        let m = Arc::new(Metrics::default());
        (Health::new(&c.models, c.health, m.clone()), m)
    }

    fn go(h: &Health, model: &str, now: Instant) -> Ticket {
        match h.admit(model, now) {
            Admission::Go(t) => t,
            Admission::Open { .. } => panic!("{model} refused"),
        }
    }

    fn refused(h: &Health, model: &str, now: Instant) -> Duration {
        match h.admit(model, now) {
            Admission::Go(_) => panic!("{model} admitted"),
            Admission::Open { retry_after } => retry_after,
        }
    }

    #[test]
    fn opens_after_consecutive_failures_only() {
        let (h, m) = health();
        let t0 = Instant::now();
        // Two failures, a success: the count restarts.
        assert!(!go(&h, "a", t0).failure(t0));
        assert!(!go(&h, "a", t0).failure(t0));
        go(&h, "a", t0).success();
        assert!(!go(&h, "a", t0).failure(t0));
        assert!(!go(&h, "a", t0).failure(t0));
        assert_eq!(h.status("a", t0), Status::Closed);
        assert!(go(&h, "a", t0).failure(t0), "the third in a row opens it");
        assert_eq!(h.status("a", t0), Status::Open);
        assert!(!h.healthy("a", t0));
        assert!(h.healthy("b", t0), "breakers are per model");
        assert_eq!(m.breakers_open.load(Ordering::Relaxed), 1);
        assert_eq!(
            refused(&h, "a", t0 + Duration::from_millis(400)),
            Duration::from_millis(600)
        );
    }

    #[test]
    fn half_open_lets_one_probe_through_and_its_outcome_decides() {
        let (h, m) = health();
        let t0 = Instant::now();
        for _ in 0..3 {
            go(&h, "a", t0).failure(t0);
        }
        let t1 = t0 + Duration::from_millis(1000);
        assert!(h.healthy("a", t1), "the router may send the probe");
        let probe = go(&h, "a", t1);
        assert!(probe.is_probe());
        assert_eq!(h.status("a", t1), Status::HalfOpen);
        assert!(!h.healthy("a", t1));
        assert_eq!(
            refused(&h, "a", t1),
            PROBE_RETRY_AFTER,
            "one probe at a time"
        );
        // The probe fails: open again for the whole period.
        assert!(probe.failure(t1));
        assert_eq!(
            refused(&h, "a", t1 + Duration::from_millis(999)),
            Duration::from_millis(1)
        );
        assert_eq!(m.breakers_open.load(Ordering::Relaxed), 1);
        // The next probe succeeds: closed.
        let t2 = t1 + Duration::from_millis(1000);
        go(&h, "a", t2).success();
        assert_eq!(h.status("a", t2), Status::Closed);
        assert!(!go(&h, "a", t2).is_probe());
        assert_eq!(m.breakers_open.load(Ordering::Relaxed), 0);
        assert_eq!(m.breaker_trips_total.load(Ordering::Relaxed), 2);
        // Closed again means a fresh count.
        assert!(!go(&h, "a", t2).failure(t2));
    }

    #[test]
    fn a_cancelled_probe_frees_the_slot_and_late_reports_do_not_decide() {
        let (h, _) = health();
        let t0 = Instant::now();
        let early = go(&h, "a", t0);
        for _ in 0..3 {
            go(&h, "a", t0).failure(t0);
        }
        // Admitted before it opened, successful after: still open.
        early.success();
        assert_eq!(h.status("a", t0), Status::Open);
        let t1 = t0 + Duration::from_secs(1);
        drop(go(&h, "a", t1));
        let probe = go(&h, "a", t1);
        assert!(probe.is_probe(), "the dropped probe's slot is free again");
        probe.success();
        assert!(h.healthy("a", t1));
        // Unknown models are always admitted.
        assert!(!go(&h, "nope", t1).failure(t1));
    }
}

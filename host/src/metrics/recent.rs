//! [`Recent`]: this replica's last hours of model traffic, minute by minute, for the console's
//! latency, error-rate and time-to-first-token charts and its models page
//! (`GET /v1/admin/traffic`, docs/DECISIONS.md "Recent traffic: a per-minute ring").
//!
//! A fixed ring of [`MINUTES`] slots, each one row per configured model plus one for all of
//! them; a row is plain atomic counters (requests, 4xx, 5xx, and two fixed-bucket histograms:
//! total latency and time to first token). Recording is a few relaxed `fetch_add`s on memory
//! allocated at start: no lock, no allocation. A slot is reused a ring later: the first
//! recorder of a new minute claims it (compare-and-swap on its minute) and zeroes it; a count
//! landing in the same instant as that reset may be lost — the view is approximate at minute
//! edges, Prometheus (`/metrics`) stays the exact and fleet-wide answer.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Minutes kept: six hours.
pub const MINUTES: usize = 360;
/// Upper bounds (milliseconds) of the histograms' buckets; one more bucket holds the rest.
const BOUNDS_MS: [u64; 14] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000,
];
const BUCKETS: usize = BOUNDS_MS.len() + 1;

/// One row (a model, or all) in one minute.
#[derive(Default)]
struct Cell {
    requests: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    latency_sum_us: AtomicU64,
    latency: [AtomicU64; BUCKETS],
    first_tokens: AtomicU64,
    first_token_sum_us: AtomicU64,
    first_token: [AtomicU64; BUCKETS],
}

struct Slot {
    /// The minute (Unix minutes) the slot holds; 0: none yet.
    minute: AtomicU64,
    rows: Box<[Cell]>,
}

/// The ring, sized for the configured models once at start ([`Recent::init`]); before that (and
/// for a model the configuration does not name) only the `all` row counts.
#[derive(Default)]
pub struct Recent {
    ring: OnceLock<Ring>,
}

struct Ring {
    /// Row 0 is every model; row i + 1 is `models[i]`.
    models: Vec<String>,
    index: HashMap<String, usize>,
    slots: Box<[Slot]>,
}

impl std::fmt::Debug for Recent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recent")
            .field("models", &self.ring.get().map(|r| r.models.len()))
            .finish()
    }
}

/// One row summed over some minutes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub requests: u64,
    pub client_errors: u64,
    pub server_errors: u64,
    pub latency_sum_us: u64,
    pub latency: [u64; BUCKETS],
    pub first_tokens: u64,
    pub first_token_sum_us: u64,
    pub first_token: [u64; BUCKETS],
}

fn now_minute() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
}

fn bucket(d: Duration) -> usize {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    BOUNDS_MS.partition_point(|&b| b < ms)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Recent {
    /// Sizes the ring for `models` (the configuration's; call once, at start).
    pub fn init<'a>(&self, models: impl IntoIterator<Item = &'a str>) {
        let models: Vec<String> = models.into_iter().map(str::to_owned).collect();
        let index = models
            .iter()
            .enumerate()
            .map(|(i, m)| (m.clone(), i + 1))
            .collect();
        let rows = models.len() + 1;
        let slots = (0..MINUTES)
            .map(|_| Slot {
                minute: AtomicU64::new(0),
                rows: (0..rows).map(|_| Cell::default()).collect(),
            })
            .collect();
        let _ = self.ring.set(Ring {
            models,
            index,
            slots,
        });
    }

    /// The models rows exist for, in the configuration's order.
    pub fn models(&self) -> &[String] {
        self.ring.get().map_or(&[], |r| &r.models)
    }

    /// The rows `model` counts in this minute: `all`, and the model's own when it has one.
    fn cells(&self, model: &str) -> Option<(&Cell, Option<&Cell>)> {
        let ring = self.ring.get()?;
        let minute = now_minute();
        let slot = &ring.slots[usize::try_from(minute).unwrap_or(0) % MINUTES];
        let held = slot.minute.load(Ordering::Acquire);
        if held != minute
            && slot
                .minute
                .compare_exchange(held, minute, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            for c in &slot.rows {
                c.reset();
            }
        }
        let own = ring.index.get(model).map(|&i| &slot.rows[i]);
        Some((&slot.rows[0], own))
    }

    /// A model request answered: its status and its time (a stream's: to its end).
    pub fn request(&self, model: &str, status: u16, took: Duration) {
        let Some((all, own)) = self.cells(model) else {
            return;
        };
        for c in std::iter::once(all).chain(own) {
            c.requests.fetch_add(1, Ordering::Relaxed);
            match status {
                400..=499 => c.client_errors.fetch_add(1, Ordering::Relaxed),
                500.. => c.server_errors.fetch_add(1, Ordering::Relaxed),
                _ => 0,
            };
            c.latency_sum_us.fetch_add(micros(took), Ordering::Relaxed);
            c.latency[bucket(took)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A stream's first content sent, `after` its request arrived.
    pub fn first_token(&self, model: &str, after: Duration) {
        let Some((all, own)) = self.cells(model) else {
            return;
        };
        for c in std::iter::once(all).chain(own) {
            c.first_tokens.fetch_add(1, Ordering::Relaxed);
            c.first_token_sum_us
                .fetch_add(micros(after), Ordering::Relaxed);
            c.first_token[bucket(after)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The last `minutes` minutes (oldest first, the current one last), each with its start
    /// (Unix seconds) and the row of `model` (`None`: all models). A minute nobody recorded in
    /// is zeros. `None` when `model` has no row.
    pub fn series(&self, model: Option<&str>, minutes: usize) -> Option<Vec<(u64, Summary)>> {
        let ring = self.ring.get()?;
        let row = match model {
            None => 0,
            Some(m) => *ring.index.get(m)?,
        };
        let now = now_minute();
        let n = minutes.clamp(1, MINUTES) as u64;
        Some(
            (now + 1 - n.min(now + 1)..=now)
                .map(|minute| {
                    let slot = &ring.slots[usize::try_from(minute).unwrap_or(0) % MINUTES];
                    let mut s = Summary::default();
                    if slot.minute.load(Ordering::Acquire) == minute {
                        slot.rows[row].add_to(&mut s);
                    }
                    (minute * 60, s)
                })
                .collect(),
        )
    }
}

impl Cell {
    fn reset(&self) {
        let all = [
            &self.requests,
            &self.client_errors,
            &self.server_errors,
            &self.latency_sum_us,
            &self.first_tokens,
            &self.first_token_sum_us,
        ];
        for a in all
            .into_iter()
            .chain(&self.latency)
            .chain(&self.first_token)
        {
            a.store(0, Ordering::Relaxed);
        }
    }

    fn add_to(&self, s: &mut Summary) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        s.requests += get(&self.requests);
        s.client_errors += get(&self.client_errors);
        s.server_errors += get(&self.server_errors);
        s.latency_sum_us += get(&self.latency_sum_us);
        s.first_tokens += get(&self.first_tokens);
        s.first_token_sum_us += get(&self.first_token_sum_us);
        for i in 0..BUCKETS {
            s.latency[i] += get(&self.latency[i]);
            s.first_token[i] += get(&self.first_token[i]);
        }
    }
}

impl Summary {
    /// Adds another summary (minutes summed into a window).
    pub fn add(&mut self, o: &Summary) {
        self.requests += o.requests;
        self.client_errors += o.client_errors;
        self.server_errors += o.server_errors;
        self.latency_sum_us += o.latency_sum_us;
        self.first_tokens += o.first_tokens;
        self.first_token_sum_us += o.first_token_sum_us;
        for i in 0..BUCKETS {
            self.latency[i] += o.latency[i];
            self.first_token[i] += o.first_token[i];
        }
    }

    /// The `q` quantile (0…1) of the total latency, in milliseconds; `None` without requests.
    pub fn latency_ms(&self, q: f64) -> Option<f64> {
        quantile(&self.latency, q)
    }

    /// The `q` quantile of the time to first token, in milliseconds; `None` without streams.
    pub fn first_token_ms(&self, q: f64) -> Option<f64> {
        quantile(&self.first_token, q)
    }

    pub fn mean_latency_ms(&self) -> Option<f64> {
        (self.requests > 0).then(|| self.latency_sum_us as f64 / self.requests as f64 / 1000.0)
    }

    pub fn mean_first_token_ms(&self) -> Option<f64> {
        (self.first_tokens > 0)
            .then(|| self.first_token_sum_us as f64 / self.first_tokens as f64 / 1000.0)
    }

    /// 4xx + 5xx over requests.
    pub fn error_rate(&self) -> Option<f64> {
        (self.requests > 0)
            .then(|| (self.client_errors + self.server_errors) as f64 / self.requests as f64)
    }
}

/// A quantile from bucket counts, interpolated inside its bucket (as Prometheus'
/// `histogram_quantile` does); the last, open bucket answers its lower bound.
fn quantile(buckets: &[u64; BUCKETS], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total as f64;
    let mut seen = 0u64;
    for (i, &n) in buckets.iter().enumerate() {
        if n > 0 && (seen + n) as f64 >= rank {
            let lo = if i == 0 { 0 } else { BOUNDS_MS[i - 1] } as f64;
            let Some(&hi) = BOUNDS_MS.get(i) else {
                return Some(lo);
            };
            let within = ((rank - seen as f64) / n as f64).clamp(0.0, 1.0);
            return Some(lo + (hi as f64 - lo) * within);
        }
        seen += n;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn requests_count_in_their_model_and_in_all_and_quantiles_follow_the_buckets() {
        let r = Recent::default();
        r.request("a", 200, Duration::from_millis(1));
        r.init(["a", "b"]);
        for _ in 0..9 {
            r.request("a", 200, Duration::from_millis(20));
        }
        r.request("a", 503, Duration::from_millis(2000));
        r.request("b", 429, Duration::from_millis(3));
        r.request("unknown", 200, Duration::from_millis(3));
        r.first_token("a", Duration::from_millis(40));
        let sum = |m| {
            let mut s = Summary::default();
            for (_, x) in r.series(m, 5).unwrap() {
                s.add(&x);
            }
            s
        };
        let (all, a, b) = (sum(None), sum(Some("a")), sum(Some("b")));
        assert_eq!((all.requests, a.requests, b.requests), (12, 10, 1));
        assert_eq!(
            (a.server_errors, b.client_errors, all.client_errors),
            (1, 1, 1)
        );
        assert_eq!(a.error_rate(), Some(0.1));
        let p50 = a.latency_ms(0.5).unwrap();
        assert!((10.0..=25.0).contains(&p50), "{p50}");
        let p99 = a.latency_ms(0.99).unwrap();
        assert!((1000.0..=2500.0).contains(&p99), "{p99}");
        assert_eq!(a.first_tokens, 1);
        assert!((25.0..=50.0).contains(&a.first_token_ms(0.5).unwrap()));
        assert_eq!(b.first_token_ms(0.5), None);
        assert!(r.series(Some("unknown"), 5).is_none());
        assert_eq!(r.series(None, 10_000).unwrap().len(), MINUTES);
    }

    #[test]
    fn a_reused_slot_starts_from_zero() {
        let r = Recent::default();
        r.init(["a"]);
        r.request("a", 200, Duration::from_millis(1));
        let ring = r.ring.get().unwrap();
        let minute = now_minute();
        let slot = &ring.slots[minute as usize % MINUTES];
        // The slot as a ring ago left it: claimed again now, it is zeroed first.
        slot.minute
            .store(minute - MINUTES as u64, Ordering::Release);
        r.request("a", 200, Duration::from_millis(1));
        let s = r.series(Some("a"), 1).unwrap();
        assert_eq!(s[0].1.requests, 1);
    }
}

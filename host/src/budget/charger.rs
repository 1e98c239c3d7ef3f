//! The charger: persists settled usage (a usage row plus the spend on the team's and key's
//! counters) to the store with group commit (`crate::store::group_commit`) — everything queued
//! while one transaction commits goes into the next. Callers may wait for their charge to be
//! durable ([`Charger::charge_then_wait`] returns what completes when it is committed) or not.
//! A failing store is retried, never skipped: a charge is dropped only if the process dies
//! before it commits.
//!
//! Charges a durable journal entry carries ([`Charger::charge_carried`], on SQLite) are not
//! waited for: the entry's fsync is their durability. The store's copy is committed in large
//! batches (a batch nobody waits for stays open 20 ms), and start-up takes back from the journal
//! what a crash or a power failure took from the store (`budget::recover`). To bound how much of
//! the journal that reads, a marker (the journal seq from which charges may be missing) is
//! queued ahead of a carried charge at most once a second. docs/STORE.md, "Charges ride the
//! journal's fsync".
//!
//! Stored responses (the Responses API) ride the same queue ([`Charger::store_response`]): a
//! response queued right after its charge commits with it, in one transaction and one fsync, and
//! waiting for the response means the charge before it is durable too (the queue is in order).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::journal::Journal;
use crate::store::group_commit::GroupCommit;
use crate::store::responses::StoredResponse;
use crate::store::{Store, UsageRecord};

/// What the queue commits.
#[derive(Debug, Clone)]
enum Durable {
    Charge(UsageRecord),
    /// A charge whose journal entry carries it: nobody waits for its commit.
    Carried(UsageRecord),
    /// The journal seq from which charges may be missing from the store.
    Marker(u64),
    Response(Box<StoredResponse>),
}

/// Most charges committed in one transaction.
const MAX_BATCH: usize = 1_024;

/// Most time between two markers while carried charges are queued.
const MARKER_EVERY: Duration = Duration::from_secs(1);

/// How long a batch nobody waits for stays open for more, when charges are carried
/// (`GroupCommit::linger`): their durability is their entries', so the store's copy can be
/// written in large transactions — a few pages of WAL for many charges, instead of a few pages
/// for every handful.
const CARRIED_LINGER: Duration = Duration::from_millis(20);

#[derive(Clone)]
pub struct Charger {
    queue: GroupCommit<Durable>,
    /// Set when charges ride the journal's fsync.
    carrier: Option<Arc<Carrier>>,
}

impl std::fmt::Debug for Charger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Charger")
            .field("carried", &self.carrier.is_some())
            .finish_non_exhaustive()
    }
}

/// The journal whose entries carry charges, and when the last marker was queued.
struct Carrier {
    journal: Journal,
    started: Instant,
    /// Milliseconds after `started` (0: none queued yet).
    last_marker_ms: AtomicU64,
}

impl Carrier {
    /// The marker to queue ahead of a carried charge, when a second has passed since the last:
    /// the seq after the journal's durable head, which every entry appended from now on will
    /// pass (its charge is queued before it is appended, so after this marker in the queue).
    fn marker_due(&self) -> Option<u64> {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.last_marker_ms.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= MARKER_EVERY.as_millis() as u64;
        (due && self
            .last_marker_ms
            .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok())
        .then(|| self.journal.durable_seq() + 1)
    }
}

impl Charger {
    /// Starts the writer, where the store says (`Store::group_commits_run`: SQLite's on a thread
    /// of its own); it ends when every [`Charger`] handle is dropped and the queue is drained
    /// (the returned handle completes then).
    ///
    /// With `journal` (a durable one) and a store whose charges can ride it
    /// (`Store::charges_ride_journal`), [`Charger::charge_carried`] is not waited for.
    pub fn start(
        store: Arc<dyn Store>,
        journal: Option<Journal>,
    ) -> (Charger, tokio::task::JoinHandle<()>) {
        let carrier = journal
            .filter(|j| j.is_durable() && store.charges_ride_journal())
            .map(|journal| {
                Arc::new(Carrier {
                    journal,
                    started: Instant::now(),
                    last_marker_ms: AtomicU64::new(0),
                })
            });
        let runs = store.group_commits_run();
        let (queue, task) =
            GroupCommit::start(runs, "usage", MAX_BATCH, move |items: Vec<Durable>| {
                let store = store.clone();
                let mut charges = Vec::with_capacity(items.len());
                let mut responses = Vec::new();
                let mut marker = None;
                for item in items {
                    match item {
                        Durable::Charge(c) | Durable::Carried(c) => charges.push(c),
                        Durable::Marker(seq) => marker = Some(seq),
                        Durable::Response(r) => responses.push(*r),
                    }
                }
                Box::pin(async move {
                    // One transaction whatever the batch holds (a retry must not apply half of
                    // it twice). A marker beside responses is dropped: the one before it stays
                    // true, start-up only reads a little more journal, and the next comes in
                    // a second.
                    match marker {
                        _ if !responses.is_empty() => {
                            store.charge_and_store(charges, responses).await
                        }
                        Some(seq) => store.charge_and_mark(charges, seq).await,
                        None => store.charge(charges).await,
                    }
                })
            });
        if carrier.is_some() {
            queue.linger(CARRIED_LINGER);
        }
        (Charger { queue, carrier }, task)
    }

    /// Whether charges ride the journal's fsync ([`Charger::charge_carried`]).
    pub fn carries(&self) -> bool {
        self.carrier.is_some()
    }

    /// Queues a charge its journal entry carries (the caller puts it in the entry, which is
    /// appended after this call): never waited for.
    /// Without a carrier, it is queued as [`Charger::charge_later`] queues.
    pub fn charge_carried(&self, record: UsageRecord) {
        let Some(carrier) = &self.carrier else {
            return self.charge_later(record);
        };
        if let Some(seq) = carrier.marker_due() {
            let _ = self.queue.push(Durable::Marker(seq));
        }
        if !self.queue.push(Durable::Carried(record)) {
            tracing::error!("the charger has stopped; a charge was not recorded");
        }
    }

    /// Queues a charge now; the returned future completes when it is committed (at once if the
    /// writer is gone, shutting down).
    pub fn charge_then_wait(&self, record: UsageRecord) -> impl Future<Output = ()> + Send + use<> {
        self.queue.push_then_wait(Durable::Charge(record))
    }

    /// Queues a stored response and returns when it is committed, with every charge queued
    /// before it — through a store outage too: a client is never told of a response that a
    /// continuation could not find.
    pub async fn store_response(&self, response: StoredResponse) {
        self.queue
            .push_and_wait_durable(Durable::Response(Box::new(response)))
            .await;
    }

    /// Queues a charge without waiting (from synchronous code: end of a stream, a drop).
    pub fn charge_later(&self, record: UsageRecord) {
        if !self.queue.push(Durable::Charge(record)) {
            tracing::error!("the charger has stopped; a charge was not recorded");
        }
    }

    /// Returns when every charge queued before this call is committed.
    pub async fn flush(&self) {
        self.queue.flush().await;
    }

    /// Requests go on while the store has been failing for less than `grace`, their charges
    /// queued (`GroupCommit::tolerate_outages`).
    pub fn tolerate_outages(&self, grace: std::time::Duration) {
        self.queue.tolerate_outages(grace);
    }

    /// How long charges have been failing to commit.
    pub fn outage(&self) -> Option<std::time::Duration> {
        self.queue.outage()
    }
}

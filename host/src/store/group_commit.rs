//! Group commit: items queued from anywhere without blocking, written to the store in batches —
//! everything queued while one write is under way goes into the next, one transaction each. A
//! failing write is retried with backoff, never skipped: an item is lost only if the process dies
//! before its batch commits. Callers may wait for their item ([`GroupCommit::push_then_wait`]) or
//! for everything queued before a point ([`GroupCommit::flush`]). The charger (settled usage),
//! the webhook outbox (deliveries) and the webhook recorder (attempt outcomes) are this, with
//! their own write.
//!
//! A writer runs as a task on the shared runtime, or on a thread of its own ([`Runs`]) where a
//! store whose calls block a thread (SQLite) writes inline ([`on_writer_thread`]). The charger's
//! runs where its store says (`Store::group_commits_run`: SQLite's on a thread; PostgreSQL's
//! calls are I/O on the shared runtime); the webhook queues' are tasks. From a task, each batch
//! crossed threads four times: the task woken, the write handed to the blocking pool, the task
//! woken again with its result, the waiters woken; on its own thread, twice (bench/README.md,
//! "Group commit on a thread of its own").
//!
//! A shared store (PostgreSQL) may be away for a while; [`GroupCommit::tolerate_outages`] lets
//! waiters go on while the writer has been failing for less than the grace: their items stay
//! queued and are retried until they commit (in memory only, meanwhile). Past the grace, waiters
//! wait again, and the gateway refuses new requests ([`GroupCommit::outage`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use tokio::runtime::Runtime;
use tokio::sync::{mpsc, oneshot};

use super::StoreResult;

/// Longest pause between two tries of a failing write.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Where a queue's writer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// A task on the runtime that starts it.
    Task,
    /// A thread of its own (named after the queue), on which the store's calls run inline.
    Thread,
}

thread_local! {
    static WRITER_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is a writer's own thread ([`Runs::Thread`]): a store whose calls block may run
/// them here directly instead of handing them to the blocking pool.
pub fn on_writer_thread() -> bool {
    WRITER_THREAD.with(std::cell::Cell::get)
}

enum Job<T> {
    Item(T, Option<oneshot::Sender<()>>),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// The queueing side; cheap to clone.
pub struct GroupCommit<T> {
    tx: mpsc::UnboundedSender<Job<T>>,
    health: Arc<Health>,
}

/// Whether the writer is failing, and for how long waiters may go on without it.
#[derive(Debug)]
struct Health {
    /// Set while writes fail: when the first of them failed.
    failing: tokio::sync::watch::Sender<Option<Instant>>,
    /// Milliseconds; 0: waiters always wait (the embedded store).
    grace_ms: AtomicI64,
    /// Microseconds a batch nobody waits for stays open for more ([`GroupCommit::linger`]).
    linger_us: AtomicI64,
}

impl Health {
    fn new() -> Arc<Health> {
        Arc::new(Health {
            failing: tokio::sync::watch::Sender::new(None),
            grace_ms: AtomicI64::new(0),
            linger_us: AtomicI64::new(0),
        })
    }

    fn linger(&self) -> Duration {
        Duration::from_micros(u64::try_from(self.linger_us.load(Ordering::Relaxed)).unwrap_or(0))
    }

    fn grace(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.grace_ms.load(Ordering::Relaxed)).unwrap_or(0))
    }

    /// Resolves when the writer is failing and still within the grace; never otherwise.
    async fn excused(&self) {
        let grace = self.grace();
        if grace.is_zero() {
            return std::future::pending().await;
        }
        let mut rx = self.failing.subscribe();
        let within = |since: &Option<Instant>| since.is_some_and(|t| t.elapsed() < grace);
        if rx.wait_for(within).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl<T> Clone for GroupCommit<T> {
    fn clone(&self) -> Self {
        GroupCommit {
            tx: self.tx.clone(),
            health: self.health.clone(),
        }
    }
}

impl<T> std::fmt::Debug for GroupCommit<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

/// The writing side, started once its write is known ([`Writer::start`]).
pub struct Writer<T> {
    rx: mpsc::UnboundedReceiver<Job<T>>,
    health: Arc<Health>,
}

impl<T: Clone + Send + 'static> GroupCommit<T> {
    /// The queue, and its writer to start when the write can be built (the webhook outbox is
    /// fed before the subscriptions it writes against are loaded).
    pub fn channel() -> (GroupCommit<T>, Writer<T>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let health = Health::new();
        (
            GroupCommit {
                tx,
                health: health.clone(),
            },
            Writer { rx, health },
        )
    }

    /// The queue with its writer started where `runs` says ([`Writer::start`]).
    pub fn start<W>(
        runs: Runs,
        what: &'static str,
        max_batch: usize,
        write: W,
    ) -> (GroupCommit<T>, tokio::task::JoinHandle<()>)
    where
        W: FnMut(Vec<T>) -> BoxFuture<'static, StoreResult<()>> + Send + 'static,
    {
        let (queue, writer) = GroupCommit::channel();
        (queue, writer.start(runs, what, max_batch, write))
    }

    /// Queues `item`; false when the writer has stopped.
    pub fn push(&self, item: T) -> bool {
        self.tx.send(Job::Item(item, None)).is_ok()
    }

    /// Queues `item` now and returns the wait: done once it is written (at once if the writer
    /// has stopped; early, with the item still queued, while an outage is within its grace).
    /// The caller may wait on something else meanwhile.
    pub fn push_then_wait(&self, item: T) -> impl Future<Output = ()> + Send + use<T> {
        let (ack, done) = oneshot::channel();
        let queued = self.tx.send(Job::Item(item, Some(ack))).is_ok();
        let health = self.health.clone();
        async move {
            if queued {
                tokio::select! {
                    _ = done => {}
                    () = health.excused() => {}
                }
            }
        }
    }

    /// Queues `item` and returns once it is written, outage or not (at once only if the writer
    /// has stopped): for what must never be acknowledged before it is durable.
    pub async fn push_and_wait_durable(&self, item: T) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Item(item, Some(ack))).is_ok() {
            let _ = done.await;
        }
    }

    /// Returns once everything queued before this call is written (or, as
    /// [`GroupCommit::push_then_wait`], while an outage is within its grace).
    pub async fn flush(&self) {
        let (ack, done) = oneshot::channel();
        if self.tx.send(Job::Flush(ack)).is_ok() {
            tokio::select! {
                _ = done => {}
                () = self.health.excused() => {}
            }
        }
    }

    /// Keeps a batch that nobody waits for open for up to `linger` before writing it: what is
    /// queued meanwhile joins it, so a queue whose items are durable elsewhere (charges their
    /// journal entries carry) writes far fewer, larger transactions. An item with a waiter (or
    /// a flush) arriving meanwhile closes the batch at once.
    pub fn linger(&self, linger: Duration) {
        let us = i64::try_from(linger.as_micros()).unwrap_or(i64::MAX);
        self.health.linger_us.store(us, Ordering::Relaxed);
    }

    /// Lets waiters go on while writes have been failing for less than `grace` (a shared store:
    /// traffic continues through its outage, its writes queued).
    pub fn tolerate_outages(&self, grace: Duration) {
        let ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
        self.health.grace_ms.store(ms, Ordering::Relaxed);
    }

    /// How long writes have been failing (`None`: they are not).
    pub fn outage(&self) -> Option<Duration> {
        self.health.failing.borrow().map(|t| t.elapsed())
    }
}

impl<T: Clone + Send + 'static> Writer<T> {
    /// Starts the writer: `write` gets each batch (again, after a pause, while it fails). It
    /// ends when every [`GroupCommit`] handle is dropped and the queue is drained, and the
    /// returned handle completes then. [`Runs::Task`]: a task on the caller's runtime.
    /// [`Runs::Thread`]: the same loop on a thread of its own (a single-threaded runtime;
    /// [`on_writer_thread`] is true there), or on a task after all if the thread cannot be made.
    pub fn start<W>(
        self,
        runs: Runs,
        what: &'static str,
        max_batch: usize,
        write: W,
    ) -> tokio::task::JoinHandle<()>
    where
        W: FnMut(Vec<T>) -> BoxFuture<'static, StoreResult<()>> + Send + 'static,
    {
        if runs == Runs::Task {
            return tokio::spawn(self.run(what, max_batch, write));
        }
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        {
            Ok(r) => r,
            Err(e) => return self.on_a_task_after_all(&e, what, max_batch, write),
        };
        // The runtime and the loop move to the thread once it exists: without one, the loop can
        // still run as a task, and the runtime is not dropped here (inside the caller's runtime,
        // where dropping one panics).
        let (hand_over, handed) = std::sync::mpsc::sync_channel::<(Runtime, Self, W)>(1);
        let (ended, done) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("commit-{what}"))
            .spawn(move || {
                if let Ok((runtime, writer, write)) = handed.recv() {
                    WRITER_THREAD.with(|w| w.set(true));
                    runtime.block_on(writer.run(what, max_batch, write));
                }
                let _ = ended.send(());
            });
        if let Err(e) = thread {
            runtime.shutdown_background();
            return self.on_a_task_after_all(&e, what, max_batch, write);
        }
        if let Err(std::sync::mpsc::SendError((runtime, ..))) =
            hand_over.send((runtime, self, write))
        {
            runtime.shutdown_background();
        }
        tokio::spawn(async move {
            let _ = done.await;
        })
    }

    fn on_a_task_after_all<W>(
        self,
        e: &std::io::Error,
        what: &'static str,
        max_batch: usize,
        write: W,
    ) -> tokio::task::JoinHandle<()>
    where
        W: FnMut(Vec<T>) -> BoxFuture<'static, StoreResult<()>> + Send + 'static,
    {
        tracing::warn!(error = %e, what, "no thread for the group commit's writer; it runs as a task");
        tokio::spawn(self.run(what, max_batch, write))
    }

    /// The writer's loop.
    async fn run<W>(self, what: &'static str, max_batch: usize, mut write: W)
    where
        W: FnMut(Vec<T>) -> BoxFuture<'static, StoreResult<()>> + Send + 'static,
    {
        let (mut rx, health) = (self.rx, self.health);
        let mut jobs = Vec::with_capacity(max_batch);
        while rx.recv_many(&mut jobs, max_batch).await > 0 {
            if on_writer_thread() && jobs.len() < max_batch {
                // The queue has gone empty before the batch filled. The thread's CPU goes to
                // whoever is ready to run first — on a busy gateway, a lane about to queue its
                // charge —, then what came meanwhile joins this batch: larger batches, fewer
                // fsyncs (bench/README.md, "Yielding before a commit").
                std::thread::yield_now();
                take_queued(&mut rx, &mut jobs, max_batch);
            }
            linger(&mut rx, &mut jobs, max_batch, health.linger()).await;
            let mut items = Vec::with_capacity(jobs.len());
            let mut acks = Vec::new();
            for job in jobs.drain(..) {
                match job {
                    Job::Item(item, ack) => {
                        items.push(item);
                        acks.extend(ack);
                    }
                    Job::Flush(ack) => acks.push(ack),
                }
            }
            if !items.is_empty() {
                let mut backoff = Duration::from_millis(10);
                while let Err(e) = write(items.clone()).await {
                    tracing::error!(error = %e, what, items = items.len(), retry_in = ?backoff, "writing to the store failed; retrying");
                    health.failing.send_if_modified(|f| {
                        let first = f.is_none();
                        f.get_or_insert_with(Instant::now);
                        first
                    });
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                health.failing.send_if_modified(|f| f.take().is_some());
            }
            for ack in acks {
                let _ = ack.send(());
            }
        }
    }
}

/// While nobody waits for the batch in `jobs` (no item with a waiter, no flush), keeps taking
/// what arrives for up to `linger` (none: returns at once), up to `max_batch` in all.
async fn linger<T>(
    rx: &mut mpsc::UnboundedReceiver<Job<T>>,
    jobs: &mut Vec<Job<T>>,
    max_batch: usize,
    linger: Duration,
) {
    let waited = |job: &Job<T>| matches!(job, Job::Item(_, Some(_)) | Job::Flush(_));
    if linger.is_zero() || jobs.iter().any(waited) {
        return;
    }
    let until = tokio::time::Instant::now() + linger;
    while jobs.len() < max_batch {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(job)) => {
                let close = waited(&job);
                jobs.push(job);
                if close {
                    return;
                }
            }
            // The time is up, or every sender is gone (the batch is written, then the loop ends).
            Ok(None) | Err(_) => return,
        }
    }
}

/// Moves what `rx` holds now into `jobs`, up to `max_batch` in all, without waiting.
fn take_queued<J>(rx: &mut mpsc::UnboundedReceiver<J>, jobs: &mut Vec<J>, max_batch: usize) {
    while jobs.len() < max_batch {
        match rx.try_recv() {
            Ok(job) => jobs.push(job),
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Each batch the writer got, and whether it ran on the writer's own thread.
    type Seen = Arc<Mutex<Vec<(Vec<u32>, bool)>>>;

    fn writer(seen: &Seen) -> impl FnMut(Vec<u32>) -> BoxFuture<'static, StoreResult<()>> + use<> {
        let seen = seen.clone();
        move |items| {
            let seen = seen.clone();
            Box::pin(async move {
                seen.lock().unwrap().push((items, on_writer_thread()));
                Ok(())
            })
        }
    }

    #[tokio::test]
    async fn a_writer_on_its_own_thread_writes_acknowledges_and_ends_with_its_queue() {
        let seen = Seen::default();
        let (queue, ended) = GroupCommit::start(Runs::Thread, "test", 8, writer(&seen));
        queue.push_then_wait(1).await;
        assert!(queue.push(2));
        queue.flush().await;
        assert_eq!(*seen.lock().unwrap(), [(vec![1], true), (vec![2], true)]);
        assert!(!on_writer_thread(), "only the writer's thread is marked");
        drop(queue);
        tokio::time::timeout(Duration::from_secs(5), ended)
            .await
            .expect("the writer ends once its queue is gone")
            .unwrap();
    }

    #[test]
    fn what_is_queued_is_taken_up_to_a_full_batch() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for i in 0..5 {
            tx.send(i).unwrap();
        }
        let mut jobs = vec![9];
        take_queued(&mut rx, &mut jobs, 3);
        assert_eq!(jobs, [9, 0, 1]);
        take_queued(&mut rx, &mut jobs, 8);
        assert_eq!(jobs, [9, 0, 1, 2, 3, 4]);
        take_queued(&mut rx, &mut jobs, 8);
        assert_eq!(jobs.len(), 6, "an empty queue is not waited on");
    }

    #[tokio::test]
    async fn a_writer_task_is_not_on_a_writer_thread() {
        let seen = Seen::default();
        let (queue, _ended) = GroupCommit::start(Runs::Task, "test", 8, writer(&seen));
        queue.push_then_wait(1).await;
        assert_eq!(*seen.lock().unwrap(), [(vec![1], false)]);
    }

    /// A batch nobody waits for stays open for the linger (on tokio's paused clock: no real
    /// sleep), up to a full batch; an item with a waiter closes it at once.
    #[tokio::test(start_paused = true)]
    async fn a_lingering_batch_takes_what_comes_until_someone_waits() {
        let (tx, mut rx) = mpsc::unbounded_channel::<Job<u32>>();
        let linger_for = Duration::from_millis(20);
        let mut jobs = vec![Job::Item(0, None)];
        let sender = tx.clone();
        tokio::spawn(async move {
            for i in 1..=3 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let _ = sender.send(Job::Item(i, None));
            }
        });
        let started = tokio::time::Instant::now();
        linger(&mut rx, &mut jobs, 8, linger_for).await;
        assert_eq!(started.elapsed(), linger_for, "open for the whole linger");
        assert_eq!(jobs.len(), 4, "what came meanwhile joined");

        let mut jobs = vec![Job::Item(0, None)];
        let (ack, _done) = oneshot::channel();
        let sender = tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let _ = sender.send(Job::Item(1, Some(ack)));
            let _ = sender.send(Job::Item(2, None));
        });
        let started = tokio::time::Instant::now();
        linger(&mut rx, &mut jobs, 8, linger_for).await;
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(5),
            "closed by the waiter"
        );
        assert_eq!(jobs.len(), 2);
        take_queued(&mut rx, &mut jobs, 8);

        let (ack, _done) = oneshot::channel();
        let mut jobs = vec![Job::Item(0, Some(ack))];
        let started = tokio::time::Instant::now();
        linger(&mut rx, &mut jobs, 8, linger_for).await;
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "a waiter already in: no linger"
        );

        let mut jobs: Vec<Job<u32>> = (0..8).map(|i| Job::Item(i, None)).collect();
        linger(&mut rx, &mut jobs, 8, linger_for).await;
        assert_eq!(started.elapsed(), Duration::ZERO, "a full batch: no linger");
    }
}

//! The built-in embedding model behind one scheduler: every embedding the gateway computes in
//! process (`/v1/embeddings` on the built-in model, RAG queries, document ingestion) is an
//! [`EmbedJob`] run by one engine thread, one batch of windows at a time, so that
//! - interactive work (queries, `/v1/embeddings`) runs before bulk work (ingestion): between two
//!   batches the thread takes the oldest runnable interactive job first;
//! - teams share it fairly: within a class, teams take turns batch by batch (a team's own jobs run
//!   in arrival order), so a big request of one team delays another team by one batch, not by
//!   the whole request;
//! - work nobody waits for stops: a job whose caller went away (its future dropped, e.g. the HTTP
//!   client disconnected) is dropped before its next batch.
//!
//! ONNX Runtime's intra-op pool (`[documents] threads`) does the parallel work inside a batch.
//! Counters for `/metrics` live in [`STATS`] (one engine per process: the model is loaded once).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use sovereign_retrieval::embed::{BATCH_TOKENS, EmbedJob};
use sovereign_retrieval::{E5Model, EmbedError};
use tokio::sync::oneshot;

use super::RagError;

/// Who waits for a job, which decides when it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A caller is waiting on a request (a query, `/v1/embeddings`).
    Interactive,
    /// Ingestion: runs when no interactive work is waiting.
    Bulk,
}

/// What the engine did, for `/metrics`.
pub static STATS: EngineStats = EngineStats {
    windows_total: AtomicU64::new(0),
    jobs_completed_total: AtomicU64::new(0),
    jobs_cancelled_total: AtomicU64::new(0),
    interactive_queued: AtomicU64::new(0),
    bulk_queued: AtomicU64::new(0),
};

/// The engine's `/metrics` series.
pub fn metric_families() -> Vec<prometheus::proto::MetricFamily> {
    let s = &STATS;
    [
        (
            "sovereign_embed_windows_total",
            "counter",
            "Windows (up to 512 tokens each) the built-in embedding model has run",
            &s.windows_total,
        ),
        (
            "sovereign_embed_jobs_completed_total",
            "counter",
            "Embedding jobs (a query, an /v1/embeddings request, a document's chunks) answered",
            &s.jobs_completed_total,
        ),
        (
            "sovereign_embed_jobs_cancelled_total",
            "counter",
            "Embedding jobs dropped unfinished because their caller went away",
            &s.jobs_cancelled_total,
        ),
        (
            "sovereign_embed_interactive_jobs",
            "gauge",
            "Interactive embedding jobs (queries, /v1/embeddings) waiting or running",
            &s.interactive_queued,
        ),
        (
            "sovereign_embed_bulk_jobs",
            "gauge",
            "Bulk embedding jobs (ingestion) waiting or running",
            &s.bulk_queued,
        ),
    ]
    .iter()
    .map(crate::metrics::family)
    .collect()
}

/// The engine's counters.
#[derive(Debug)]
pub struct EngineStats {
    /// Windows (≤ 512 tokens each) run through the model.
    pub windows_total: AtomicU64,
    /// Jobs finished and answered.
    pub jobs_completed_total: AtomicU64,
    /// Jobs dropped unfinished because their caller went away.
    pub jobs_cancelled_total: AtomicU64,
    /// Jobs waiting or running, by class.
    pub interactive_queued: AtomicU64,
    pub bulk_queued: AtomicU64,
}

type Reply = oneshot::Sender<Result<Vec<Vec<f32>>, EmbedError>>;

struct Queued {
    job: EmbedJob,
    reply: Reply,
}

/// One class's jobs: per team in arrival order, teams in turn.
struct Lane<T> {
    teams: HashMap<String, VecDeque<T>>,
    turn: VecDeque<String>,
}

impl<T> Default for Lane<T> {
    fn default() -> Self {
        Lane {
            teams: HashMap::new(),
            turn: VecDeque::new(),
        }
    }
}

impl<T> Lane<T> {
    fn push(&mut self, team: &str, queued: T) {
        let jobs = self.teams.entry(team.to_owned()).or_default();
        if jobs.is_empty() {
            self.turn.push_back(team.to_owned());
        }
        jobs.push_back(queued);
    }

    /// The front job of the team whose turn it is, taken out with its team.
    fn take(&mut self) -> Option<(String, T)> {
        let team = self.turn.pop_front()?;
        let queued = self.teams.get_mut(&team)?.pop_front()?;
        Some((team, queued))
    }

    /// Puts an unfinished job back at its team's front, the team at the end of the turn.
    fn put_back(&mut self, team: String, queued: T) {
        let jobs = self.teams.entry(team.clone()).or_default();
        jobs.push_front(queued);
        self.turn.push_back(team);
    }

    /// After a job of `team` finished: the team keeps a turn if it has more jobs.
    fn finished(&mut self, team: String) {
        match self.teams.get(&team) {
            Some(jobs) if !jobs.is_empty() => self.turn.push_back(team),
            _ => {
                self.teams.remove(&team);
            }
        }
    }
}

#[derive(Default)]
struct Lanes {
    interactive: Lane<Queued>,
    bulk: Lane<Queued>,
    closed: bool,
}

struct Shared {
    lanes: Mutex<Lanes>,
    wake: Condvar,
    stats: &'static EngineStats,
}

/// The model and its scheduler. Dropping the last handle stops the engine thread.
pub struct Engine {
    model: Arc<E5Model>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Starts the engine thread, which lowers its priority to `nice` (Linux: per thread; 0 keeps
    /// the default), then runs `load` — so the threads ONNX Runtime's intra-op pool creates as the
    /// model loads inherit that priority — and then serves jobs. The request path's threads keep
    /// the default priority: on a saturated machine they run first, and the engine takes the CPU
    /// they leave (`[documents] engine_nice`; docs/DOCUMENTS.md, "The embedding engine").
    pub async fn start(
        nice: i32,
        load: impl FnOnce() -> Result<E5Model, EmbedError> + Send + 'static,
    ) -> Result<Engine, RagError> {
        let shared = Arc::new(Shared {
            lanes: Mutex::new(Lanes::default()),
            wake: Condvar::new(),
            stats: &STATS,
        });
        let s = Arc::clone(&shared);
        let (loaded, model) = oneshot::channel();
        std::thread::Builder::new()
            .name("sovereign-embed".into())
            .spawn(move || {
                lower_priority(nice);
                let m = match load() {
                    Ok(m) => Arc::new(m),
                    Err(e) => {
                        let _ = loaded.send(Err(e));
                        return;
                    }
                };
                if loaded.send(Ok(Arc::clone(&m))).is_ok() {
                    run(&m, &s);
                }
            })
            .map_err(|e| RagError::Worker(format!("starting the embedding engine: {e}")))?;
        let model = model
            .await
            .map_err(|_| RagError::Worker("the embedding engine stopped while loading".into()))??;
        Ok(Engine { model, shared })
    }

    pub fn model(&self) -> &Arc<E5Model> {
        &self.model
    }

    /// Tokenizes `texts` into a job (on the blocking pool: long inputs take milliseconds).
    pub async fn prepare(&self, texts: Vec<String>, is_query: bool) -> Result<EmbedJob, RagError> {
        let model = Arc::clone(&self.model);
        super::blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            Ok(model.job(&refs, is_query))
        })
        .await
    }

    /// Queues `job` for `team` in `class` and waits for its vectors. Dropping the returned future
    /// cancels the job's remaining windows.
    pub async fn run(
        &self,
        job: EmbedJob,
        team: &str,
        class: Class,
    ) -> Result<Vec<Vec<f32>>, RagError> {
        let (reply, answer) = oneshot::channel();
        {
            let mut lanes = lock(&self.shared.lanes);
            let lane = match class {
                Class::Interactive => &mut lanes.interactive,
                Class::Bulk => &mut lanes.bulk,
            };
            lane.push(team, Queued { job, reply });
            queued_gauge(self.shared.stats, class).fetch_add(1, Ordering::Relaxed);
        }
        self.shared.wake.notify_one();
        match answer.await {
            Ok(result) => Ok(result?),
            Err(_) => Err(RagError::Worker("the embedding engine stopped".into())),
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        lock(&self.shared.lanes).closed = true;
        self.shared.wake.notify_all();
    }
}

fn queued_gauge(stats: &EngineStats, class: Class) -> &AtomicU64 {
    match class {
        Class::Interactive => &stats.interactive_queued,
        Class::Bulk => &stats.bulk_queued,
    }
}

fn lock(lanes: &Mutex<Lanes>) -> std::sync::MutexGuard<'_, Lanes> {
    // Every change to the lanes is a whole push or pop: a panic cannot leave them half-changed.
    lanes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What became of a job after its turn.
enum Turn {
    /// More windows to run: back in its lane.
    Again(Queued),
    /// Answered, failed or dropped.
    Over,
}

/// Lowers the calling thread's priority to `nice` (threads it creates afterwards inherit it). An
/// unprivileged process can only lower it, and may be refused: the engine then runs at the
/// default priority, which is logged.
fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice) {
        tracing::warn!(error = %e, nice, "the embedding engine keeps the default priority");
    }
}

/// The engine thread: take the next job by class and team turn, run one batch, put it back.
fn run(model: &E5Model, shared: &Shared) {
    loop {
        let (class, team, queued) = {
            let mut lanes = lock(&shared.lanes);
            loop {
                if lanes.closed {
                    return;
                }
                if let Some((team, q)) = lanes.interactive.take() {
                    break (Class::Interactive, team, q);
                }
                if let Some((team, q)) = lanes.bulk.take() {
                    break (Class::Bulk, team, q);
                }
                lanes = shared
                    .wake
                    .wait(lanes)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        };
        let turn = one_turn(model, shared.stats, queued);
        let mut lanes = lock(&shared.lanes);
        let lane = match class {
            Class::Interactive => &mut lanes.interactive,
            Class::Bulk => &mut lanes.bulk,
        };
        match turn {
            Turn::Again(q) => lane.put_back(team, q),
            Turn::Over => {
                lane.finished(team);
                queued_gauge(shared.stats, class).fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// One batch of `q`'s windows, unless its caller is gone; answers it when it is done.
fn one_turn(model: &E5Model, stats: &EngineStats, mut q: Queued) -> Turn {
    if q.reply.is_closed() {
        // Nobody waits for it any more: the rest of its work is dropped.
        stats.jobs_cancelled_total.fetch_add(1, Ordering::Relaxed);
        return Turn::Over;
    }
    match model.step(&mut q.job, BATCH_TOKENS) {
        Ok(windows) => {
            stats
                .windows_total
                .fetch_add(windows as u64, Ordering::Relaxed);
            if !q.job.is_done() {
                return Turn::Again(q);
            }
            stats.jobs_completed_total.fetch_add(1, Ordering::Relaxed);
            // A caller gone at this very moment just misses its answer.
            let _ = q.reply.send(Ok(q.job.finish()));
        }
        Err(e) => {
            let _ = q.reply.send(Err(e));
        }
    }
    Turn::Over
}

#[cfg(test)]
mod tests {
    use super::Lane;

    /// Runs the lane as the engine thread does, each job needing `steps` turns; the order of turns.
    fn turns(lane: &mut Lane<(&'static str, u32)>) -> Vec<&'static str> {
        let mut order = Vec::new();
        while let Some((team, (name, left))) = lane.take() {
            order.push(name);
            if left > 1 {
                lane.put_back(team, (name, left - 1));
            } else {
                lane.finished(team);
            }
        }
        order
    }

    #[test]
    fn teams_take_turns_batch_by_batch_and_a_teams_own_jobs_run_in_order() {
        let mut lane = Lane::default();
        lane.push("big", ("big-1", 3));
        lane.push("big", ("big-2", 1));
        lane.push("small", ("small-1", 1));
        assert_eq!(
            turns(&mut lane),
            ["big-1", "small-1", "big-1", "big-1", "big-2"]
        );
        assert!(lane.teams.is_empty() && lane.turn.is_empty());
    }

    #[test]
    fn a_team_arriving_late_waits_one_turn_not_the_whole_job() {
        let mut lane = Lane::default();
        lane.push("a", ("a", 10));
        let (team, (name, left)) = lane.take().unwrap_or(("?".into(), ("?", 0)));
        lane.put_back(team, (name, left - 1));
        lane.push("b", ("b", 1));
        let order = turns(&mut lane);
        assert_eq!(order.iter().position(|n| *n == "b"), Some(1), "{order:?}");
    }
}

//! The ingestion queue's workers (issue 44; `docs/DOCUMENTS.md`, "Asynchronous ingestion"):
//! [`start`] puts back the jobs an earlier life of this replica was running, then runs
//! `[documents] concurrent_ingests` workers. A worker claims the next job (fair across teams:
//! `store::ingest_jobs`) under a lease, and runs it top to bottom in [`ingest`]: the upload's
//! bytes from the store, extracted and chunked, the chunks through the guardrail on behalf of
//! the uploader ([`Call::on_behalf`]), embedded a window at a time with the progress reported
//! (which renews the lease), then stored and indexed as the document the job names, the
//! embedding model's work in usage; the job ends `completed` or `failed` with the error the
//! synchronous upload would have answered, and a job this worker ended is announced
//! (`completion`: `request.completed`, the journal). A lease renewer keeps the claim (`[documents]
//! ingest_lease_ms`) while a long step runs; a job cancelled, detached from its vector store, or
//! taken over by another replica after the lease lapsed, stops at the next report and writes
//! nothing more. The queue's figures go to `/metrics` ([`measure`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Map, Value};

use super::completion::{self, Ended};
use super::record_usage;
use crate::access::Principal;
use crate::domain::Role;
use crate::pipeline::call::Call;
use crate::pipeline::guard;
use crate::rag::{Library, Upload};
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::store::ingest_jobs::{IngestJob, JobError, JobState, Progress};

/// How many times per lease (`[documents] ingest_lease_ms`: how long a claim holds without
/// news; a replica that dies mid-job loses it after this) the renewer reports while a long step
/// runs.
const RENEWALS_PER_LEASE: u32 = 6;
/// How often an idle worker looks for work (other replicas' uploads, lapsed leases).
const IDLE_POLL: Duration = Duration::from_millis(200);
/// Chunks embedded between two progress reports.
pub const WINDOW: usize = 8;

/// Starts the workers (none when the library is disabled or cannot embed: uploads answer 503).
/// The task runs until aborted (shutdown); a job it was running is resumed at the next start.
pub fn start(state: &AppState) -> Option<tokio::task::JoinHandle<()>> {
    let library = state.library()?.clone();
    library.readiness().ok()?;
    let replica = format!("{}#", state.config().sovereign_id);
    let owner = format!("{replica}{}", uuid::Uuid::now_v7().simple());
    let workers = state.config().documents.concurrent_ingests;
    let state = state.clone();
    Some(tokio::spawn(async move {
        match state.store().requeue_ingest(replica, owner.clone()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                jobs = n,
                "resuming the uploads this replica was ingesting when it stopped"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "requeueing this replica's unfinished uploads failed; they resume when their leases lapse")
            }
        }
        let mut set = tokio::task::JoinSet::new();
        set.spawn(measure(state.clone()));
        for _ in 0..workers {
            set.spawn(work(state.clone(), Arc::clone(&library), owner.clone()));
        }
        while set.join_next().await.is_some() {}
    }))
}

/// How often the queue's figures in `/metrics` are read from the store.
const MEASURE_EVERY: Duration = Duration::from_secs(2);

/// The queue's depth, oldest age and bytes in `/metrics`, every [`MEASURE_EVERY`].
async fn measure(state: AppState) {
    loop {
        match state.store().ingest_queue().await {
            Ok(q) => {
                let m = state.metrics();
                let age = q
                    .oldest
                    .map_or(0, |t| (state.access().now_ms() - t).max(0) / 1000);
                m.ingest_queued.store(q.queued, Ordering::Relaxed);
                m.ingest_running.store(q.running, Ordering::Relaxed);
                m.ingest_oldest_age_seconds
                    .store(u64::try_from(age).unwrap_or(0), Ordering::Relaxed);
                m.ingest_queued_bytes.store(q.bytes, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "reading the ingestion queue's figures failed"),
        }
        tokio::time::sleep(MEASURE_EVERY).await;
    }
}

fn lease_until(state: &AppState) -> i64 {
    let lease = state.config().documents.ingest_lease;
    state.access().now_ms() + i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 2)
}

async fn work(state: AppState, library: Arc<Library>, owner: String) {
    loop {
        match state
            .store()
            .claim_ingest(owner.clone(), lease_until(&state))
            .await
        {
            Ok(Some(job)) => run(&state, &library, &owner, job).await,
            Ok(None) => tokio::time::sleep(IDLE_POLL).await,
            Err(e) => {
                tracing::warn!(error = %e, "claiming an upload to ingest failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Why a job stopped before it completed.
enum Stop {
    /// Cancelled, or no longer this replica's: nothing more is written.
    Lost,
    /// Failed with the error a synchronous upload would have answered.
    Failed(ApiError),
}

impl From<ApiError> for Stop {
    fn from(e: ApiError) -> Stop {
        Stop::Failed(e)
    }
}

impl From<crate::rag::RagError> for Stop {
    fn from(e: crate::rag::RagError) -> Stop {
        Stop::Failed(e.into())
    }
}

/// The claim on one job: its progress as last reported, and whether it was lost.
struct Lease {
    state: AppState,
    id: String,
    owner: String,
    progress: Mutex<Progress>,
    lost: AtomicBool,
}

impl Lease {
    /// Reports `progress` (renewing the lease); `Stop::Lost` when the job is no longer ours.
    async fn report(&self, progress: Progress) -> Result<(), Stop> {
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = progress;
        self.renew().await;
        match self.lost.load(Ordering::Relaxed) {
            true => Err(Stop::Lost),
            false => Ok(()),
        }
    }

    async fn renew(&self) {
        let progress = *self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        let renewed = self
            .state
            .store()
            .renew_ingest(
                self.id.clone(),
                self.owner.clone(),
                lease_until(&self.state),
                progress,
            )
            .await;
        match renewed {
            Ok(true) => {}
            Ok(false) => self.lost.store(true, Ordering::Relaxed),
            // The store is away: keep working; the lease may lapse and another take over.
            Err(e) => {
                tracing::warn!(error = %e, job = %self.id, "renewing an ingestion lease failed")
            }
        }
    }
}

async fn run(state: &AppState, library: &Library, owner: &str, job: IngestJob) {
    let lease = Arc::new(Lease {
        state: state.clone(),
        id: job.id.clone(),
        owner: owner.to_string(),
        progress: Mutex::new(job.progress),
        lost: AtomicBool::new(false),
    });
    let renewer = tokio::spawn({
        let lease = Arc::clone(&lease);
        let every = state.config().documents.ingest_lease / RENEWALS_PER_LEASE;
        async move {
            loop {
                tokio::time::sleep(every).await;
                lease.renew().await;
            }
        }
    });
    let outcome = ingest(state, library, &job, &lease).await;
    renewer.abort();
    let (mut chunks, mut tokens) = (None, 0);
    let error = match outcome {
        Ok((n, t)) => {
            (chunks, tokens) = (Some(n), t);
            None
        }
        Err(Stop::Lost) => return,
        Err(Stop::Failed(e)) => Some(JobError {
            status: e.status.as_u16(),
            kind: e.kind.to_string(),
            code: e.code.as_deref().unwrap_or(e.kind).to_string(),
            message: e.message,
        }),
    };
    let failed = error.is_some();
    let ended = match failed {
        true => &state.metrics().ingest_failed_total,
        false => &state.metrics().ingest_completed_total,
    };
    ended.fetch_add(1, Ordering::Relaxed);
    let store = state.store();
    match store
        .finish_ingest(job.id.clone(), owner.to_string(), error.clone())
        .await
    {
        // Ended by this worker: the team's webhooks and the journal hear of it.
        Ok(true) => {
            let ended = Ended {
                job: &job,
                error: error.as_ref(),
                chunks,
                model: library.model_id(),
                tokens,
            };
            completion::announce(state, ended).await;
        }
        Ok(false) if !failed => {
            // Cancelled (or its vector-store file detached) while it was being stored: the
            // cancellation wins.
            let now = store.ingest_job(job.team_id.clone(), job.id.clone()).await;
            if let Ok(
                None
                | Some(IngestJob {
                    state: JobState::Cancelled,
                    ..
                }),
            ) = now
                && let Err(e) = library.delete(&job.team_id.0, &job.id).await
            {
                tracing::warn!(error = %e, document = %job.id, "removing a cancelled upload's document failed");
            }
        }
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(error = %e, job = %job.id, "ending an ingestion job failed; it is retried when its lease lapses")
        }
    }
}

/// The uploader of a queued document as the worker acts for it later (the guardrail, usage): its
/// key and team as the upload recorded them, a member's role, no limits (the upload was admitted
/// when it was made; the worker calls no model).
fn uploader(key_id: &str, team_id: &str) -> Principal {
    Principal::bare(key_id, team_id, Role::Member)
}

/// One job top to bottom: bytes, extraction, guardrail, windows embedded, stored and indexed;
/// its chunks and the model's tokens (0 when the same bytes were stored meanwhile).
async fn ingest(
    state: &AppState,
    library: &Library,
    job: &IngestJob,
    lease: &Lease,
) -> Result<(u32, u64), Stop> {
    let Some(data) = state
        .store()
        .ingest_data(job.id.clone())
        .await
        .map_err(ApiError::from)?
    else {
        return Err(Stop::Lost);
    };
    let upload = Upload {
        team_id: job.team_id.0.clone(),
        collection: job.collection.clone(),
        filename: job.filename.clone(),
        content_type: job.content_type.clone(),
        metadata: serde_json::from_str::<Map<String, Value>>(&job.metadata).unwrap_or_default(),
        file_id: job.file_id.clone(),
        bytes: Bytes::from(data),
    };
    let call = Call::on_behalf(
        state.clone(),
        &job.request_id,
        uploader(&job.key_id, &job.team_id.0),
        job.actor.clone(),
    );

    // Text with provenance, extracted in a child process, then chunked.
    let mut extracted = library.extract(&upload).await?;
    let chunks = extracted.texts.len();
    let mut progress = Progress {
        pages: extracted.pages,
        pages_done: 0,
        chunks: Some(u32::try_from(chunks).unwrap_or(u32::MAX)),
        chunks_done: 0,
    };
    lease.report(progress).await?;
    // The guardrail on the chunks: refused (nothing stored) or redacted.
    guard::texts(&call, &mut extracted.texts).await?;

    // Embedded a window at a time, the progress reported after each.
    let mut vectors = Vec::with_capacity(chunks);
    for window in extracted.texts.chunks(WINDOW) {
        vectors.extend(library.passages(&upload, window).await?);
        state
            .metrics()
            .ingest_chunks_total
            .fetch_add(window.len() as u64, Ordering::Relaxed);
        let done = vectors.len();
        progress.chunks_done = u32::try_from(done).unwrap_or(u32::MAX);
        progress.pages_done = match done {
            n if n == chunks => progress.pages.unwrap_or(0),
            n => extracted
                .places
                .get(n)
                .and_then(|p| p.0)
                .map_or(0, |page| page.saturating_sub(1)),
        };
        lease.report(progress).await?;
    }

    // Stored and indexed as the document the job names; the model's work in usage.
    let tokens = extracted.tokens;
    let (_, created) = library
        .keep(
            job.id.clone(),
            upload,
            job.sha256.clone(),
            extracted,
            vectors,
        )
        .await?;
    if created {
        record_usage(&call, library.model_id(), tokens).await;
    }
    Ok((
        u32::try_from(chunks).unwrap_or(u32::MAX),
        if created { tokens } else { 0 },
    ))
}

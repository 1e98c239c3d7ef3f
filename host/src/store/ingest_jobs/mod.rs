//! The document ingestion queue (issue 44): one durable job per uploaded document, holding the
//! upload's bytes until it is ingested, its state (`queued` → `running` → `completed`, `failed`
//! or `cancelled`) and its progress. A worker claims a job as a lease (its replica and an
//! expiry, renewed with each progress report): a job whose worker died is claimed again once
//! its lease expires, on this replica after a restart or on another that shares the store.
//! Claims are fair across teams: the team served least recently goes first, its oldest job
//! first, so one team's long queue never holds back another team's small upload. Enqueueing
//! checks the per-team and global limits on queued bytes and pages in the same transaction.
//! [`sql`] holds the steps for both back ends (PostgreSQL claims with `FOR UPDATE SKIP
//! LOCKED`); the trait is implemented once by [`impl_ingest_job_store!`]. Format and
//! guarantees in `docs/DOCUMENTS.md`, "Asynchronous ingestion".

pub(crate) mod files;
pub(crate) mod schema;
pub(crate) mod sql;

use futures_util::future::BoxFuture;

use super::{StoreResult, TeamId, UnixMillis};

/// A claimed job whose lease expired this many times is failed rather than claimed again: a
/// document that kills its worker does not kill every replica in turn.
pub const MAX_ATTEMPTS: u32 = 3;

/// An upload to ingest: the document it becomes (its id is the job's) and who asked.
#[derive(Debug, Clone)]
pub struct NewIngestJob {
    /// `doc_` + UUIDv7: the document's id once ingested.
    pub id: String,
    pub team_id: TeamId,
    pub collection: String,
    pub filename: String,
    pub content_type: Option<String>,
    /// A JSON object, as text.
    pub metadata: String,
    /// The `/v1/files` file it comes from (attached to a vector store), if any.
    pub file_id: Option<String>,
    /// Hex SHA-256 of `data`.
    pub sha256: String,
    /// The key (or certificate identity) that uploaded it, its actor and the request id: what
    /// usage and the completion event name.
    pub key_id: String,
    pub actor: String,
    pub request_id: String,
    /// The uploaded bytes, kept until the job ends.
    pub data: Vec<u8>,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<JobState> {
        Some(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "completed" => JobState::Completed,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }

    /// Whether the job has ended (nothing changes it any more).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Cancelled
        )
    }
}

/// How far a running job got. Totals are `None` until known (after extraction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub pages: Option<u32>,
    pub pages_done: u32,
    pub chunks: Option<u32>,
    pub chunks_done: u32,
}

/// Why a job failed, in the OpenAI error shape's terms: the HTTP status a synchronous upload
/// would have answered, the error's `type`, `code` and `message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    pub status: u16,
    pub kind: String,
    pub code: String,
    pub message: String,
}

/// A stored job, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestJob {
    pub id: String,
    pub team_id: TeamId,
    pub collection: String,
    pub filename: String,
    pub content_type: Option<String>,
    pub metadata: String,
    pub file_id: Option<String>,
    pub sha256: String,
    pub key_id: String,
    pub actor: String,
    pub request_id: String,
    pub bytes: u64,
    pub state: JobState,
    /// The replica holding the lease, and until when (running jobs).
    pub owner: Option<String>,
    pub lease_until: Option<UnixMillis>,
    /// How many times a worker claimed it.
    pub attempts: u32,
    pub progress: Progress,
    pub error: Option<JobError>,
    pub created_at: UnixMillis,
    pub finished_at: Option<UnixMillis>,
}

/// Limits on what may wait in the queue (unfinished jobs), per team and in all; `u64::MAX` is
/// no limit. Pages count once a job's extraction has counted them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    pub team_bytes: u64,
    pub team_pages: u64,
    pub total_bytes: u64,
    pub total_pages: u64,
}

impl QueueLimits {
    pub const NONE: QueueLimits = QueueLimits {
        team_bytes: u64::MAX,
        team_pages: u64::MAX,
        total_bytes: u64::MAX,
        total_pages: u64::MAX,
    };
}

/// Which limit refused a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueFull {
    TeamBytes,
    TeamPages,
    TotalBytes,
    TotalPages,
}

/// What [`IngestJobStore::enqueue_ingest`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// Stored, `queued`.
    New(IngestJob),
    /// An unfinished job of the team already ingests these bytes into this collection (from
    /// this file): nothing was written.
    Existing(IngestJob),
    /// A limit would be exceeded: nothing was written.
    Full(QueueFull),
}

/// A vector-store file batch: the files one call attached to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBatch {
    /// `vsfb_` + UUIDv7.
    pub id: String,
    pub team_id: TeamId,
    pub vector_store_id: String,
    pub file_ids: Vec<String>,
    pub cancelled: bool,
    pub created_at: UnixMillis,
}

/// What waits in the queue now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub queued: u64,
    pub running: u64,
    /// Bytes and known pages of unfinished jobs.
    pub bytes: u64,
    pub pages: u64,
    /// When the oldest unfinished job was enqueued.
    pub oldest: Option<UnixMillis>,
}

/// What a cancellation did: the job as it is afterwards, and whether this call ended it (a job
/// that had already ended, or that another call cancelled first, is answered unchanged).
#[derive(Debug, Clone)]
pub struct Cancellation {
    pub job: IngestJob,
    pub ended_now: bool,
}

/// The ingestion queue. Every method is safe to call concurrently, from any replica.
pub trait IngestJobStore: Send + Sync {
    /// Stores a `queued` job with its bytes, unless the team already has an unfinished job for
    /// the same bytes, collection and file, or a limit would be exceeded.
    fn enqueue_ingest(
        &self,
        job: NewIngestJob,
        limits: QueueLimits,
    ) -> BoxFuture<'_, StoreResult<Enqueued>>;
    /// The team's job `id` (another team's is `None`).
    fn ingest_job(&self, team: TeamId, id: String)
    -> BoxFuture<'_, StoreResult<Option<IngestJob>>>;
    /// A job's uploaded bytes (`None` once it has ended).
    fn ingest_data(&self, id: String) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>>;
    /// Claims the next job for `owner` until `until`: of the teams with a job waiting (queued,
    /// or running under an expired lease), the one served least recently, its oldest job. A job
    /// whose lease expired [`MAX_ATTEMPTS`] times is failed instead. `None`: nothing waits.
    fn claim_ingest(
        &self,
        owner: String,
        until: UnixMillis,
    ) -> BoxFuture<'_, StoreResult<Option<IngestJob>>>;
    /// Records progress and renews the lease. `false`: the job is no longer `owner`'s to run
    /// (cancelled, or claimed by another after the lease expired): stop working on it.
    fn renew_ingest(
        &self,
        id: String,
        owner: String,
        until: UnixMillis,
        progress: Progress,
    ) -> BoxFuture<'_, StoreResult<bool>>;
    /// Ends `owner`'s running job: `completed` (no error) or `failed`; its bytes are dropped.
    /// `false`: it was no longer `owner`'s (nothing written).
    fn finish_ingest(
        &self,
        id: String,
        owner: String,
        error: Option<JobError>,
    ) -> BoxFuture<'_, StoreResult<bool>>;
    /// Cancels the team's unfinished job (its bytes dropped); the job as it is afterwards
    /// (unchanged when it had already ended), `None` when the team has no such job.
    fn cancel_ingest(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<Cancellation>>>;
    /// What waits in the queue now.
    fn ingest_queue(&self) -> BoxFuture<'_, StoreResult<QueueStats>>;
    /// At start: the running jobs whose lease names an earlier life of this replica (an owner
    /// `<replica>#…` other than `current`) go back to the queue at once, rather than waiting
    /// for their leases to expire; how many.
    fn requeue_ingest(&self, replica: String, current: String) -> BoxFuture<'_, StoreResult<u64>>;
    /// The team's jobs for files of `collection` (a vector store), newest first.
    fn collection_ingests(
        &self,
        team: TeamId,
        collection: String,
    ) -> BoxFuture<'_, StoreResult<Vec<IngestJob>>>;
    /// The team's jobs for `file_id` in every vector store, newest first (a deleted file's).
    fn file_ingests(
        &self,
        team: TeamId,
        file_id: String,
    ) -> BoxFuture<'_, StoreResult<Vec<IngestJob>>>;
    /// Deletes the team's jobs for `file_id` in `collection` (all its files' when `None`): a
    /// detached file, a deleted store. A worker running one stops at its next report.
    fn forget_ingests(
        &self,
        team: TeamId,
        collection: String,
        file_id: Option<String>,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// Stores a file batch (its `created_at` set now).
    fn create_file_batch(&self, batch: FileBatch) -> BoxFuture<'_, StoreResult<FileBatch>>;
    /// The team's file batch `id`.
    fn file_batch(&self, team: TeamId, id: String)
    -> BoxFuture<'_, StoreResult<Option<FileBatch>>>;
    /// Marks the team's batch cancelled (its files' jobs are cancelled by the caller).
    fn cancel_file_batch(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>>;
}

/// [`IngestJobStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_ingest_job_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::ingest_jobs::{
                Cancellation, Enqueued, FileBatch, IngestJob, IngestJobStore, JobError,
                NewIngestJob, Progress, QueueLimits, QueueStats, files, sql as steps,
            };
            use $crate::store::sql::Conn;
            use $crate::store::{StoreResult, TeamId, UnixMillis};

            impl IngestJobStore for $store {
                fn enqueue_ingest(
                    &self,
                    job: NewIngestJob,
                    limits: QueueLimits,
                ) -> BoxFuture<'_, StoreResult<Enqueued>> {
                    $run!(self, |c, now| async move {
                        steps::enqueue(c.begin().await?, now, job, limits).await
                    })
                }

                fn ingest_job(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<IngestJob>>> {
                    $run!(self, |c, _| steps::get(&c, &team, &id))
                }

                fn ingest_data(&self, id: String) -> BoxFuture<'_, StoreResult<Option<Vec<u8>>>> {
                    $run!(self, |c, _| steps::data(&c, &id))
                }

                fn claim_ingest(
                    &self,
                    owner: String,
                    until: UnixMillis,
                ) -> BoxFuture<'_, StoreResult<Option<IngestJob>>> {
                    $run!(self, |c, now| async move {
                        steps::claim(c.begin().await?, now, &owner, until).await
                    })
                }

                fn renew_ingest(
                    &self,
                    id: String,
                    owner: String,
                    until: UnixMillis,
                    progress: Progress,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::renew(&c, &id, &owner, until, progress))
                }

                fn finish_ingest(
                    &self,
                    id: String,
                    owner: String,
                    error: Option<JobError>,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, now| steps::finish(&c, now, &id, &owner, error))
                }

                fn cancel_ingest(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<Cancellation>>> {
                    $run!(self, |c, now| async move {
                        steps::cancel(c.begin().await?, now, &team, &id).await
                    })
                }

                fn ingest_queue(&self) -> BoxFuture<'_, StoreResult<QueueStats>> {
                    $run!(self, |c, _| steps::stats(&c))
                }

                fn requeue_ingest(
                    &self,
                    replica: String,
                    current: String,
                ) -> BoxFuture<'_, StoreResult<u64>> {
                    $run!(self, |c, _| steps::requeue(&c, &replica, &current))
                }

                fn collection_ingests(
                    &self,
                    team: TeamId,
                    collection: String,
                ) -> BoxFuture<'_, StoreResult<Vec<IngestJob>>> {
                    $run!(self, |c, _| files::of_collection(&c, &team, &collection))
                }

                fn file_ingests(
                    &self,
                    team: TeamId,
                    file_id: String,
                ) -> BoxFuture<'_, StoreResult<Vec<IngestJob>>> {
                    $run!(self, |c, _| files::of_file(&c, &team, &file_id))
                }

                fn forget_ingests(
                    &self,
                    team: TeamId,
                    collection: String,
                    file_id: Option<String>,
                ) -> BoxFuture<'_, StoreResult<u64>> {
                    $run!(self, |c, _| files::forget(
                        &c,
                        &team,
                        &collection,
                        file_id.as_deref()
                    ))
                }

                fn create_file_batch(
                    &self,
                    batch: FileBatch,
                ) -> BoxFuture<'_, StoreResult<FileBatch>> {
                    $run!(self, |c, now| files::create_batch(&c, now, &batch))
                }

                fn file_batch(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<FileBatch>>> {
                    $run!(self, |c, _| files::batch(&c, &team, &id))
                }

                fn cancel_file_batch(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| files::cancel_batch(&c, &team, &id))
                }
            }
        };
    };
}
pub(crate) use impl_ingest_job_store;

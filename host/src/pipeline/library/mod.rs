//! The document library on the request path: [`library`] (the gateway's library, or 404 when
//! `[documents] enabled = false`), [`ingest`] (an upload into the library with the journal and
//! guardrail phases around `rag::Library::ingest`, its usage recorded), [`enqueue`] (an upload
//! kept in the ingestion queue for `ingestion`'s workers, answered at once) and
//! [`settle`] (waiting, bounded, for a queued upload to end), [`record_usage`] (the embedding
//! model's work for this call, in the journal entry, in usage and in the tokens per day) and
//! [`review`] (the retrieval policy on a search's ranked citations, before anything is returned,
//! cited or sent to a model). The documents, files, vector-store, retrieval and built-in
//! embeddings endpoints share them.

pub mod completion;
pub mod ingestion;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{Map, Value};

use super::call::Call;
use super::guard;
use crate::access::{Credential, Principal};
use crate::policy::PolicyError;
use crate::policy::retrieval::{Caller, Chunk};
use crate::rag::{Library, Retrieved, Upload, usage};
use crate::server::error::ApiError;
use crate::store::documents::DocumentRecord;
use crate::store::ingest_jobs::{
    Enqueued, IngestJob, JobError, NewIngestJob, QueueFull, QueueLimits,
};

/// The longest a client may ask an upload to wait for its ingestion (`?wait=true`).
pub const MAX_WAIT: Duration = Duration::from_secs(300);
/// How often a waiting upload looks at its job.
const WAIT_POLL: Duration = Duration::from_millis(100);

/// The library, or 404 when `[documents] enabled = false`.
pub fn library(call: &Call) -> Result<Arc<Library>, ApiError> {
    call.app.library().cloned().ok_or_else(|| {
        ApiError::not_found(
            "Documents and retrieval are disabled on this gateway ([documents] enabled = false).",
        )
    })
}

/// An upload into the library, top to bottom; `true` when it was stored now, `false` when the
/// team's collection already held these bytes. How `/v1/documents/upload` stores a document and
/// how a file attached to a vector store is ingested.
pub async fn ingest(
    call: &mut Call,
    library: &Library,
    upload: Upload,
) -> Result<(DocumentRecord, bool), ApiError> {
    // The journal records the file's hash, never its text.
    let sha256 = upload.sha256();
    call.identify(&Map::new(), None);
    call.audit.content(&sha256);

    // Re-upload, extraction, the guardrail on the chunks (block: nothing stored; redact: what
    // is stored), embedded, stored, indexed.
    let call = &*call;
    let ingested = library
        .ingest(upload, sha256, async |texts: &mut [String]| {
            guard::texts(call, texts).await.map(drop)
        })
        .await?;

    // The model's work counted in usage.
    if ingested.created {
        answer_usage(call, library.model_id(), ingested.tokens);
    }
    Ok((ingested.record, ingested.created))
}

/// What an upload came to on the request path.
#[derive(Debug)]
pub enum Accepted {
    /// The team's collection already holds these bytes: the stored document.
    Stored(Box<DocumentRecord>),
    /// Queued now (`true`), or already queued (`false`: the same bytes uploaded again while
    /// they wait).
    Queued(Box<IngestJob>, bool),
}

/// An upload kept durably in the ingestion queue, answered at once: the journal gets the file's
/// hash (never its text); a re-upload of stored bytes is the stored document; a full queue is
/// 429. Extraction, the guardrail and embedding run in [`ingestion`].
pub async fn enqueue(
    call: &mut Call,
    library: &Library,
    upload: Upload,
) -> Result<Accepted, ApiError> {
    let sha256 = upload.sha256();
    call.identify(&Map::new(), None);
    call.audit.content(&sha256);
    if let Some(record) = library.existing(&upload, &sha256).await? {
        return Ok(Accepted::Stored(Box::new(record)));
    }
    let job = NewIngestJob {
        id: format!("doc_{}", uuid::Uuid::now_v7().simple()),
        team_id: crate::store::TeamId(upload.team_id),
        collection: upload.collection,
        filename: upload.filename,
        content_type: upload.content_type,
        metadata: Value::Object(upload.metadata).to_string(),
        file_id: upload.file_id,
        sha256,
        key_id: call.principal.key_id.clone(),
        actor: call.actor.clone(),
        request_id: call.ctx.id.to_string(),
        data: upload.bytes.to_vec(),
    };
    match call
        .app
        .store()
        .enqueue_ingest(job, queue_limits(&call.app.config().documents))
        .await?
    {
        Enqueued::New(job) => Ok(Accepted::Queued(Box::new(job), true)),
        Enqueued::Existing(job) => Ok(Accepted::Queued(Box::new(job), false)),
        Enqueued::Full(full) => Err(queue_full(full)),
    }
}

/// The ingestion queue's limits as `[documents] queue_*` sets them.
fn queue_limits(d: &crate::config::DocumentsConfig) -> QueueLimits {
    QueueLimits {
        team_bytes: d.queue_team_bytes,
        team_pages: d.queue_team_pages,
        total_bytes: d.queue_bytes,
        total_pages: d.queue_pages,
    }
}

/// 429 naming the limit that refused an upload.
fn queue_full(full: QueueFull) -> ApiError {
    let which = match full {
        QueueFull::TeamBytes => "your team's queued bytes",
        QueueFull::TeamPages => "your team's queued pages",
        QueueFull::TotalBytes => "the gateway's queued bytes",
        QueueFull::TotalPages => "the gateway's queued pages",
    };
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limit_exceeded",
        format!(
            "The ingestion queue is full ({which} are at their limit): retry once earlier uploads \
             have been ingested."
        ),
    )
    .with_code("ingestion_queue_full")
}

/// Waits up to `limit` (at most [`MAX_WAIT`]) for the team's queued upload to end; the job as
/// it is then (still unfinished when the time ran out).
pub async fn settle(call: &Call, job: IngestJob, limit: Duration) -> Result<IngestJob, ApiError> {
    let deadline = Instant::now() + limit.min(MAX_WAIT);
    let mut job = job;
    while !job.state.is_final() && Instant::now() < deadline {
        tokio::time::sleep(WAIT_POLL).await;
        match call
            .app
            .store()
            .ingest_job(job.team_id.clone(), job.id.clone())
            .await?
        {
            Some(now) => job = now,
            // The team was deleted meanwhile.
            None => return Err(ApiError::not_found("The upload no longer exists.")),
        }
    }
    Ok(job)
}

/// The team's upload `id` as its ingestion job shows it (`None`: no such job of the team).
pub async fn job(call: &Call, id: &str) -> Result<Option<IngestJob>, ApiError> {
    let team = crate::store::TeamId(call.principal.team_id.clone());
    Ok(call.app.store().ingest_job(team, id.to_string()).await?)
}

/// Cancels the team's unfinished upload `id` (a document's or a vector-store file's); its job as
/// it is afterwards. The call that ends the job announces it (`request.completed` with status
/// `cancelled`, and the completion's journal entry): whoever waits for the upload hears it end.
pub async fn cancel(call: &Call, id: &str) -> Result<Option<IngestJob>, ApiError> {
    let team = crate::store::TeamId(call.principal.team_id.clone());
    let Some(cancelled) = call.app.store().cancel_ingest(team, id.to_string()).await? else {
        return Ok(None);
    };
    if cancelled.ended_now {
        let model = call.app.library().map_or("", |l| l.model_id());
        let ended = completion::Ended {
            job: &cancelled.job,
            error: None,
            chunks: None,
            model,
            tokens: 0,
        };
        completion::announce(&call.app, ended).await;
    }
    Ok(Some(cancelled.job))
}

/// Drops the team's attachments of `file_id` to any vector store (the file is being deleted): an
/// unfinished one is cancelled first (announced, and a running worker stops at its next report),
/// then every job of the file is forgotten, so none completes into a document of a deleted file.
pub async fn forget_file(call: &Call, file_id: &str) -> Result<(), ApiError> {
    let team = crate::store::TeamId(call.principal.team_id.clone());
    let jobs = call.app.vector_store_jobs();
    let mut stores = Vec::new();
    for job in jobs.of_file(team.clone(), file_id.to_string()).await? {
        if !job.state.is_final() {
            cancel(call, &job.id).await?;
        }
        if !stores.contains(&job.collection) {
            stores.push(job.collection);
        }
    }
    for store in stores {
        jobs.forget(team.clone(), store, Some(file_id.to_string()))
            .await?;
    }
    Ok(())
}

/// A failed job's error as the synchronous upload would have answered it.
pub fn job_error(e: &JobError) -> ApiError {
    let kind = match e.kind.as_str() {
        "guardrail_violation" => "guardrail_violation",
        "server_error" => "server_error",
        "rate_limit_exceeded" => "rate_limit_exceeded",
        _ => "invalid_request_error",
    };
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
    ApiError::new(status, kind, e.message.clone()).with_code(e.code.clone())
}

/// The embedding model's work for the library, in the journal entry, in usage (no spend: the
/// built-in model runs on the gateway's own CPU, and an upstream embedding model's cost is not
/// charged to budgets) and in the key's and team's tokens per day; the usage row committed before
/// this returns (an ingestion job's work, which no answer waits on).
pub async fn record_usage(call: &Call, model: &str, tokens: u64) {
    count_usage(call, model, tokens);
    usage::record(call.app.store().as_ref(), work(call, model, tokens)).await;
}

/// [`record_usage`] on a request's path: the usage row is durable when the answer's charge
/// would be (`pipeline::spend::ride_answer`) — carried by the request's journal entry when
/// charges ride the journal's fsync (a zero-spend charge), else committed while the journal
/// layer waits beside the entry's append — not a commit and an fsync of its own before the
/// answer.
pub fn answer_usage(call: &Call, model: &str, tokens: u64) {
    count_usage(call, model, tokens);
    crate::pipeline::spend::ride_answer(call, usage::row(work(call, model, tokens)));
}

/// The work in the journal entry and in the key's and team's tokens per day.
fn count_usage(call: &Call, model: &str, tokens: u64) {
    call.audit.local_model(model, tokens);
    // The model's tokens count against the key's and team's tokens per day, as chat's do (and as
    // the usage rows are counted at start).
    call.app.access().quota.add(
        &crate::store::KeyId(call.principal.key_id.clone()),
        &crate::store::TeamId(call.principal.team_id.clone()),
        tokens,
        crate::store::Clock::now_ms(&crate::store::SystemClock),
    );
}

fn work<'a>(call: &'a Call, model: &'a str, tokens: u64) -> usage::Work<'a> {
    usage::Work {
        team_id: &call.principal.team_id,
        key_id: &call.principal.key_id,
        actor: &call.actor,
        model,
        tokens,
        request_id: call.ctx.id.to_string(),
    }
}

/// The caller as a policy sees it: team, key (or certificate identity) id, role, and the
/// certificate identity's name when it authenticated with one.
pub fn caller(principal: &Principal) -> Caller {
    Caller {
        team_id: principal.team_id.clone(),
        key_id: principal.key_id.clone(),
        role: principal.role.as_str().to_string(),
        identity: (principal.credential == Credential::Certificate)
            .then(|| principal.key_name.clone()),
    }
}

/// The retrieval policy on a search's citations (ranked, joined with their documents): the ones
/// it leaves out are dropped here, so they are never returned, cited or given to a model; the
/// rest take the order it gave. The journal records how many it removed. A policy that fails
/// refuses the query (fail-closed: a filter that could not run never lets everything through).
/// `true` when the policy changed the ranking's order (so a caller that re-sorts must not).
pub async fn review(call: &Call, query: &str, retrieved: &mut Retrieved) -> Result<bool, ApiError> {
    let active = call.app.retrieval_policies().active();
    let chunks: Vec<Chunk> = retrieved
        .citations
        .iter()
        .map(|c| Chunk {
            document_id: c.document_id.clone(),
            filename: c.filename.clone(),
            chunk_id: c.chunk_id,
            score: c.score,
            confidence: c.confidence,
            metadata: serde_json::Value::Object(c.metadata.clone()).to_string(),
            text: c.text.clone(),
        })
        .collect();
    let n = chunks.len();
    let selection = active
        .policy
        .review(&caller(&call.principal), query, &chunks)
        .await
        .map_err(|e| {
            tracing::error!(request_id = %call.ctx.id, error = %e, "retrieval policy failed; refusing the query");
            match e {
                PolicyError::Rejected {
                    status,
                    code,
                    message,
                    ..
                } if (400..500).contains(&status) => ApiError::new(
                    http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::FORBIDDEN),
                    "permission_error",
                    message,
                )
                .with_code(code),
                _ => ApiError::new(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    "server_error",
                    "The retrieval policy could not review this query, so nothing was returned.",
                )
                .with_code("retrieval_policy_unavailable"),
            }
        })?;
    let removed = selection.removed(n);
    call.audit
        .retrieval_filtered(u64::try_from(removed).unwrap_or(u64::MAX));
    if removed > 0 {
        // The query's confidence must not tell of what was removed: it becomes that of the best
        // citation left (0 when none is).
        retrieved.confidence = selection
            .keep
            .iter()
            .filter_map(|&i| retrieved.citations.get(i))
            .map(|c| c.confidence)
            .fold(0.0, f64::max);
        tracing::info!(request_id = %call.ctx.id, removed, rule = selection.rule, "retrieval policy filtered chunks");
    }
    let reordered = !selection.keep.windows(2).all(|w| w[0] < w[1]);
    if !selection.is_identity(n) {
        let mut slots: Vec<Option<crate::rag::Citation>> = std::mem::take(&mut retrieved.citations)
            .into_iter()
            .map(Some)
            .collect();
        retrieved.citations = selection
            .keep
            .iter()
            .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
            .collect();
    }
    Ok(reordered)
}

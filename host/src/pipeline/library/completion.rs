//! A queued upload's end as the world hears of it (issue 44): `request.completed` to the team's
//! webhooks (a long-running request — the upload — has finished, failed or been cancelled: the
//! document's id, status, chunks and `last_error`) and a journal entry for the completion, under
//! the upload's request id, beside the upload's own entry (`documents.upload`,
//! `vector_stores.files.create`, …). docs/DOCUMENTS.md, "Asynchronous ingestion"; docs/WEBHOOKS.md.

use std::time::SystemTime;

use serde_json::{Value, json};

use crate::events::Event;
use crate::journal::{EntryDraft, Status};
use crate::state::AppState;
use crate::store::ingest_jobs::{IngestJob, JobError, JobState};

/// The journal action of a document's completion (a vector store's file: `vector_stores.files.ingest`).
pub const DOCUMENT_ACTION: &str = "documents.ingest";
pub const FILE_ACTION: &str = "vector_stores.files.ingest";

/// How a job ended, as the event and the entry tell it.
pub struct Ended<'a> {
    pub job: &'a IngestJob,
    /// `None`: completed.
    pub error: Option<&'a JobError>,
    pub chunks: Option<u32>,
    /// The embedding model and its tokens (completed jobs).
    pub model: &'a str,
    pub tokens: u64,
}

impl Ended<'_> {
    fn status(&self) -> &'static str {
        match self.error {
            None if self.cancelled() => "cancelled",
            None => "completed",
            Some(_) => "failed",
        }
    }

    fn cancelled(&self) -> bool {
        self.job.state == JobState::Cancelled
    }

    /// The event's `details`: what a receiver needs to fetch the document or report the error.
    pub fn details(&self, now_ms: i64) -> Value {
        let job = self.job;
        json!({
            "object": if job.file_id.is_some() { "vector_store.file" } else { "document" },
            "document_id": job.id,
            "file_id": job.file_id,
            "collection": job.collection,
            "status": self.status(),
            "chunks": self.chunks,
            "last_error": self.error.map(|e| json!({
                "type": e.kind, "code": e.code, "message": e.message, "param": null,
            })),
            "model": self.model,
            "latency_ms": (now_ms - job.created_at).max(0),
        })
    }

    /// The journal entry of the completion: the upload's request id, key, team and actor; the
    /// file's hash as its `prompt_hash` (as the upload's entry has it); the model's tokens.
    pub fn entry(&self, now_ms: i64) -> EntryDraft {
        let job = self.job;
        EntryDraft {
            timestamp: SystemTime::now(),
            request_id: job.request_id.clone(),
            actor_id: job.actor.clone(),
            team_id: job.team_id.0.clone(),
            key_id: job.key_id.clone(),
            // How the uploader authenticated is the upload entry's; the queue does not keep it.
            auth: None,
            cert_sha256: None,
            charges: Vec::new(),
            action: match job.file_id {
                Some(_) => FILE_ACTION,
                None => DOCUMENT_ACTION,
            }
            .to_string(),
            model: Some(self.model.to_string()),
            prompt_hash: Some(format!("sha256:{}", job.sha256)),
            routing_policy: None,
            residency_boundary: None,
            retrieval_filtered: None,
            // The journal's statuses are four: a cancelled upload was not served; the cancel
            // request's own entry (`documents.cancel`, …) says who cancelled it.
            status: match self.error {
                None if self.cancelled() => Status::Rejected,
                None => Status::Success,
                Some(e) if e.kind == "guardrail_violation" => Status::Blocked,
                Some(e) if e.status >= 500 => Status::Error,
                Some(_) => Status::Rejected,
            },
            prompt_tokens: (self.error.is_none() && !self.cancelled()).then_some(self.tokens),
            completion_tokens: None,
            latency_us: u64::try_from(now_ms - job.created_at)
                .unwrap_or(0)
                .saturating_mul(1000),
            mcp: None,
        }
    }
}

/// Tells the team's webhooks and the journal that the job ended. Neither can fail the job (it
/// has ended): a journal that refuses is logged.
pub async fn announce(state: &AppState, ended: Ended<'_>) {
    let now = state.access().now_ms();
    let job = ended.job;
    state.events().emit(|| {
        Event::now(
            "request.completed",
            &job.request_id,
            ended.details(now),
            &job.team_id.0,
            &job.actor,
        )
    });
    if let Some(journal) = state.journal()
        && let Err(e) = journal.append(ended.entry(now)).await
    {
        tracing::warn!(error = %e, document = %job.id, "journaling an upload's completion failed");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::store::TeamId;
    use crate::store::ingest_jobs::Progress;

    fn job(file_id: Option<&str>) -> IngestJob {
        IngestJob {
            id: "doc_1".into(),
            team_id: TeamId("t1".into()),
            collection: "c".into(),
            filename: "a.txt".into(),
            content_type: None,
            metadata: "{}".into(),
            file_id: file_id.map(str::to_string),
            sha256: "ab".into(),
            key_id: "k1".into(),
            actor: "alice".into(),
            request_id: "req-1".into(),
            bytes: 3,
            state: JobState::Running,
            owner: None,
            lease_until: None,
            attempts: 1,
            progress: Progress::default(),
            error: None,
            created_at: 1_000,
            finished_at: None,
        }
    }

    #[test]
    fn a_completion_names_the_document_its_chunks_and_the_uploads_request() {
        let j = job(None);
        let ended = Ended {
            job: &j,
            error: None,
            chunks: Some(4),
            model: "e5",
            tokens: 99,
        };
        let d = ended.details(3_500);
        assert_eq!(d["document_id"], "doc_1");
        assert_eq!(d["status"], "completed");
        assert_eq!(d["chunks"], 4);
        assert_eq!(d["last_error"], Value::Null);
        assert_eq!(d["latency_ms"], 2_500);
        let e = ended.entry(3_500);
        assert_eq!(
            (e.action.as_str(), e.request_id.as_str(), e.status),
            (DOCUMENT_ACTION, "req-1", Status::Success)
        );
        assert_eq!(e.prompt_hash.as_deref(), Some("sha256:ab"));
        assert_eq!(e.prompt_tokens, Some(99));
    }

    #[test]
    fn a_cancelled_job_is_announced_cancelled_and_not_served() {
        let mut j = job(None);
        j.state = JobState::Cancelled;
        let ended = Ended {
            job: &j,
            error: None,
            chunks: None,
            model: "e5",
            tokens: 0,
        };
        assert_eq!(ended.details(2_000)["status"], "cancelled");
        let e = ended.entry(2_000);
        assert_eq!((e.status, e.prompt_tokens), (Status::Rejected, None));
    }

    #[test]
    fn a_failure_carries_the_error_and_is_rejected_or_an_error() {
        let j = job(Some("file-1"));
        let error = JobError {
            status: 422,
            kind: "invalid_request_error".into(),
            code: "encrypted".into(),
            message: "the PDF is encrypted".into(),
        };
        let ended = Ended {
            job: &j,
            error: Some(&error),
            chunks: None,
            model: "e5",
            tokens: 0,
        };
        let d = ended.details(1_000);
        assert_eq!(d["object"], "vector_store.file");
        assert_eq!(d["status"], "failed");
        assert_eq!(d["last_error"]["code"], "encrypted");
        let e = ended.entry(1_000);
        assert_eq!(
            (e.action.as_str(), e.status, e.prompt_tokens),
            (FILE_ACTION, Status::Rejected, None)
        );
    }
}

//! The stored records an endpoint may read (and stored responses, remove), each through one
//! narrow handle so no endpoint holds the store itself: usage rows for `/admin/usage`, a team's
//! stored responses for `/v1/responses`, the replicas' shared journal index for the activity
//! log and verification, and a vector store's ingestion jobs and file batches.

use std::sync::Arc;

use super::AppState;
use crate::store::ingest_jobs::{FileBatch, IngestJob};
use crate::store::responses::StoredResponse;
use crate::store::{
    JournalRow, JournalScan, Store, StoreResult, TeamId, UnixMillis, UsageFilter, UsageRow,
};

impl AppState {
    /// The usage rows `filter` selects (charges still queued are not in them: flush first).
    pub async fn usage(&self, filter: UsageFilter) -> StoreResult<Vec<UsageRow>> {
        self.0.store.usage(filter).await
    }

    /// Stored responses (`/v1/responses` with `store: true`).
    pub fn stored_responses(&self) -> StoredResponses<'_> {
        StoredResponses {
            store: &self.0.store,
        }
    }

    /// A vector store's files in the ingestion queue, and its file batches.
    pub fn vector_store_jobs(&self) -> VectorStoreJobs<'_> {
        VectorStoreJobs {
            store: &self.0.store,
        }
    }

    /// The replicas' journals as copied into the shared store (read only).
    pub fn journal_index(&self) -> JournalIndex {
        JournalIndex {
            store: self.0.store.clone(),
        }
    }
}

/// A team's stored responses: read, delete, and the retention purge.
pub struct StoredResponses<'a> {
    store: &'a Arc<dyn Store>,
}

impl StoredResponses<'_> {
    /// Only within `team`: another team's id is `None`.
    pub async fn get(&self, team: TeamId, id: String) -> StoreResult<Option<StoredResponse>> {
        self.store.response(team, id).await
    }

    /// Whether `team` had a response `id`.
    pub async fn delete(&self, team: TeamId, id: String) -> StoreResult<bool> {
        self.store.delete_response(team, id).await
    }

    /// Deletes responses created before `before`; how many.
    pub async fn purge(&self, before: UnixMillis) -> StoreResult<u64> {
        self.store.purge_responses(before).await
    }
}

/// A vector store's jobs (its collection's, by file) and file batches, always within one team.
pub struct VectorStoreJobs<'a> {
    store: &'a Arc<dyn Store>,
}

impl VectorStoreJobs<'_> {
    /// The team's jobs in `collection`, newest first.
    pub async fn of_collection(
        &self,
        team: TeamId,
        collection: String,
    ) -> StoreResult<Vec<IngestJob>> {
        self.store.collection_ingests(team, collection).await
    }

    /// Deletes the jobs of `file_id` in `collection` (of every file when `None`).
    pub async fn forget(
        &self,
        team: TeamId,
        collection: String,
        file_id: Option<String>,
    ) -> StoreResult<u64> {
        self.store.forget_ingests(team, collection, file_id).await
    }

    /// The team's jobs for `file_id` in every vector store, newest first.
    pub async fn of_file(&self, team: TeamId, file_id: String) -> StoreResult<Vec<IngestJob>> {
        self.store.file_ingests(team, file_id).await
    }

    /// Stores a file batch.
    pub async fn create_batch(&self, batch: FileBatch) -> StoreResult<FileBatch> {
        self.store.create_file_batch(batch).await
    }

    /// The team's file batch `id`.
    pub async fn batch(&self, team: TeamId, id: String) -> StoreResult<Option<FileBatch>> {
        self.store.file_batch(team, id).await
    }

    /// Marks the team's batch cancelled.
    pub async fn cancel_batch(&self, team: TeamId, id: String) -> StoreResult<bool> {
        self.store.cancel_file_batch(team, id).await
    }
}

/// The shared journal index, read only: rows for queries, chains for verification.
#[derive(Clone)]
pub struct JournalIndex {
    store: Arc<dyn Store>,
}

impl JournalIndex {
    /// A page of indexed rows in (timestamp, replica, seq) order.
    pub async fn rows(&self, scan: JournalScan) -> StoreResult<Vec<JournalRow>> {
        self.store.journal_rows(scan).await
    }

    /// `replica`'s indexed rows in seq order after `after_seq`, at most `limit`.
    pub async fn chain(
        &self,
        replica: String,
        after_seq: i64,
        limit: u32,
    ) -> StoreResult<Vec<JournalRow>> {
        self.store.journal_chain(replica, after_seq, limit).await
    }

    /// Every replica with an indexed chain.
    pub async fn replicas(&self) -> StoreResult<Vec<String>> {
        self.store.journal_replicas().await
    }
}

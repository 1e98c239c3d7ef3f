//! The library's files and vector stores (the OpenAI-compatible surface over the same library),
//! read and written one store call each, so the endpoints (`api/files.rs`,
//! `api/vector_stores.rs`) never hold the document store itself.

use super::Library;
use crate::store::documents::{FileRecord, FileWithData, NewFile, VectorStoreRecord};
use crate::store::{StoreResult, TeamId};

impl Library {
    pub async fn create_file(&self, file: NewFile) -> StoreResult<FileRecord> {
        self.store.create_file(file).await
    }

    /// The team's file and its bytes.
    pub async fn file(&self, team: TeamId, id: String) -> StoreResult<Option<FileWithData>> {
        self.store.file(team, id).await
    }

    /// The team's files, newest first.
    pub async fn files(&self, team: TeamId) -> StoreResult<Vec<FileRecord>> {
        self.store.files(team).await
    }

    pub async fn delete_file(&self, team: TeamId, id: String) -> StoreResult<bool> {
        self.store.delete_file(team, id).await
    }

    pub async fn create_vector_store(
        &self,
        store: VectorStoreRecord,
    ) -> StoreResult<VectorStoreRecord> {
        self.store.create_vector_store(store).await
    }

    pub async fn vector_store(
        &self,
        team: TeamId,
        id: String,
    ) -> StoreResult<Option<VectorStoreRecord>> {
        self.store.vector_store(team, id).await
    }

    /// The team's vector stores, newest first.
    pub async fn vector_stores(&self, team: TeamId) -> StoreResult<Vec<VectorStoreRecord>> {
        self.store.vector_stores(team).await
    }

    /// Deletes the vector store and every document in its collection. `false` when none.
    pub async fn delete_vector_store(&self, team: TeamId, id: String) -> StoreResult<bool> {
        self.store.delete_vector_store(team, id).await
    }
}

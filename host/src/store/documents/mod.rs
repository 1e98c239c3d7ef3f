//! The document library's durable half (issue 15): documents, their chunks and the chunks'
//! vectors, scoped by team. The in-memory search index (`crate::rag`) is rebuilt from
//! [`DocumentStore::chunk_vectors`] at start (and, with replicas, follows other replicas' uploads
//! through [`DocumentStore::document_vectors`]); SQLite and PostgreSQL implement it over the
//! steps written once for both ([`sql`]: documents and chunks; [`files`]: files and vector
//! stores), with [`bulk`] holding the few steps each back end does its own way; the trait is
//! implemented once for both by [`impl_document_store!`]. Format and guarantees in
//! `docs/DOCUMENTS.md`.

pub(crate) mod bulk;
pub(crate) mod files;
pub(crate) mod schema;
pub(crate) mod sql;

use futures_util::future::BoxFuture;

use super::{StoreResult, TeamId, UnixMillis};

/// A document to store with all its chunks, in one transaction.
#[derive(Debug, Clone)]
pub struct NewDocument {
    pub id: String,
    pub team_id: TeamId,
    pub collection: String,
    pub filename: String,
    /// `pdf`, `docx`, `text`, `markdown`.
    pub kind: String,
    pub bytes: u64,
    /// Hex SHA-256 of the uploaded bytes: the same bytes in the same collection of the same team
    /// are one document.
    pub sha256: String,
    pub pages: Option<u32>,
    /// A JSON object, as text.
    pub metadata: String,
    /// The embedding model the vectors were made with (`model id@sha256 prefix`).
    pub model: String,
    /// The file (`/v1/files`) it was made from when attached to a vector store: a document is one
    /// per team, collection, bytes *and* source file.
    pub file_id: Option<String>,
    pub chunks: Vec<NewChunk>,
}

#[derive(Debug, Clone)]
pub struct NewChunk {
    pub ordinal: u32,
    pub page: Option<u32>,
    pub paragraph: u32,
    pub text: String,
    /// `sovereign_retrieval::index::vector_to_bytes` form.
    pub vector: Vec<u8>,
}

/// A chunk's id, derived from its document's id and its place in it (issue 44): the first 8
/// bytes of SHA-256(`<document id>:<ordinal>`), big-endian, top bit cleared (a positive
/// `BIGINT`). A document ingested again after a crash, or on another replica, gets exactly the
/// ids an uninterrupted run gives it. (Chunks stored before this were numbered by the store;
/// they keep their ids.)
pub fn chunk_id(document: &str, ordinal: u32) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{document}:{ordinal}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) & (u64::MAX >> 1)
}

/// A stored document, without its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentRecord {
    pub id: String,
    pub team_id: TeamId,
    pub collection: String,
    pub filename: String,
    pub kind: String,
    pub bytes: u64,
    pub sha256: String,
    pub pages: Option<u32>,
    pub chunks: u32,
    pub metadata: String,
    pub model: String,
    pub file_id: Option<String>,
    pub created_at: UnixMillis,
}

/// What [`DocumentStore::insert_document`] did.
#[derive(Debug, Clone)]
pub enum Inserted {
    /// Stored; the chunks' ids in ordinal order.
    New {
        record: DocumentRecord,
        chunk_ids: Vec<u64>,
    },
    /// The team's collection already holds these bytes: nothing was written.
    Existing(DocumentRecord),
}

/// A page of a team's documents, newest first.
#[derive(Debug, Clone)]
pub struct DocumentFilter {
    pub team_id: TeamId,
    pub collection: Option<String>,
    /// Only documents listed after this one (its id).
    pub after: Option<String>,
    pub limit: u32,
}

/// A chunk as a citation shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChunk {
    pub id: u64,
    pub document_id: String,
    pub page: Option<u32>,
    pub paragraph: u32,
    pub text: String,
}

/// A chunk as the search index is rebuilt from it.
#[derive(Debug, Clone)]
pub struct ChunkVector {
    pub id: u64,
    pub team_id: String,
    pub collection: String,
    pub document_id: String,
    pub text: String,
    pub vector: Vec<u8>,
}

/// An uploaded file kept as is until it is attached to a vector store (`/v1/files`, the OpenAI
/// files API that `vector_stores.files.upload_and_poll` calls first).
#[derive(Debug, Clone)]
pub struct NewFile {
    pub id: String,
    pub team_id: TeamId,
    pub filename: String,
    pub purpose: String,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

/// A stored file, without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    pub id: String,
    pub team_id: TeamId,
    pub filename: String,
    pub purpose: String,
    pub content_type: Option<String>,
    pub bytes: u64,
    pub created_at: UnixMillis,
}

/// A stored file and its bytes.
pub type FileWithData = (FileRecord, Vec<u8>);

/// A vector store (OpenAI's name for a collection): its documents are the collection `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorStoreRecord {
    pub id: String,
    pub team_id: TeamId,
    pub name: String,
    /// A JSON object, as text.
    pub metadata: String,
    pub created_at: UnixMillis,
}

/// Documents and chunks. Every method is safe to call concurrently; none blocks the runtime.
pub trait DocumentStore: Send + Sync + std::fmt::Debug {
    /// Stores the document and its chunks in one transaction, unless the team's collection
    /// already holds a document with the same `sha256` and `file_id` (then nothing is written).
    fn insert_document(&self, document: NewDocument) -> BoxFuture<'_, StoreResult<Inserted>>;
    /// The team's document in `collection` with these bytes (from this file), if any.
    fn find_document(
        &self,
        team: TeamId,
        collection: String,
        sha256: String,
        file_id: Option<String>,
    ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>>;
    /// The team's document `id` (another team's is `None`).
    fn document(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>>;
    /// Up to `limit` documents, newest first.
    fn documents(&self, filter: DocumentFilter) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>>;
    /// Every document of every team (the library's in-memory catalogue at start).
    fn all_documents(&self) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>>;
    /// Deletes the team's document and its chunks. `false` when there was none.
    fn delete_document(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// The chunks with these ids that still exist, in no particular order.
    fn chunks(&self, ids: Vec<u64>) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>>;
    /// Every chunk of a document embedded with `model` (the index rebuild at start).
    fn chunk_vectors(&self, model: String) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>>;
    /// One document's chunks with their vectors (another replica's upload, indexed here).
    fn document_vectors(&self, id: String) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>>;
    /// The chunks of one document, in order (re-embedding it with another model).
    fn document_chunks(&self, id: String) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>>;
    /// Replaces the vectors of a document's chunks (`(chunk id, vector bytes)`) and its model,
    /// in one transaction.
    fn replace_vectors(
        &self,
        id: String,
        model: String,
        vectors: Vec<(u64, Vec<u8>)>,
    ) -> BoxFuture<'_, StoreResult<()>>;

    // Files and vector stores (the OpenAI-compatible surface over the same library).
    fn create_file(&self, file: NewFile) -> BoxFuture<'_, StoreResult<FileRecord>>;
    /// The team's file and its bytes.
    fn file(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<Option<FileWithData>>>;
    /// The team's files, newest first.
    fn files(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<FileRecord>>>;
    fn delete_file(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    fn create_vector_store(
        &self,
        store: VectorStoreRecord,
    ) -> BoxFuture<'_, StoreResult<VectorStoreRecord>>;
    fn vector_store(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<VectorStoreRecord>>>;
    /// The team's vector stores, newest first.
    fn vector_stores(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<VectorStoreRecord>>>;
    /// Deletes the vector store and every document in its collection. `false` when none.
    fn delete_vector_store(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>>;
}

/// [`DocumentStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_document_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::documents::bulk::Bulk;
            use $crate::store::documents::{
                ChunkVector, DocumentFilter, DocumentRecord, DocumentStore, FileRecord,
                FileWithData, Inserted, NewDocument, NewFile, StoredChunk, VectorStoreRecord,
                files, sql as steps,
            };
            use $crate::store::sql::Conn;
            use $crate::store::{StoreResult, TeamId};

            impl DocumentStore for $store {
                fn insert_document(
                    &self,
                    document: NewDocument,
                ) -> BoxFuture<'_, StoreResult<Inserted>> {
                    $run!(self, |c, now| async move {
                        steps::insert(c.begin().await?, now, document).await
                    })
                }

                fn find_document(
                    &self,
                    team: TeamId,
                    collection: String,
                    sha256: String,
                    file_id: Option<String>,
                ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>> {
                    $run!(self, |c, _| {
                        steps::find(&c, &team, &collection, &sha256, file_id.as_deref())
                    })
                }

                fn document(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>> {
                    $run!(self, |c, _| steps::get(&c, &team, &id))
                }

                fn documents(
                    &self,
                    filter: DocumentFilter,
                ) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>> {
                    $run!(self, |c, _| steps::list(&c, &filter))
                }

                fn all_documents(&self) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>> {
                    $run!(self, |c, _| steps::all(&c))
                }

                fn delete_document(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::delete(&c, &team, &id))
                }

                fn chunks(&self, ids: Vec<u64>) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>> {
                    $run!(self, |c, _| Bulk::chunks(&c, &ids))
                }

                fn chunk_vectors(
                    &self,
                    model: String,
                ) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>> {
                    $run!(self, |c, _| steps::chunk_vectors(&c, &model))
                }

                fn document_vectors(
                    &self,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>> {
                    $run!(self, |c, _| steps::document_vectors(&c, &id))
                }

                fn document_chunks(
                    &self,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>> {
                    $run!(self, |c, _| steps::document_chunks(&c, &id))
                }

                fn replace_vectors(
                    &self,
                    id: String,
                    model: String,
                    vectors: Vec<(u64, Vec<u8>)>,
                ) -> BoxFuture<'_, StoreResult<()>> {
                    $run!(self, |c, _| async move {
                        steps::replace_vectors(c.begin().await?, &id, &model, &vectors).await
                    })
                }

                fn create_file(&self, file: NewFile) -> BoxFuture<'_, StoreResult<FileRecord>> {
                    $run!(self, |c, now| files::create_file(&mut c, now, file))
                }

                fn file(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<FileWithData>>> {
                    $run!(self, |c, _| files::file(&c, &team, &id))
                }

                fn files(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<FileRecord>>> {
                    $run!(self, |c, _| files::files(&c, &team))
                }

                fn delete_file(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| files::delete_file(&c, &team, &id))
                }

                fn create_vector_store(
                    &self,
                    store: VectorStoreRecord,
                ) -> BoxFuture<'_, StoreResult<VectorStoreRecord>> {
                    $run!(self, |c, now| files::create_vector_store(
                        &mut c, now, store
                    ))
                }

                fn vector_store(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<Option<VectorStoreRecord>>> {
                    $run!(self, |c, _| files::vector_store(&c, &team, &id))
                }

                fn vector_stores(
                    &self,
                    team: TeamId,
                ) -> BoxFuture<'_, StoreResult<Vec<VectorStoreRecord>>> {
                    $run!(self, |c, _| files::vector_stores(&c, &team))
                }

                fn delete_vector_store(
                    &self,
                    team: TeamId,
                    id: String,
                ) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| files::delete_vector_store(&mut c, &team, &id))
                }
            }
        };
    };
}
pub(crate) use impl_document_store;

#[cfg(test)]
mod tests {
    use super::chunk_id;

    /// The derivation is part of the contract (docs/DOCUMENTS.md): pinned to values computed
    /// independently (Python's hashlib).
    #[test]
    fn chunk_ids_derive_from_the_document_and_the_ordinal() {
        assert_eq!(chunk_id("doc_x", 0), 8_171_727_907_181_578_161);
        assert_eq!(chunk_id("doc_x", 1), 3_175_387_649_924_061_177);
        assert_ne!(chunk_id("doc_y", 0), chunk_id("doc_x", 0));
        assert!(i64::try_from(chunk_id("doc_z", 7)).is_ok());
    }
}

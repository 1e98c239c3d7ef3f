//! Uploads into the library, top to bottom in [`Library::ingest`]: a re-upload of the same bytes
//! answered with the stored record ([`Library::existing`]); the real type detected from the
//! bytes, the text extracted in a child process under the time and memory budget (`sovereign
//! extract-document`), chunked by tokens with page and paragraph kept ([`Library::extract`]);
//! then — after the caller's check (the guardrail) has read or redacted the chunk texts —
//! embedded, stored in one transaction and added to the index ([`Library::add`]). Nothing is
//! stored until everything before it worked.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use sovereign_documents::{Kind, chunk, detect, extract_in_child};
use sovereign_retrieval::ChunkInput;
use sovereign_retrieval::index::vector_to_bytes;
use tokio::sync::OwnedSemaphorePermit;

use super::{Entry, Library, RagError, blocking, write};
use crate::store::TeamId;
use crate::store::documents::{DocumentRecord, Inserted, NewChunk, NewDocument};

/// One uploaded file and where it goes.
#[derive(Debug, Clone)]
pub struct Upload {
    pub team_id: String,
    pub collection: String,
    pub filename: String,
    pub content_type: Option<String>,
    pub metadata: Map<String, Value>,
    /// The `/v1/files` file it comes from (attached to a vector store), if any.
    pub file_id: Option<String>,
    pub bytes: Bytes,
}

impl Upload {
    /// Hex SHA-256 of the bytes: the document's identity within its team's collection.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }
}

/// An extracted, chunked document not yet stored. `texts` are the chunks' texts, which the
/// caller may redact in place before [`Library::add`].
#[derive(Debug)]
pub struct Extracted {
    pub kind: Kind,
    pub pages: Option<u32>,
    pub texts: Vec<String>,
    /// Each chunk's page (PDF) and first paragraph.
    pub places: Vec<(Option<u32>, u32)>,
    /// o200k tokens of all chunks (what usage records).
    pub tokens: u64,
    /// Held until the document is stored: uploads at once are bounded.
    _permit: OwnedSemaphorePermit,
}

/// What an ingest came to: the document's record; `created` when it was stored now (`false`: the
/// team's collection already held these bytes); the o200k tokens embedded (0 when not created).
#[derive(Debug)]
pub struct Ingested {
    pub record: DocumentRecord,
    pub created: bool,
    pub tokens: u64,
}

impl Library {
    /// An upload into the library whose bytes hash to `sha256` ([`Upload::sha256`]), top to
    /// bottom: the stored record of the same bytes, else extracted and chunked, the chunk texts
    /// through `check` (which refuses, or redacts in place what is stored), then embedded,
    /// stored and indexed.
    pub async fn ingest<E: From<RagError>>(
        &self,
        upload: Upload,
        sha256: String,
        check: impl AsyncFnOnce(&mut [String]) -> Result<(), E>,
    ) -> Result<Ingested, E> {
        // The same bytes in the same collection: the stored record.
        if let Some(record) = self.existing(&upload, &sha256).await? {
            return Ok(Ingested {
                record,
                created: false,
                tokens: 0,
            });
        }
        // Text with provenance, extracted in a child process, then chunked.
        let mut extracted = self.extract(&upload).await?;
        // The caller's check on the chunks: refused (nothing stored) or redacted.
        check(&mut extracted.texts).await?;
        // Embedded, stored, indexed.
        let tokens = extracted.tokens;
        let (record, created) = self.add(upload, sha256, extracted).await?;
        Ok(Ingested {
            record,
            created,
            tokens: if created { tokens } else { 0 },
        })
    }

    /// The team's document in `collection` with these bytes (a re-upload), if any.
    pub async fn existing(
        &self,
        upload: &Upload,
        sha256: &str,
    ) -> Result<Option<DocumentRecord>, RagError> {
        self.embedder()?;
        Ok(self
            .store
            .find_document(
                TeamId(upload.team_id.clone()),
                upload.collection.clone(),
                sha256.to_string(),
                upload.file_id.clone(),
            )
            .await?)
    }

    /// Detects the type, extracts the text in a child process and chunks it.
    pub async fn extract(&self, upload: &Upload) -> Result<Extracted, RagError> {
        self.embedder()?;
        let permit = self
            .ingests
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| RagError::Worker(e.to_string()))?;
        let bytes = upload.bytes.clone();
        let filename = upload.filename.clone();
        let content_type = upload.content_type.clone();
        let limits = self.limits;
        let child = self.extraction.clone();
        let chunking = self.chunking;
        let tokens = Arc::clone(&self.tokens);
        let (kind, pages, chunks) = blocking(move || {
            let kind = detect(&bytes, Some(&filename), content_type.as_deref(), &limits)?;
            let document = extract_in_child(&child, &bytes, kind, &limits)?;
            let counter = |text: &str| tokens.count(text) as usize;
            let chunks = chunk(&document, &counter, &chunking);
            Ok((kind, document.pages, chunks))
        })
        .await?;
        if chunks.is_empty() {
            return Err(sovereign_documents::ExtractError::NoText.into());
        }
        Ok(Extracted {
            kind,
            pages,
            tokens: chunks.iter().map(|c| c.tokens as u64).sum(),
            places: chunks.iter().map(|c| (c.page, c.paragraph_start)).collect(),
            texts: chunks.into_iter().map(|c| c.text).collect(),
            _permit: permit,
        })
    }

    /// Embeds the chunks, stores the document and adds it to the index. `false` with the
    /// existing record when the same bytes were stored meanwhile (a concurrent re-upload).
    pub async fn add(
        &self,
        upload: Upload,
        sha256: String,
        extracted: Extracted,
    ) -> Result<(DocumentRecord, bool), RagError> {
        let vectors = self.passages(&upload, &extracted.texts).await?;
        let id = format!("doc_{}", uuid::Uuid::now_v7().simple());
        self.keep(id, upload, sha256, extracted, vectors).await
    }

    /// Embeds chunk texts of `upload` as passages, each alone and after its document's title (the
    /// contextual chunk header), as the uploader's team's work on the shared engine: a whole
    /// document here, a window at a time in the ingestion queue. One vector per chunk, both
    /// halves in it (`headers::stored_vectors`).
    pub async fn passages(
        &self,
        upload: &Upload,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, RagError> {
        let title = super::headers::title(&upload.filename, &upload.metadata);
        let vectors = self
            .embedder()?
            .passages_for(
                &upload.team_id,
                super::headers::texts_to_embed(&title, texts),
            )
            .await?;
        Ok(super::headers::stored_vectors(vectors))
    }

    /// Stores the embedded document as `id` in one transaction and adds it to the index (what
    /// [`Library::add`] and the ingestion queue's worker end with). `false` with the existing
    /// record when the same bytes were stored meanwhile.
    pub async fn keep(
        &self,
        id: String,
        upload: Upload,
        sha256: String,
        extracted: Extracted,
        vectors: Vec<Vec<f32>>,
    ) -> Result<(DocumentRecord, bool), RagError> {
        let texts = extracted.texts;
        let chunks = texts
            .iter()
            .zip(&vectors)
            .zip(&extracted.places)
            .enumerate()
            .map(|(i, ((text, vector), &(page, paragraph)))| NewChunk {
                ordinal: u32::try_from(i).unwrap_or(u32::MAX),
                page,
                paragraph,
                text: text.clone(),
                vector: vector_to_bytes(vector),
            })
            .collect();
        let document = NewDocument {
            id,
            team_id: TeamId(upload.team_id.clone()),
            collection: upload.collection.clone(),
            filename: upload.filename.clone(),
            kind: extracted.kind.as_str().to_string(),
            bytes: upload.bytes.len() as u64,
            sha256,
            pages: extracted.pages,
            metadata: Value::Object(upload.metadata.clone()).to_string(),
            model: self.model_key.clone(),
            file_id: upload.file_id.clone(),
            chunks,
        };
        let (record, chunk_ids) = match self.store.insert_document(document).await? {
            Inserted::Existing(record) => return Ok((record, false)),
            Inserted::New { record, chunk_ids } => (record, chunk_ids),
        };
        // Indexing normalises and tokenises every chunk: on a blocking thread, not the runtime's.
        let index = Arc::clone(&self.index);
        let (team, collection, document) = (
            upload.team_id.clone(),
            upload.collection.clone(),
            record.id.clone(),
        );
        let title = super::headers::title(&upload.filename, &upload.metadata);
        let names = super::headers::names(&upload.metadata);
        blocking(move || {
            let mut index = write(&index);
            for ((chunk_id, text), vector) in chunk_ids.iter().zip(&texts).zip(&vectors) {
                index
                    .add(&ChunkInput {
                        chunk_id: *chunk_id,
                        tenant: &team,
                        collection: &collection,
                        document_id: &document,
                        text,
                        vector,
                    })
                    .map_err(|e| RagError::Worker(format!("indexing: {e}")))?;
            }
            index.set_document_header(&document, &title, &names);
            Ok(())
        })
        .await?;
        self.announce(&upload.team_id, &record.id).await;
        write(&self.catalogue).insert(
            record.id.clone(),
            Arc::new(Entry {
                team_id: upload.team_id,
                collection: upload.collection,
                filename: upload.filename,
                bytes: upload.bytes.len() as u64,
                file_id: upload.file_id,
                metadata: upload.metadata,
            }),
        );
        Ok((record, true))
    }
}

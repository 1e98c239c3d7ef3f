//! Adding and removing chunks: one at a time (`add`, `add_row`), a store's rows rebuilt on all
//! cores (`from_rows`), deletion by document or chunk (invisible at once), compaction once a
//! quarter of the slots are dead, the HNSW graph built at `ANN_THRESHOLD` and after compaction.

use super::vectors::{self, VectorError};
use super::{ANN_THRESHOLD, Index, IndexError, Slot, hnsw, vector_from_bytes};
use crate::normalize::{is_mostly_arabic, normalize, terms};

/// A chunk to add. The index keeps its terms and vector, not its text (the host's store has it).
#[derive(Debug, Clone, Copy)]
pub struct ChunkInput<'a> {
    pub chunk_id: u64,
    pub tenant: &'a str,
    pub collection: &'a str,
    pub document_id: &'a str,
    pub text: &'a str,
    /// The chunk's embedding (`dim` values), optionally followed by the chunk embedded after its
    /// document's title (`2 × dim` in all: the entity rule's contextual vector, ranked on when a
    /// query's names identify a document; see `SearchOptions::entity_weight`).
    pub vector: &'a [f32],
}

/// A chunk as the host's store keeps it: the vector in `vector_to_bytes` form (`dim` or `2 × dim`
/// values, as `ChunkInput::vector`).
#[derive(Debug, Clone, Copy)]
pub struct ChunkRow<'a> {
    pub chunk_id: u64,
    pub tenant: &'a str,
    pub collection: &'a str,
    pub document_id: &'a str,
    pub text: &'a str,
    pub vector_bytes: &'a [u8],
}

/// Rows prepared per parallel step of `Index::from_rows`.
pub(super) const REBUILD_BATCH: usize = 4096;

/// A store row made ready to insert: its vector decoded, its text normalised, its script known.
struct Prepared {
    vector: Vec<f32>,
    normalized: String,
    arabic: bool,
}

impl Prepared {
    fn new(row: &ChunkRow<'_>) -> Result<Self, IndexError> {
        Ok(Self {
            vector: vector_from_bytes(row.vector_bytes)?,
            normalized: normalize(row.text),
            arabic: is_mostly_arabic(row.text),
        })
    }
}

impl Index {
    /// Rebuilds an index from the store's rows.
    pub fn from_rows<'a>(
        dim: usize,
        model_key: impl Into<String>,
        rows: impl IntoIterator<Item = ChunkRow<'a>>,
    ) -> Result<Self, IndexError> {
        let mut index = Self::new(dim, model_key);
        let rows: Vec<ChunkRow<'a>> = rows.into_iter().collect();
        // Decoding, normalising and script detection are independent per row: done on all cores
        // in batches, then added in order on this thread (the term dictionary is shared).
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(8);
        for batch in rows.chunks(REBUILD_BATCH) {
            let per = batch.len().div_ceil(threads).max(1);
            let prepared: Vec<Result<Prepared, IndexError>> = std::thread::scope(|scope| {
                let handles: Vec<_> = batch
                    .chunks(per)
                    .map(|part| {
                        scope.spawn(move || part.iter().map(Prepared::new).collect::<Vec<_>>())
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| {
                        // A panicking worker is a bug; report it as an unreadable row.
                        h.join()
                            .unwrap_or_else(|_| vec![Err(VectorError::Bytes(0).into())])
                    })
                    .collect()
            });
            for (row, p) in batch.iter().zip(prepared) {
                let p = p?;
                index.insert(
                    &ChunkInput {
                        chunk_id: row.chunk_id,
                        tenant: row.tenant,
                        collection: row.collection,
                        document_id: row.document_id,
                        text: row.text,
                        vector: &p.vector,
                    },
                    &p.normalized,
                    p.arabic,
                )?;
            }
        }
        Ok(index)
    }

    /// Adds a chunk (replacing one with the same `chunk_id`).
    pub fn add(&mut self, chunk: &ChunkInput<'_>) -> Result<(), IndexError> {
        let normalized = normalize(chunk.text);
        self.insert(chunk, &normalized, is_mostly_arabic(chunk.text))
    }

    /// `add` with the text already normalised and its script known (`from_rows` prepares them on
    /// several threads).
    fn insert(
        &mut self,
        chunk: &ChunkInput<'_>,
        normalized: &str,
        arabic: bool,
    ) -> Result<(), IndexError> {
        let dim = self.vectors.dim();
        let (vector, context) = if chunk.vector.len() == 2 * dim && dim > 0 {
            let (alone, after_title) = chunk.vector.split_at(dim);
            (alone, Some(after_title))
        } else {
            (chunk.vector, None)
        };
        self.vectors.check(vector)?;
        if chunk.vector.iter().any(|x| !x.is_finite()) {
            return Err(VectorError::NotFinite.into());
        }
        if let Some(&old) = self.by_chunk.get(&chunk.chunk_id) {
            self.kill(old);
        }
        let terms: Vec<&str> = terms(normalized, self.tokenizer).collect();
        let slot = self.slots.len() as u32;
        // The contextual store, once any chunk has a contextual vector, holds a row per slot:
        // started from copies of the vectors so far, a chunk without one gets its own vector.
        if context.is_some() && self.context.is_none() {
            let mut store = vectors::VectorStore::new(dim);
            for s in 0..self.slots.len() {
                store.push_copy(&self.vectors, s);
            }
            self.context = Some(store);
        }
        if let Some(store) = &mut self.context {
            store.push(context.unwrap_or(vector))?;
        }
        self.vectors.push(vector)?;
        self.bm25.push(&terms);
        if let Some(ann) = &mut self.ann {
            ann.insert(slot, &self.vectors);
        }
        let document = self.names.intern(chunk.document_id);
        self.slots.push(Slot {
            chunk_id: chunk.chunk_id,
            tenant: self.names.intern(chunk.tenant),
            collection: self.names.intern(chunk.collection),
            document,
            alive: true,
            arabic,
        });
        self.by_chunk.insert(chunk.chunk_id, slot);
        self.by_document.entry(document).or_default().push(slot);
        if self.ann.is_none() && self.len() >= ANN_THRESHOLD {
            self.enable_ann();
        }
        Ok(())
    }

    /// Adds a chunk from a store row.
    pub fn add_row(&mut self, row: &ChunkRow<'_>) -> Result<(), IndexError> {
        let vector = vector_from_bytes(row.vector_bytes)?;
        self.add(&ChunkInput {
            chunk_id: row.chunk_id,
            tenant: row.tenant,
            collection: row.collection,
            document_id: row.document_id,
            text: row.text,
            vector: &vector,
        })
    }

    /// Builds the HNSW graph over every slot now (it is built on its own at `ANN_THRESHOLD`
    /// chunks). Searches use it when the filter keeps at least a fifth of the chunks, else they
    /// scan exactly (cheaper then, and a graph walk would miss filtered-out neighbourhoods).
    pub fn enable_ann(&mut self) {
        let mut graph = hnsw::Hnsw::new();
        for slot in 0..self.slots.len() {
            graph.insert(slot as u32, &self.vectors);
        }
        self.ann = Some(graph);
    }

    /// Removes every chunk of `document_id`; they are invisible to the next search. Returns how
    /// many were removed. Document ids are the host's and unique across tenants (a shared id
    /// would delete both tenants' chunks).
    pub fn delete_document(&mut self, document_id: &str) -> usize {
        let Some(document) = self.names.get(document_id) else {
            return 0;
        };
        self.entities.remove(document);
        let slots = self.by_document.remove(&document).unwrap_or_default();
        let mut removed = 0;
        for slot in slots {
            if self.slots[slot as usize].alive {
                self.kill(slot);
                removed += 1;
            }
        }
        self.maybe_compact();
        removed
    }

    /// Removes one chunk; true if it was there.
    pub fn delete_chunk(&mut self, chunk_id: u64) -> bool {
        let Some(&slot) = self.by_chunk.get(&chunk_id) else {
            return false;
        };
        self.kill(slot);
        let document = self.slots[slot as usize].document;
        if let Some(list) = self.by_document.get_mut(&document) {
            list.retain(|&s| s != slot);
        }
        self.maybe_compact();
        true
    }

    fn kill(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        if s.alive {
            s.alive = false;
            self.dead += 1;
            self.bm25.forget(slot as usize);
            self.by_chunk.remove(&s.chunk_id);
        }
    }

    /// Compacts once a quarter of the slots are dead (and at least 64).
    fn maybe_compact(&mut self) {
        if self.dead >= 64 && self.dead * 4 >= self.slots.len() {
            self.compact();
        }
    }

    /// Drops deleted chunks from memory and from the BM25 document frequencies.
    pub fn compact(&mut self) {
        if self.dead == 0 {
            return;
        }
        let keep: Vec<bool> = self.slots.iter().map(|s| s.alive).collect();
        self.vectors.retain(&keep);
        if let Some(store) = &mut self.context {
            store.retain(&keep);
        }
        self.bm25.retain(&keep);
        self.slots.retain(|s| s.alive);
        self.by_chunk.clear();
        self.by_document.clear();
        for (i, s) in self.slots.iter().enumerate() {
            self.by_chunk.insert(s.chunk_id, i as u32);
            self.by_document
                .entry(s.document)
                .or_default()
                .push(i as u32);
        }
        self.dead = 0;
        if self.ann.is_some() {
            self.enable_ann();
        }
    }
}

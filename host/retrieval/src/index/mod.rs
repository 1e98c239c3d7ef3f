//! The hybrid in-memory index over chunks: int8 vectors searched exactly (`vectors`) and BM25 over
//! normalised terms (`bm25`), fused by reciprocal rank (`fusion`). Filters by tenant, collection
//! and a caller predicate; delete by document (invisible at once, space reclaimed by compaction);
//! rebuilt from the host store's rows (`ChunkRow`). This file holds the `Index` itself (its
//! tables, construction, size); adding and removing chunks is `chunks`, a search `search` (asked
//! and answered in `query`'s types), the per-script z-scores `zscores`, ranking order `rank`,
//! documents' names (title and aliases) matched across scripts `entities`, the int8 dot product
//! `dot`.

mod bm25;
mod chunks;
mod dot;
mod entities;
mod fusion;
mod hnsw;
mod query;
mod rank;
mod search;
mod vectors;
mod zscores;

use std::collections::HashMap;
use std::sync::Arc;

pub use chunks::{ChunkInput, ChunkRow};
pub use entities::MAX_HEADER_WORDS;
pub use fusion::RRF_K;
pub use query::{
    ChunkMeta, ENTITY_WEIGHT, Filter, Fusion, Hit, Mode, SearchOptions, SearchResults,
};
pub use vectors::{VectorError, vector_from_bytes, vector_to_bytes};
pub use zscores::ScorePrior;

use crate::normalize::TokenizerOptions;

/// Why a chunk could not be added or a query run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Vector(#[from] VectorError),
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    chunk_id: u64,
    tenant: u32,
    collection: u32,
    document: u32,
    alive: bool,
    /// Mostly Arabic script (see `SearchOptions::balance_scripts`).
    arabic: bool,
}

/// Interned names (tenants, collections, document ids): one `Arc<str>` each.
#[derive(Debug, Clone, Default)]
struct Names {
    ids: HashMap<Arc<str>, u32>,
    names: Vec<Arc<str>>,
}

impl Names {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        let name: Arc<str> = name.into();
        self.names.push(name.clone());
        self.ids.insert(name, id);
        id
    }

    fn get(&self, name: &str) -> Option<u32> {
        self.ids.get(name).copied()
    }

    fn name(&self, id: u32) -> &Arc<str> {
        &self.names[id as usize]
    }
}

/// The hybrid index. Not internally synchronised: the host wraps it (e.g. in an `RwLock`: searches
/// take `&self`, changes `&mut self`).
#[derive(Debug, Clone)]
pub struct Index {
    model_key: String,
    tokenizer: TokenizerOptions,
    vectors: vectors::VectorStore,
    /// The chunks embedded after their document's title (`ChunkInput::vector`'s second half),
    /// a row per slot once any chunk brought one (the others' own vectors copied): ranked on
    /// instead of `vectors` when the query's names identify a document (`search`).
    context: Option<vectors::VectorStore>,
    bm25: bm25::Bm25,
    slots: Vec<Slot>,
    by_chunk: HashMap<u64, u32>,
    by_document: HashMap<u32, Vec<u32>>,
    names: Names,
    dead: usize,
    /// The HNSW graph over all slots, once the index reaches `ANN_THRESHOLD` chunks (or
    /// `enable_ann`); rebuilt after compaction.
    ann: Option<hnsw::Hnsw>,
    /// The per-script cosine prior the z-scores are shrunk toward (`ScorePrior`).
    prior: Option<ScorePrior>,
    /// Documents' headers (title, aliases) under their name keys (`set_document_header`).
    entities: entities::Entities,
}

/// Live chunks at which the index builds its HNSW graph on its own. Measured at 100k chunks
/// (README): exact hybrid search 13 CPU ms per query, with the graph 6 CPU ms but recall@10 0.76
/// and 45 CPU s to build; exact search is kept as long as it fits the budget on two cores.
pub const ANN_THRESHOLD: usize = 200_000;

impl Index {
    /// An empty index of `dim`-dimensional vectors from the model identified by `model_key`
    /// (e.g. `"multilingual-e5-small-q4:<sha256>"`): the host compares it before mixing vectors.
    pub fn new(dim: usize, model_key: impl Into<String>) -> Self {
        Self::with_tokenizer(dim, model_key, TokenizerOptions::default())
    }

    pub fn with_tokenizer(
        dim: usize,
        model_key: impl Into<String>,
        tokenizer: TokenizerOptions,
    ) -> Self {
        Self {
            model_key: model_key.into(),
            tokenizer,
            vectors: vectors::VectorStore::new(dim),
            context: None,
            bm25: bm25::Bm25::default(),
            slots: Vec::new(),
            by_chunk: HashMap::new(),
            by_document: HashMap::new(),
            names: Names::default(),
            dead: 0,
            ann: None,
            prior: None,
            entities: entities::Entities::default(),
        }
    }

    /// Sets a document's header (`entities`): `title` (its title, file name: its words name the
    /// document when a query uses them as a name, or transliterated) and `names` (the names
    /// given at upload — organisation, aliases, translations — in any script). Every chunk of the
    /// document is then ranked as being about the names in it. May be called before or after the
    /// document's chunks are added; both empty removes it, and so does deleting the document.
    pub fn set_document_header(&mut self, document_id: &str, title: &str, names: &str) {
        let document = self.names.intern(document_id);
        self.entities.set(document, title, names);
    }

    /// Replaces the score prior (`None`, as `Index::new` starts: z-scores from the filtered
    /// chunks alone). The committed prior of a model file is its calibration's
    /// (`confidence::calibration_for_key(key).map(|c| c.score_prior)`); the index does not look it
    /// up itself, so that `index` stays below `confidence`.
    pub fn set_score_prior(&mut self, prior: Option<ScorePrior>) {
        self.prior = prior;
    }

    pub fn score_prior(&self) -> Option<&ScorePrior> {
        self.prior.as_ref()
    }

    pub fn model_key(&self) -> &str {
        &self.model_key
    }

    pub fn dim(&self) -> usize {
        self.vectors.dim()
    }

    /// Live chunks.
    pub fn len(&self) -> usize {
        self.slots.len() - self.dead
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether chunks were added with a second vector (embedded after their document's title).
    pub fn has_context_vectors(&self) -> bool {
        self.context.is_some()
    }

    /// Whether searches can use an HNSW graph.
    pub fn has_ann(&self) -> bool {
        self.ann.is_some()
    }

    /// Approximate heap bytes held (vectors, postings, slot tables; not allocator overhead).
    pub fn memory_bytes(&self) -> usize {
        let slots = self.slots.capacity() * std::mem::size_of::<Slot>();
        let maps =
            self.by_chunk.capacity() * 16 + self.by_document.capacity() * 32 + self.slots.len() * 4;
        let names: usize = self.names.names.iter().map(|n| n.len() + 16 + 40).sum();
        let ann = self.ann.as_ref().map_or(0, hnsw::Hnsw::memory_bytes);
        self.vectors.memory_bytes()
            + self
                .context
                .as_ref()
                .map_or(0, vectors::VectorStore::memory_bytes)
            + self.bm25.memory_bytes()
            + slots
            + maps
            + names
            + ann
            + self.entities.memory_bytes()
    }
}

#[cfg(test)]
mod tests;

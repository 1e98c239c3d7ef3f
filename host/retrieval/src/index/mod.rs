//! The hybrid in-memory index over chunks: int8 vectors searched exactly (`vectors`) and BM25 over
//! normalised terms (`bm25`), fused by reciprocal rank (`fusion`). Filters by tenant, collection
//! and a caller predicate; delete by document (invisible at once, space reclaimed by compaction);
//! rebuilt from the host store's rows (`ChunkRow`).

mod bm25;
mod fusion;
mod hnsw;
mod vectors;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

pub use fusion::RRF_K;
pub use vectors::{VectorError, vector_from_bytes, vector_to_bytes};

use crate::normalize::{TokenizerOptions, is_mostly_arabic, normalize, terms};

/// Why a chunk could not be added or a query run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Vector(#[from] VectorError),
}

/// A chunk to add. The index keeps its terms and vector, not its text (the host's store has it).
#[derive(Debug, Clone, Copy)]
pub struct ChunkInput<'a> {
    pub chunk_id: u64,
    pub tenant: &'a str,
    pub collection: &'a str,
    pub document_id: &'a str,
    pub text: &'a str,
    pub vector: &'a [f32],
}

/// A chunk as the host's store keeps it: the vector in `vector_to_bytes` form.
#[derive(Debug, Clone, Copy)]
pub struct ChunkRow<'a> {
    pub chunk_id: u64,
    pub tenant: &'a str,
    pub collection: &'a str,
    pub document_id: &'a str,
    pub text: &'a str,
    pub vector_bytes: &'a [u8],
}

/// What a filter predicate sees of a chunk.
#[derive(Debug, Clone, Copy)]
pub struct ChunkMeta<'a> {
    pub chunk_id: u64,
    pub tenant: &'a str,
    pub collection: &'a str,
    pub document_id: &'a str,
}

/// Which chunks a search may return. All conditions must hold; `None` means "any".
#[derive(Clone, Copy, Default)]
pub struct Filter<'a> {
    /// Only this tenant's chunks (the host's team scoping).
    pub tenant: Option<&'a str>,
    /// Only chunks in one of these collections.
    pub collections: Option<&'a [&'a str]>,
    /// Any further condition (metadata filters, a document allow-list, …).
    /// `Sync`: large indexes scan their vectors on several threads.
    pub predicate: Option<&'a (dyn Fn(&ChunkMeta<'_>) -> bool + Sync)>,
}

impl std::fmt::Debug for Filter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter")
            .field("tenant", &self.tenant)
            .field("collections", &self.collections)
            .field("predicate", &self.predicate.is_some())
            .finish()
    }
}

/// Which rankings a search uses (the evaluation compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Vector and BM25 rankings fused by RRF.
    #[default]
    Hybrid,
    VectorOnly,
    LexicalOnly,
}

/// Search settings.
#[derive(Debug, Clone, Copy)]
pub struct SearchOptions {
    pub mode: Mode,
    /// How deep each ranking goes before fusion (at least `top_k`).
    pub candidates: usize,
    pub rrf_k: f32,
    /// Rank the vector side on per-script standardised similarity: e5 scores a query against
    /// passages in its own language higher than against passages in the other, whatever they
    /// say, so an Arabic question's English answer loses to unrelated Arabic text. Each chunk's
    /// cosine is turned into a z-score among the filtered chunks of its script (Arabic / other)
    /// before ranking; `Hit::vector_sim` stays the raw cosine.
    pub balance_scripts: bool,
    /// How the two rankings are combined in `Mode::Hybrid`.
    pub fusion: Fusion,
    /// Scan every vector even when the index has an HNSW graph (measurements, recall checks).
    pub exact_vectors: bool,
    /// Rank on z-scores whose per-script statistics are shrunk toward the index's `ScorePrior`
    /// (when it has one). The confidence figures (`SearchResults::vector_top_z`) always use the
    /// prior; this says whether the ranking does too.
    pub prior_in_ranking: bool,
}

/// How the vector and BM25 rankings are combined (the evaluation compares them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: Σ 1 / (k + rank).
    Rrf,
    /// RRF with each BM25 entry weighted by its evidence, min(1, 2 × BM25 / the query's BM25
    /// ceiling): a chunk matching the query's rare terms counts fully, one matching only common
    /// words barely counts.
    EvidenceRrf,
    /// A convex-style combination of scores: the vector z-score (per script when
    /// `balance_scripts`) plus `lexical` × BM25 / the query's BM25 ceiling. Unlike RRF it keeps
    /// how far ahead a candidate is on each side.
    Scores { lexical: f32 },
}

impl Default for Fusion {
    /// The best on the evaluation set (crate README).
    fn default() -> Self {
        Fusion::Scores { lexical: 1.0 }
    }
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Hybrid,
            candidates: 50,
            rrf_k: RRF_K,
            balance_scripts: true,
            fusion: Fusion::default(),
            exact_vectors: false,
            prior_in_ranking: true,
        }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub chunk_id: u64,
    pub document_id: Arc<str>,
    pub collection: Arc<str>,
    /// 1-based position in the returned list.
    pub rank: usize,
    /// The fused score (RRF, or z-score + weighted BM25 for `Fusion::Scores`; in single-list
    /// modes, the RRF of that list). Only its order means something.
    pub score: f32,
    /// Cosine of the query and chunk vectors (int8 approximation, ±0.01).
    pub vector_sim: f32,
    /// `vector_sim` as a per-script z-score on the same scale as `SearchResults::vector_top_z`
    /// (the best hit's equals it when the best chunk by z-score is among the hits): the hit's
    /// own standing, for a per-citation confidence.
    pub vector_z: f32,
    /// BM25 of the query terms in the chunk (0 if none match).
    pub bm25: f32,
    /// Rank in the vector list (1-based), if the chunk made its candidates.
    pub vector_rank: Option<u32>,
    /// Rank in the BM25 list (1-based), if the chunk made its candidates.
    pub bm25_rank: Option<u32>,
    /// Distinct query terms present in the chunk.
    pub terms_matched: u16,
}

/// A search's hits and the query-level figures `confidence` turns into features.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResults {
    pub hits: Vec<Hit>,
    /// The two best cosines among the filtered chunks (fewer if fewer chunks).
    pub vector_top: Vec<f32>,
    /// The best per-script z-score of a cosine: how far the best chunk stands out from the other
    /// chunks of its script, 0 if no chunk. With a `ScorePrior` (the committed one for the model
    /// file) the script's mean and standard deviation are those of the filtered chunks pooled
    /// with `ScorePrior::weight` virtual chunks of the prior, so a collection of a few chunks
    /// still gets a meaningful z-score (without it one chunk always has z = 0).
    pub vector_top_z: f32,
    /// The mean cosine the best z-score was taken against (the pooled mean of its chunk's script;
    /// 0 if no chunk): a single chunk's lead over "a typical chunk".
    pub vector_top_baseline: f32,
    /// Filtered chunks whose cosine was computed (all of them, or the sample under HNSW).
    pub vector_candidates: usize,
    /// The best BM25 among the filtered chunks (0 if no term matches).
    pub bm25_top: f32,
    /// Σ idf × (k1+1) over the query's known terms: `bm25_top / bm25_ceiling` is in [0, 1).
    pub bm25_ceiling: f32,
    /// Distinct terms of the query after normalisation.
    pub query_terms: usize,
    /// |top-5 by vector ∩ top-5 by BM25| / min(5, filtered chunks): the share of the vector top-5
    /// that BM25 also ranks in its top 5 (1 when every chunk of a collection of three is in both).
    pub list_overlap: f32,
}

/// What one query's cosines against a collection's chunks look like before the collection is
/// seen, for one embedding model file: per query script and chunk script, the mean and standard
/// deviation of the cosines (measured on the evaluation corpus, `examples/eval.rs`). The index
/// pools them, as `weight` virtual chunks, with the filtered chunks' own statistics before it
/// takes z-scores: with thousands of chunks the prior barely moves them, with a handful it keeps
/// the z-score on the scale the confidence model was fitted on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScorePrior {
    /// `[query script][chunk script]` (0 = other, 1 = Arabic): (mean, standard deviation).
    pub cosine: [[(f64, f64); 2]; 2],
    /// Pseudo-count: how many chunks the prior weighs as.
    pub weight: f64,
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
}

/// Live chunks at which the index builds its HNSW graph on its own. Measured at 100k chunks
/// (README): exact hybrid search 13 CPU ms per query, with the graph 6 CPU ms but recall@10 0.76
/// and 45 CPU s to build; exact search is kept as long as it fits the budget on two cores.
pub const ANN_THRESHOLD: usize = 200_000;

/// Candidates the HNSW walk keeps (at least; twice the ranking depth when that is more).
const ANN_EF: usize = 128;

/// Slots sampled for the per-script statistics when the HNSW graph answers.
const Z_SAMPLE: usize = 4096;

/// Rows prepared per parallel step of `Index::from_rows`.
const REBUILD_BATCH: usize = 4096;

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

/// Slots above which the vector scan runs on several threads (see the crate README for the
/// measurement behind it).
const PARALLEL_SCAN: usize = 20_000;

/// A scored slot ordered by score (total order on f32), then by lower slot.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scored(f32, u32);
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| other.1.cmp(&self.1))
    }
}

/// The `n` best of `items`, best first.
fn top_n(items: impl Iterator<Item = Scored>, n: usize) -> Vec<Scored> {
    let mut heap: BinaryHeap<Reverse<Scored>> = BinaryHeap::with_capacity(n + 1);
    for item in items {
        if heap.len() < n {
            heap.push(Reverse(item));
        } else if let Some(Reverse(worst)) = heap.peek()
            && item > *worst
        {
            heap.pop();
            heap.push(Reverse(item));
        }
    }
    let mut out: Vec<Scored> = heap.into_iter().map(|Reverse(s)| s).collect();
    out.sort_by(|a, b| b.cmp(a));
    out
}

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
            bm25: bm25::Bm25::default(),
            slots: Vec::new(),
            by_chunk: HashMap::new(),
            by_document: HashMap::new(),
            names: Names::default(),
            dead: 0,
            ann: None,
            prior: None,
        }
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
        self.vectors.check(chunk.vector)?;
        if chunk.vector.iter().any(|x| !x.is_finite()) {
            return Err(VectorError::NotFinite.into());
        }
        if let Some(&old) = self.by_chunk.get(&chunk.chunk_id) {
            self.kill(old);
        }
        let terms: Vec<&str> = terms(normalized, self.tokenizer).collect();
        self.vectors.push(chunk.vector)?;
        self.bm25.push(&terms);
        let slot = self.slots.len() as u32;
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

    /// Whether searches can use an HNSW graph.
    pub fn has_ann(&self) -> bool {
        self.ann.is_some()
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

    /// Removes every chunk of `document_id`; they are invisible to the next search. Returns how
    /// many were removed. Document ids are the host's and unique across tenants (a shared id
    /// would delete both tenants' chunks).
    pub fn delete_document(&mut self, document_id: &str) -> usize {
        let Some(document) = self.names.get(document_id) else {
            return 0;
        };
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

    /// Approximate heap bytes held (vectors, postings, slot tables; not allocator overhead).
    pub fn memory_bytes(&self) -> usize {
        let slots = self.slots.capacity() * std::mem::size_of::<Slot>();
        let maps =
            self.by_chunk.capacity() * 16 + self.by_document.capacity() * 32 + self.slots.len() * 4;
        let names: usize = self.names.names.iter().map(|n| n.len() + 16 + 40).sum();
        let ann = self.ann.as_ref().map_or(0, hnsw::Hnsw::memory_bytes);
        self.vectors.memory_bytes() + self.bm25.memory_bytes() + slots + maps + names + ann
    }

    /// Hybrid search with the default options.
    pub fn search(
        &self,
        query_vector: &[f32],
        query_text: &str,
        top_k: usize,
        filter: &Filter<'_>,
    ) -> Result<SearchResults, IndexError> {
        self.search_with(
            query_vector,
            query_text,
            top_k,
            filter,
            &SearchOptions::default(),
        )
    }

    /// Search with explicit options (mode, candidate depth, RRF constant).
    pub fn search_with(
        &self,
        query_vector: &[f32],
        query_text: &str,
        top_k: usize,
        filter: &Filter<'_>,
        options: &SearchOptions,
    ) -> Result<SearchResults, IndexError> {
        let query = self.vectors.prepare(query_vector)?;
        let normalized = normalize(query_text);
        let terms: Vec<&str> = terms(&normalized, self.tokenizer).collect();
        let prepared = self.bm25.prepare(&terms);
        let depth = options.candidates.max(top_k);

        let Some(accept) = self.acceptor(filter) else {
            // A tenant or collection the index has never seen: nothing can match.
            return Ok(SearchResults {
                query_terms: prepared.distinct_terms,
                bm25_ceiling: prepared.ceiling,
                ..SearchResults::default()
            });
        };

        // A single-list mode skips the other side's scan (its figures in the results are empty).
        let ann = self
            .ann
            .as_ref()
            .filter(|_| !options.exact_vectors && options.mode != Mode::LexicalOnly)
            .filter(|_| (0..self.slots.len()).filter(|&s| accept(s)).count() * 5 >= self.len());
        let (sims, sample) = if options.mode == Mode::LexicalOnly {
            (Vec::new(), None)
        } else if let Some(ann) = ann {
            let ef = (2 * depth).max(ANN_EF);
            let found = ann.search(&query, &self.vectors, ef, &accept);
            (found, Some(self.sample(&query, &accept)))
        } else {
            (self.scan(&query, &accept), None)
        };
        // Statistics for the z-scores: all accepted chunks, or a sample of them under HNSW,
        // pooled with the prior (for the query's script) when there is one.
        let stats = sample.as_deref().unwrap_or(&sims);
        let vector_top = top_n(sims.iter().copied(), 2);
        let prior = self
            .prior
            .as_ref()
            .map(|p| (p, usize::from(is_mostly_arabic(query_text))));
        let ranking_prior = prior.filter(|_| options.prior_in_ranking);
        let params = self.z_params(stats, options.balance_scripts, ranking_prior);
        let by_script = self.z_params(stats, true, prior);
        let vector_list = if options.balance_scripts {
            top_n(
                sims.iter().map(|s| Scored(self.z(&params, s.1, s.0), s.1)),
                depth,
            )
        } else {
            top_n(sims.iter().copied(), depth)
        };
        let lexical_all = if options.mode == Mode::VectorOnly {
            Vec::new()
        } else {
            self.bm25.score_all(&prepared, &accept)
        };
        let lexical_list = top_n(
            lexical_all.iter().map(|&(slot, s, _)| Scored(s, slot)),
            depth,
        );

        let v_slots: Vec<u32> = vector_list.iter().map(|s| s.1).collect();
        let l_slots: Vec<u32> = lexical_list.iter().map(|s| s.1).collect();
        let bm25_norm = |score: f32| {
            if prepared.ceiling > 0.0 {
                score / prepared.ceiling
            } else {
                0.0
            }
        };
        let fused = match (options.mode, options.fusion) {
            (Mode::VectorOnly, _) => fusion::rrf(&[&v_slots, &[]], options.rrf_k),
            (Mode::LexicalOnly, _) => fusion::rrf(&[&[], &l_slots], options.rrf_k),
            (Mode::Hybrid, Fusion::Rrf) => fusion::rrf(&[&v_slots, &l_slots], options.rrf_k),
            (Mode::Hybrid, Fusion::EvidenceRrf) => {
                let v: Vec<(u32, f32)> = v_slots.iter().map(|&s| (s, 1.0)).collect();
                let l: Vec<(u32, f32)> = lexical_list
                    .iter()
                    .map(|s| (s.1, (2.0 * bm25_norm(s.0)).min(1.0)))
                    .collect();
                fusion::weighted_rrf(&[&v, &l], options.rrf_k)
            }
            (Mode::Hybrid, Fusion::Scores { lexical }) => {
                let mut candidates: Vec<u32> = v_slots.iter().chain(&l_slots).copied().collect();
                candidates.sort_unstable();
                candidates.dedup();
                let mut scored: Vec<(u32, f32, Vec<Option<u32>>)> = candidates
                    .into_iter()
                    .map(|slot| {
                        let sim = self.vectors.similarity(&query, slot as usize);
                        let (bm25, _) = self.bm25.score_one(&prepared, slot);
                        let score = self.z(&params, slot, sim) + lexical * bm25_norm(bm25);
                        let rank =
                            |l: &[u32]| l.iter().position(|&s| s == slot).map(|p| p as u32 + 1);
                        (slot, score, vec![rank(&v_slots), rank(&l_slots)])
                    })
                    .collect();
                scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                scored
            }
        };

        let hits = fused
            .into_iter()
            .take(top_k)
            .enumerate()
            .map(|(i, (slot, score, ranks))| {
                let meta = self.slots[slot as usize];
                let (bm25, terms_matched) = self.bm25.score_one(&prepared, slot);
                let vector_sim = self.vectors.similarity(&query, slot as usize);
                Hit {
                    chunk_id: meta.chunk_id,
                    document_id: self.names.name(meta.document).clone(),
                    collection: self.names.name(meta.collection).clone(),
                    rank: i + 1,
                    score,
                    vector_sim,
                    vector_z: self.z(&by_script, slot, vector_sim),
                    bm25,
                    vector_rank: ranks.first().copied().flatten(),
                    bm25_rank: ranks.get(1).copied().flatten(),
                    terms_matched,
                }
            })
            .collect();

        let top5 = |l: &[u32]| l.iter().take(5).copied().collect::<Vec<_>>();
        let (v5, l5) = (top5(&v_slots), top5(&l_slots));
        // Out of what the lists could share: fewer than 5 filtered chunks cannot fill a top 5.
        let overlap = v5.iter().filter(|s| l5.contains(s)).count() as f32 / v5.len().max(1) as f32;
        let best_z = sims
            .iter()
            .map(|s| Scored(self.z(&by_script, s.1, s.0), s.1))
            .max();
        Ok(SearchResults {
            hits,
            vector_top: vector_top.iter().map(|s| s.0).collect(),
            vector_top_z: best_z.map_or(0.0, |s| s.0),
            vector_top_baseline: best_z.map_or(0.0, |s| {
                by_script[usize::from(self.slots[s.1 as usize].arabic)].0 as f32
            }),
            vector_candidates: stats.len(),
            bm25_top: lexical_list.first().map_or(0.0, |s| s.0),
            bm25_ceiling: prepared.ceiling,
            query_terms: prepared.distinct_terms,
            list_overlap: overlap,
        })
    }

    /// The cosine of every accepted slot, in slot order. Above `PARALLEL_SCAN` slots the scan is
    /// split over the available cores (scoped threads; the results are identical).
    fn scan(
        &self,
        query: &(Vec<i8>, f32),
        accept: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<Scored> {
        let n = self.slots.len();
        let range = |lo: usize, hi: usize| -> Vec<Scored> {
            (lo..hi)
                .filter(|&slot| accept(slot))
                .map(|slot| Scored(self.vectors.similarity(query, slot), slot as u32))
                .collect()
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(8);
        if n < PARALLEL_SCAN || threads < 2 {
            return range(0, n);
        }
        let per = n.div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let range = &range;
                    scope.spawn(move || range(t * per, ((t + 1) * per).min(n)))
                })
                .collect();
            let mut out = Vec::with_capacity(n);
            for h in handles {
                // A panicking scan thread is a bug; its slots are then simply not ranked.
                out.extend(h.join().unwrap_or_default());
            }
            out
        })
    }

    /// Cosines of an evenly spaced sample of about `Z_SAMPLE` accepted slots.
    fn sample(&self, query: &(Vec<i8>, f32), accept: &impl Fn(usize) -> bool) -> Vec<Scored> {
        let step = (self.slots.len() / Z_SAMPLE).max(1);
        (0..self.slots.len())
            .step_by(step)
            .filter(|&slot| accept(slot))
            .map(|slot| Scored(self.vectors.similarity(query, slot), slot as u32))
            .collect()
    }

    /// Mean and standard deviation of the similarities, per script (index 1 = Arabic) when
    /// `by_script`, else one pair for all (stored in both places). With a prior (and the query's
    /// script, 0 = other, 1 = Arabic) and `by_script`, each script's moments are pooled with
    /// `weight` virtual chunks distributed as the prior: mean = (Σx + k·μ) / (n + k), variance =
    /// (Σx² + k·(σ² + μ²)) / (n + k) − mean².
    fn z_params(
        &self,
        sims: &[Scored],
        by_script: bool,
        prior: Option<(&ScorePrior, usize)>,
    ) -> [(f64, f64); 2] {
        // [script] -> (count, sum, sum of squares), in f64 so 10^5 terms lose nothing.
        let mut stats = [(0f64, 0f64, 0f64); 2];
        for s in sims {
            let g = if by_script {
                usize::from(self.slots[s.1 as usize].arabic)
            } else {
                0
            };
            let x = f64::from(s.0);
            stats[g].0 += 1.0;
            stats[g].1 += x;
            stats[g].2 += x * x;
        }
        if !by_script {
            stats[1] = stats[0];
        } else if let Some((p, query)) = prior {
            for (g, st) in stats.iter_mut().enumerate() {
                let (mu, sd) = p.cosine[query.min(1)][g];
                st.0 += p.weight;
                st.1 += p.weight * mu;
                st.2 += p.weight * (sd * sd + mu * mu);
            }
        }
        stats.map(|(n, sum, sq)| {
            let n = if n > 0.0 { n } else { 1.0 };
            let mean = sum / n;
            let sd = (sq / n - mean * mean).max(0.0).sqrt();
            (mean, if sd > 1e-6 { sd } else { 1.0 })
        })
    }

    /// A similarity as a z-score on its script's scale.
    fn z(&self, params: &[(f64, f64); 2], slot: u32, sim: f32) -> f32 {
        let (mean, sd) = params[usize::from(self.slots[slot as usize].arabic)];
        ((f64::from(sim) - mean) / sd) as f32
    }

    /// The filter as a slot predicate; `None` if it names a tenant or collections never seen.
    fn acceptor<'s>(&'s self, filter: &'s Filter<'s>) -> Option<impl Fn(usize) -> bool + 's> {
        let tenant = match filter.tenant {
            Some(t) => Some(self.names.get(t)?),
            None => None,
        };
        let collections: Option<Vec<u32>> = match filter.collections {
            Some(cs) => {
                let ids: Vec<u32> = cs.iter().filter_map(|c| self.names.get(c)).collect();
                if ids.is_empty() {
                    return None;
                }
                Some(ids)
            }
            None => None,
        };
        Some(move |slot: usize| {
            let s = &self.slots[slot];
            s.alive
                && tenant.is_none_or(|t| s.tenant == t)
                && collections
                    .as_ref()
                    .is_none_or(|cs| cs.contains(&s.collection))
                && filter.predicate.is_none_or(|p| {
                    p(&ChunkMeta {
                        chunk_id: s.chunk_id,
                        tenant: self.names.name(s.tenant),
                        collection: self.names.name(s.collection),
                        document_id: self.names.name(s.document),
                    })
                })
        })
    }
}

#[cfg(test)]
mod tests;

//! What a search is asked (`Filter` and the `ChunkMeta` its predicate sees, `Mode`,
//! `SearchOptions`, `Fusion`) and what it answers (`Hit`, `SearchResults`).

use std::sync::Arc;

use super::RRF_K;

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
    /// With `Fusion::Scores`: added × the lead of the document holding the largest share of the
    /// names the query matches in the searched documents' headers over the next one, to that
    /// document's chunks (`Index::set_document_header`; 0 turns the entity rule off). The chunks of the document the query's names point at also become candidates, best
    /// first, when neither ranking had them; and words naming a searched document leave the BM25
    /// ranking (not the figures confidence reads) — a paragraph repeating the bank's name is not
    /// more about the asked topic.
    pub entity_weight: f32,
}

/// The default `SearchOptions::entity_weight`, chosen on the tuning part of the entity evaluation
/// (`eval/entities/`, crate README).
pub const ENTITY_WEIGHT: f32 = 4.0;

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
            entity_weight: ENTITY_WEIGHT,
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
    /// The chunk's document's share of the names the query matched in the searched documents'
    /// headers (0–1; 0 when the query names none).
    pub entity_share: f32,
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
    /// The largest share of the query's name evidence one searched document holds (0 when the
    /// query names no searched document's header; see `Hit::entity_share`).
    pub entity_best: f32,
    /// How far that document's share leads the next one's: near 1 when the query's names point
    /// at one document, 0 when they are words every header has ("Bank").
    pub entity_lead: f32,
    /// Words of the query that look like a name (`names::name_like_words`).
    pub name_words: u16,
    /// Of them, those found neither in a searched document's header nor in a searched chunk: the
    /// query asks about something the library does not hold.
    pub unknown_names: u16,
}

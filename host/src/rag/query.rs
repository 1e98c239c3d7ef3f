//! Retrieval: the query embedded with the built-in model, one collection of the team (or all of
//! them) searched (vector + BM25, fused), the answerability confidence computed from the
//! calibrated model (and the entity rule), and the hits joined with their stored text into citations.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value};
use sovereign_retrieval::confidence::{Calibration, Features, with_entities};
use sovereign_retrieval::index::ChunkMeta;
use sovereign_retrieval::{Filter, Hit, SearchResults};

use super::{Library, RagError, blocking, read};

/// Most citations a query may ask for.
pub const MAX_TOP_K: usize = 50;

/// Conditions on the documents a query may cite (all must hold).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// Only these documents.
    #[serde(default)]
    pub document_ids: Option<Vec<String>>,
    /// Only documents whose metadata has each of these keys with exactly this value.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

impl Filters {
    fn is_empty(&self) -> bool {
        self.document_ids.is_none() && self.metadata.is_none()
    }
}

/// A retrieval query, already validated by the HTTP layer.
#[derive(Debug, Clone)]
pub struct Query {
    pub team_id: String,
    pub text: String,
    /// One collection of the team, or `None`: all of them.
    pub collection: Option<String>,
    pub top_k: usize,
    pub filters: Filters,
    /// Citations below this confidence are left out.
    pub min_confidence: f64,
}

/// One cited chunk.
#[derive(Debug, Clone)]
pub struct Citation {
    pub document_id: String,
    pub filename: String,
    /// 1-based page (PDF), else `None`.
    pub page: Option<u32>,
    /// The first paragraph the chunk draws on (1-based).
    pub paragraph: u32,
    pub chunk_id: u64,
    pub text: String,
    /// The `/v1/files` file the document was made from (vector stores), and its metadata.
    pub file_id: Option<String>,
    pub metadata: Map<String, Value>,
    /// The fused rank score (its order is what matters).
    pub score: f32,
    pub confidence: f64,
}

/// What a query found.
#[derive(Debug, Clone)]
pub struct Retrieved {
    /// How likely it is that the collection answers the query at all (0–1).
    pub confidence: f64,
    pub citations: Vec<Citation>,
    /// Tokens the model read for the query (usage).
    pub query_tokens: u64,
}

impl Library {
    pub async fn search(&self, query: Query) -> Result<Retrieved, RagError> {
        let embedder = self.embedder()?.clone();
        // Filters become an allow-list of the team's documents, from the catalogue in memory.
        let allowed: Option<HashSet<String>> = (!query.filters.is_empty()).then(|| {
            let catalogue = read(&self.catalogue);
            catalogue
                .iter()
                .filter(|(id, e)| {
                    e.team_id == query.team_id
                        && query
                            .filters
                            .document_ids
                            .as_ref()
                            .is_none_or(|ids| ids.iter().any(|d| d == *id))
                        && query
                            .filters
                            .metadata
                            .as_ref()
                            .is_none_or(|m| m.iter().all(|(k, v)| e.metadata.get(k) == Some(v)))
                })
                .map(|(id, _)| id.clone())
                .collect()
        });
        let index = self.index.clone();
        let (text, team, collection, top_k) = (
            query.text.clone(),
            query.team_id.clone(),
            query.collection.clone(),
            query.top_k,
        );
        let (mut vectors, query_tokens) = embedder
            .queries_for(&query.team_id, vec![text.clone()])
            .await?;
        let vector = vectors.pop().unwrap_or_default();
        let results = blocking(move || {
            let one = collection.as_deref().map(|c| [c]);
            let predicate = |meta: &ChunkMeta<'_>| {
                allowed
                    .as_ref()
                    .is_none_or(|a| a.contains(meta.document_id))
            };
            let filter = Filter {
                tenant: Some(&team),
                collections: one.as_ref().map(<[&str; 1]>::as_slice),
                // Asked of every chunk the scan reads: only when there is something to ask.
                predicate: allowed
                    .is_some()
                    .then_some(&predicate as &(dyn Fn(&ChunkMeta<'_>) -> bool + Sync)),
            };
            let index = read(&index);
            let results = index
                .search(&vector, &text, top_k, &filter)
                .map_err(|e| RagError::Worker(format!("searching: {e}")))?;
            Ok(results)
        })
        .await?;

        let confidence = query_confidence(self.calibration, &results);
        let ids: Vec<u64> = results.hits.iter().map(|h| h.chunk_id).collect();
        let stored: HashMap<u64, _> = self
            .store
            .chunks(ids)
            .await?
            .into_iter()
            .map(|c| (c.id, c))
            .collect();
        let catalogue = read(&self.catalogue);
        let citations = results
            .hits
            .iter()
            .filter_map(|hit| {
                // A chunk deleted meanwhile is simply not cited.
                let chunk = stored.get(&hit.chunk_id)?;
                let entry = catalogue.get(&*hit.document_id)?;
                let confidence = hit_confidence(self.calibration, &results, hit).min(confidence);
                (confidence >= query.min_confidence).then(|| Citation {
                    document_id: hit.document_id.to_string(),
                    filename: entry.filename.clone(),
                    page: chunk.page,
                    paragraph: chunk.paragraph,
                    chunk_id: hit.chunk_id,
                    text: chunk.text.clone(),
                    file_id: entry.file_id.clone(),
                    metadata: entry.metadata.clone(),
                    score: hit.score,
                    confidence,
                })
            })
            .collect();
        Ok(Retrieved {
            confidence,
            citations,
            query_tokens,
        })
    }
}

/// The calibrated probability that the collection answers the query (0.5 without a calibration
/// for this model file: "unknown", said loudly at start), lowered by the entity rule when the
/// query names something the searched documents do not hold or the best hit is not from the
/// document it names (`confidence::with_entities`).
fn query_confidence(calibration: Option<&Calibration>, results: &SearchResults) -> f64 {
    if results.hits.is_empty() {
        return 0.0;
    }
    let p = calibration.map_or(0.5, |c| {
        c.logistic.predict(&Features::from_results(results))
    });
    with_entities(p, results)
}

/// The same calibrated model applied to one citation's own evidence (`Features::for_hit`: its
/// cosine, its z-score, its lead over the other hits, its BM25 share and matched terms), with the
/// query-level list overlap. The caller caps it at the query's confidence: a citation is never
/// surer than the question is answerable.
fn hit_confidence(calibration: Option<&Calibration>, results: &SearchResults, hit: &Hit) -> f64 {
    calibration.map_or(0.5, |c| {
        c.logistic.predict(&Features::for_hit(results, hit))
    })
}

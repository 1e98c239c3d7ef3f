//! A search: the filter made a slot predicate, the vector side (an exact scan, on several threads
//! above `PARALLEL_SCAN` slots, or the HNSW walk with a sample for the statistics), the BM25 side,
//! their fusion (`Fusion`), and the hits with the query-level figures `confidence` reads.

use super::fusion;
use super::query::{ChunkMeta, Filter, Fusion, Hit, Mode, SearchOptions, SearchResults};
use super::rank::{Scored, top_n};
use super::{Index, IndexError};
use crate::normalize::{is_mostly_arabic, normalize, terms};

/// Candidates the HNSW walk keeps (at least; twice the ranking depth when that is more).
const ANN_EF: usize = 128;

/// Slots sampled for the per-script statistics when the HNSW graph answers.
const Z_SAMPLE: usize = 4096;

/// Slots above which the vector scan runs on several threads (see the crate README for the
/// measurement behind it).
pub(super) const PARALLEL_SCAN: usize = 20_000;

impl Index {
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
    pub(super) fn scan(
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

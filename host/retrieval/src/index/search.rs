//! A search: the filter made a slot predicate, the vector side (an exact scan, on several threads
//! above `PARALLEL_SCAN` slots, or the HNSW walk with a sample for the statistics), the BM25 side,
//! their fusion (`Fusion`), and the hits with the query-level figures `confidence` reads.

use super::fusion;
use super::query::{ChunkMeta, Filter, Fusion, Hit, Mode, SearchOptions, SearchResults};
use super::rank::{Scored, top_n};
use super::vectors::VectorStore;
use super::{Index, IndexError};
use crate::names::{MIN_SKELETON, name_like_words, skeleton};
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

        // The entity rule (`entities`): the searched documents' headers against the query.
        let document_searched = |d: u32| {
            self.by_document
                .get(&d)
                .is_some_and(|slots| slots.iter().any(|&s| accept(s as usize)))
        };
        let name_words = name_like_words(query_text);
        let entity =
            self.entities
                .match_query(query_text, &name_words, &document_searched, &|w: &str| {
                    self.bm25.occurs(w, &accept)
                });
        // A name too short for a skeleton key ("Eid", "Amyal" for أميال) cannot be matched
        // across scripts, so it is not known to be missing either.
        let unknown_names = name_words
            .iter()
            .filter(|w| {
                skeleton(w).chars().count() >= MIN_SKELETON
                    && !self.entities.names_a_document(w, &document_searched)
                    && !self.bm25.occurs(w, &accept)
            })
            .count();
        let entity_weight = match (options.mode, options.fusion) {
            (Mode::Hybrid, Fusion::Scores { .. }) => options.entity_weight.max(0.0),
            _ => 0.0,
        };
        // The document the query's names identify, if any (the entity rule on). Its chunks, and
        // every other, are then ranked on their vectors embedded after their document's title when
        // the index has them (`Index::context`): the title makes a paragraph deep in the document
        // about the named organisation. Other queries rank on the chunks embedded alone: with the
        // title, short chunks of unrelated documents drifted toward the question's language and
        // cost cross-language hits on the original evaluation (crate README).
        let leader = entity.leader().filter(|_| entity_weight > 0.0);
        let contextual = leader.and(self.context.as_ref());
        let store = contextual.unwrap_or(&self.vectors);
        // A single-list mode skips the other side's scan (its figures in the results are empty).
        let ann = self
            .ann
            .as_ref()
            .filter(|_| !options.exact_vectors && options.mode != Mode::LexicalOnly)
            // The graph is over the chunks embedded alone.
            .filter(|_| contextual.is_none())
            .filter(|_| (0..self.slots.len()).filter(|&s| accept(s)).count() * 5 >= self.len());
        let (sims, sample) = if options.mode == Mode::LexicalOnly {
            (Vec::new(), None)
        } else if let Some(ann) = ann {
            let ef = (2 * depth).max(ANN_EF);
            let found = ann.search(&query, &self.vectors, ef, &accept);
            (found, Some(self.sample(&query, &accept)))
        } else {
            (self.scan(store, &query, &accept), None)
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
        let moments = self.moments(stats);
        let params = Self::z_params(&moments, options.balance_scripts, ranking_prior);
        let by_script = Self::z_params(&moments, true, prior);
        let vector_list = if options.balance_scripts {
            top_n(
                sims.iter().map(|s| Scored(self.z(&params, s.1, s.0), s.1)),
                depth,
            )
        } else {
            top_n(sims.iter().copied(), depth)
        };
        // Words naming a searched document are the entity rule's evidence, not the lexical
        // ranking's: a paragraph that repeats the bank's name is not more about the asked topic.
        // (The figures confidence reads keep every term: the calibration was fitted on them.)
        let topical = (entity_weight > 0.0 && !entity.share.is_empty())
            .then(|| {
                let kept: Vec<&str> = terms
                    .iter()
                    .copied()
                    .filter(|t| !entity.words.iter().any(|w| w == t))
                    .collect();
                (kept.len() < terms.len()).then(|| self.bm25.prepare(&kept))
            })
            .flatten();
        let ranking = topical.as_ref().unwrap_or(&prepared);
        // The BM25 ranking of the whole query (confidence's figures) and the one fusion ranks on
        // (without the words that named a document, when any did): one pass over the postings.
        let (lexical_list, ranking_list) = match (&topical, options.mode) {
            (_, Mode::VectorOnly) => (Vec::new(), Vec::new()),
            (None, _) => {
                let all = self.bm25.score_all(&prepared, &accept);
                let list = top_n(all.iter().map(|&(slot, s, _)| Scored(s, slot)), depth);
                (list.clone(), list)
            }
            (Some(topical), _) => {
                let all = self.bm25.score_all_with_part(&prepared, topical, &accept);
                (
                    top_n(all.iter().map(|&(slot, s, _, _)| Scored(s, slot)), depth),
                    top_n(
                        all.iter()
                            .filter(|a| a.3 > 0.0)
                            .map(|&(slot, _, _, t)| Scored(t, slot)),
                        depth,
                    ),
                )
            }
        };

        let v_slots: Vec<u32> = vector_list.iter().map(|s| s.1).collect();
        let l_slots: Vec<u32> = ranking_list.iter().map(|s| s.1).collect();
        // The best chunks of the document the query names, in case neither ranking had them.
        // Its chunks are found through the document's own slot list (not a pass over every
        // chunk's cosine), which also works under HNSW, where `sims` holds only what the walk met.
        let named: Vec<u32> = match leader.and_then(|document| self.by_document.get(&document)) {
            Some(slots) => top_n(
                slots.iter().filter(|&&s| accept(s as usize)).map(|&s| {
                    let sim = store.similarity(&query, s as usize);
                    Scored(self.z(&params, s, sim), s)
                }),
                depth,
            )
            .iter()
            .map(|s| s.1)
            .collect(),
            None => Vec::new(),
        };
        let bm25_norm = |score: f32| {
            if ranking.ceiling > 0.0 {
                score / ranking.ceiling
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
                let l: Vec<(u32, f32)> = ranking_list
                    .iter()
                    .map(|s| (s.1, (2.0 * bm25_norm(s.0)).min(1.0)))
                    .collect();
                fusion::weighted_rrf(&[&v, &l], options.rrf_k)
            }
            (Mode::Hybrid, Fusion::Scores { lexical }) => {
                let mut candidates: Vec<u32> = v_slots
                    .iter()
                    .chain(&l_slots)
                    .chain(&named)
                    .copied()
                    .collect();
                candidates.sort_unstable();
                candidates.dedup();
                let mut scored: Vec<(u32, f32, Vec<Option<u32>>)> = candidates
                    .into_iter()
                    .map(|slot| {
                        let sim = store.similarity(&query, slot as usize);
                        let (bm25, _) = self.bm25.score_one(ranking, slot);
                        let boost = entity.boost(self.slots[slot as usize].document);
                        let score = self.z(&params, slot, sim)
                            + lexical * bm25_norm(bm25)
                            + entity_weight * boost;
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
                let vector_sim = store.similarity(&query, slot as usize);
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
                    entity_share: entity.share(meta.document),
                }
            })
            .collect();

        let top5 = |l: &[u32]| l.iter().take(5).copied().collect::<Vec<_>>();
        let full: Vec<u32> = lexical_list.iter().map(|s| s.1).collect();
        let (v5, l5) = (top5(&v_slots), top5(&full));
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
            entity_best: entity.best(),
            entity_lead: entity.lead(),
            name_words: u16::try_from(name_words.len()).unwrap_or(u16::MAX),
            unknown_names: u16::try_from(unknown_names).unwrap_or(u16::MAX),
        })
    }

    /// The cosine of every accepted slot in `store` (the chunks alone or after their title), in
    /// slot order. Above `PARALLEL_SCAN` slots the scan is
    /// split over the available cores (the first part on the calling thread, the others on scoped
    /// threads; the results are identical).
    pub(super) fn scan(
        &self,
        store: &VectorStore,
        query: &(Vec<i8>, f32),
        accept: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<Scored> {
        let n = self.slots.len();
        let range = |lo: usize, hi: usize| -> Vec<Scored> {
            let mut out = Vec::with_capacity(hi.saturating_sub(lo));
            store.similarities(query, lo..hi, accept, |slot, sim| {
                out.push(Scored(sim, slot as u32));
            });
            out
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(8);
        if n < PARALLEL_SCAN || threads < 2 {
            return range(0, n);
        }
        let per = n.div_ceil(threads);
        std::thread::scope(|scope| {
            // The first part on this thread, the others on threads of their own.
            let handles: Vec<_> = (1..threads)
                .map(|t| {
                    let range = &range;
                    scope.spawn(move || range(t * per, ((t + 1) * per).min(n)))
                })
                .collect();
            let mut out = range(0, per.min(n));
            out.reserve(n - out.len());
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

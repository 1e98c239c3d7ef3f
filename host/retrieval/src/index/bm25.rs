//! The lexical side of the index: an inverted index of normalised terms with Okapi BM25 scoring
//! (k1 = 1.2, b = 0.75). Postings are (slot, term frequency) in slot order, 5 bytes each.

use std::collections::HashMap;

const K1: f32 = 1.2;
const B: f32 = 0.75;

#[derive(Debug, Clone, Default)]
struct Postings {
    slots: Vec<u32>,
    tfs: Vec<u8>,
}

/// The lexical index. Slots are appended in increasing order (the index's slot numbers).
#[derive(Debug, Clone, Default)]
pub(crate) struct Bm25 {
    terms: HashMap<Box<str>, u32>,
    postings: Vec<Postings>,
    doc_len: Vec<u32>,
    /// Live documents and their total length (deleted slots are subtracted at once).
    live_docs: u32,
    live_len: u64,
}

/// A query's terms resolved against the index: (term id, idf), duplicates removed.
#[derive(Debug, Clone, Default)]
pub(crate) struct PreparedQuery {
    terms: Vec<(u32, f32)>,
    /// Distinct query terms, found in the index or not.
    pub(crate) distinct_terms: usize,
    /// Σ idf × (k1 + 1): the bound a document's BM25 approaches; normalises scores to [0, 1).
    pub(crate) ceiling: f32,
}

impl Bm25 {
    /// Adds the next slot's terms (the slot number must be `self.doc_len.len()`).
    pub(crate) fn push(&mut self, terms: &[&str]) {
        let slot = self.doc_len.len() as u32;
        // Term ids, then counted by sorting integers (cheaper than a map per chunk).
        let mut ids: Vec<u32> = terms
            .iter()
            .map(|&term| match self.terms.get(term) {
                Some(&id) => id,
                None => {
                    let id = self.postings.len() as u32;
                    self.terms.insert(term.into(), id);
                    self.postings.push(Postings::default());
                    id
                }
            })
            .collect();
        ids.sort_unstable();
        let mut counts: Vec<(u32, u32)> = Vec::new();
        for id in ids {
            match counts.last_mut() {
                Some((last, n)) if *last == id => *n += 1,
                _ => counts.push((id, 1)),
            }
        }
        for (id, tf) in counts {
            let p = &mut self.postings[id as usize];
            p.slots.push(slot);
            p.tfs.push(u8::try_from(tf).unwrap_or(u8::MAX));
        }
        let len = terms.len() as u32;
        self.doc_len.push(len);
        self.live_docs += 1;
        self.live_len += u64::from(len);
    }

    /// A slot was deleted: it no longer counts in the length statistics.
    pub(crate) fn forget(&mut self, slot: usize) {
        self.live_docs = self.live_docs.saturating_sub(1);
        self.live_len = self.live_len.saturating_sub(u64::from(self.doc_len[slot]));
    }

    fn avg_len(&self) -> f32 {
        if self.live_docs == 0 {
            1.0
        } else {
            (self.live_len as f32 / self.live_docs as f32).max(1.0)
        }
    }

    pub(crate) fn prepare(&self, terms: &[&str]) -> PreparedQuery {
        let mut seen: Vec<&str> = Vec::new();
        let mut resolved = Vec::new();
        let n = self.live_docs as f32;
        for t in terms {
            if seen.contains(t) {
                continue;
            }
            seen.push(t);
            if let Some(&id) = self.terms.get(*t) {
                // Document frequency counts deleted slots until the next compaction.
                let df = self.postings[id as usize].slots.len() as f32;
                let idf = (1.0 + (n - df + 0.5).max(0.0) / (df + 0.5)).ln();
                resolved.push((id, idf));
            }
        }
        let ceiling = resolved.iter().map(|(_, idf)| idf * (K1 + 1.0)).sum();
        PreparedQuery {
            terms: resolved,
            distinct_terms: seen.len(),
            ceiling,
        }
    }

    /// Whether `term` occurs in a slot `accept` accepts.
    pub(crate) fn occurs(&self, term: &str, accept: impl Fn(usize) -> bool) -> bool {
        self.terms.get(term).is_some_and(|&id| {
            self.postings[id as usize]
                .slots
                .iter()
                .any(|&s| accept(s as usize))
        })
    }

    /// Scores every slot containing a query term: (slot, score, terms matched), unordered.
    /// `accept` filters slots (live, tenant, collection, predicate); it is asked once per slot.
    pub(crate) fn score_all(
        &self,
        query: &PreparedQuery,
        mut accept: impl FnMut(usize) -> bool,
    ) -> Vec<(u32, f32, u16)> {
        let avg = self.avg_len();
        // Dense accumulators: a posting list of a common term touches a large share of the slots,
        // where a hash map per posting costs several times more than these two arrays.
        let mut scores = vec![0f32; self.doc_len.len()];
        let mut matched = vec![0u16; self.doc_len.len()];
        let mut touched = Vec::new();
        for &(id, idf) in &query.terms {
            let p = &self.postings[id as usize];
            for (&slot, &tf) in p.slots.iter().zip(&p.tfs) {
                let i = slot as usize;
                if matched[i] == 0 {
                    touched.push(slot);
                }
                scores[i] += idf * self.tf_part(tf, slot, avg);
                matched[i] += 1;
            }
        }
        touched
            .into_iter()
            .filter(|&slot| accept(slot as usize))
            .map(|slot| (slot, scores[slot as usize], matched[slot as usize]))
            .collect()
    }

    /// `score_all`, each slot also with its score from `part`'s terms alone (a subset of
    /// `query`'s, prepared by the same index: the same idf per term), in one pass over the
    /// postings: (slot, score, terms matched, score of `part`). The entity rule ranks on the query
    /// without the words that named a document, and confidence reads the whole query's figures.
    pub(crate) fn score_all_with_part(
        &self,
        query: &PreparedQuery,
        part: &PreparedQuery,
        mut accept: impl FnMut(usize) -> bool,
    ) -> Vec<(u32, f32, u16, f32)> {
        let avg = self.avg_len();
        let n = self.doc_len.len();
        let (mut scores, mut partial) = (vec![0f32; n], vec![0f32; n]);
        let mut matched = vec![0u16; n];
        let mut touched = Vec::new();
        for &(id, idf) in &query.terms {
            let in_part = part.terms.iter().any(|&(p, _)| p == id);
            let p = &self.postings[id as usize];
            for (&slot, &tf) in p.slots.iter().zip(&p.tfs) {
                let i = slot as usize;
                if matched[i] == 0 {
                    touched.push(slot);
                }
                let score = idf * self.tf_part(tf, slot, avg);
                scores[i] += score;
                if in_part {
                    partial[i] += score;
                }
                matched[i] += 1;
            }
        }
        touched
            .into_iter()
            .filter(|&slot| accept(slot as usize))
            .map(|slot| {
                let i = slot as usize;
                (slot, scores[i], matched[i], partial[i])
            })
            .collect()
    }

    /// The BM25 score and terms matched of one slot (for hits found only by the vector side).
    pub(crate) fn score_one(&self, query: &PreparedQuery, slot: u32) -> (f32, u16) {
        let avg = self.avg_len();
        let mut score = 0.0;
        let mut matched = 0;
        for &(id, idf) in &query.terms {
            let p = &self.postings[id as usize];
            if let Ok(i) = p.slots.binary_search(&slot) {
                score += idf * self.tf_part(p.tfs[i], slot, avg);
                matched += 1;
            }
        }
        (score, matched)
    }

    fn tf_part(&self, tf: u8, slot: u32, avg: f32) -> f32 {
        let tf = f32::from(tf);
        let len = self.doc_len[slot as usize] as f32;
        tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg))
    }

    /// Keeps only the slots for which `keep` is true and renumbers them (compaction).
    pub(crate) fn retain(&mut self, keep: &[bool]) {
        let mut new_slot = vec![u32::MAX; keep.len()];
        let mut next = 0u32;
        for (slot, &k) in keep.iter().enumerate() {
            if k {
                new_slot[slot] = next;
                next += 1;
            }
        }
        for p in &mut self.postings {
            let mut w = 0;
            for r in 0..p.slots.len() {
                let ns = new_slot[p.slots[r] as usize];
                if ns != u32::MAX {
                    p.slots[w] = ns;
                    p.tfs[w] = p.tfs[r];
                    w += 1;
                }
            }
            p.slots.truncate(w);
            p.tfs.truncate(w);
        }
        let mut slot = 0;
        self.doc_len.retain(|_| {
            let k = keep[slot];
            slot += 1;
            k
        });
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.slots.capacity() * 4 + p.tfs.capacity() + std::mem::size_of::<Postings>())
            .sum();
        let terms: usize = self.terms.keys().map(|k| k.len() + 16 + 8).sum();
        postings + terms + self.doc_len.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    fn ranked(index: &Bm25, q: &str) -> Vec<u32> {
        let prepared = index.prepare(&terms(q));
        let mut scored = index.score_all(&prepared, |_| true);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.into_iter().map(|(s, _, _)| s).collect()
    }

    #[test]
    fn a_part_of_the_query_is_scored_in_the_same_pass_as_a_query_of_its_own() {
        let mut index = Bm25::default();
        index.push(&terms("northgate card fee"));
        index.push(&terms("card fee replaced"));
        index.push(&terms("northgate dormant account"));
        index.push(&terms("harbor loan"));
        let whole = index.prepare(&terms("northgate card fee"));
        let part = index.prepare(&terms("card fee"));
        let both = index.score_all_with_part(&whole, &part, |s| s != 1);
        let alone = index.score_all(&whole, |s| s != 1);
        let of_part = index.score_all(&part, |s| s != 1);
        assert_eq!(both.len(), alone.len());
        for (slot, score, matched, partial) in both {
            let a = alone.iter().find(|a| a.0 == slot).copied();
            assert_eq!(a, Some((slot, score, matched)));
            let p = of_part.iter().find(|p| p.0 == slot).map_or(0.0, |p| p.1);
            assert!((partial - p).abs() < 1e-6, "slot {slot}: {partial} vs {p}");
        }
    }

    #[test]
    fn rare_terms_outweigh_common_ones_and_scores_match_the_formula() {
        let mut index = Bm25::default();
        index.push(&terms("loan rate loan"));
        index.push(&terms("loan card"));
        index.push(&terms("card limit"));
        assert_eq!(ranked(&index, "limit card"), [2, 1]);
        assert_eq!(ranked(&index, "loan")[0], 0);
        // Hand computation for slot 0, query "rate": N=3, df=1, idf=ln(1+2.5/1.5),
        // avgdl = 7/3, len 3, tf 1.
        let idf = (1.0f32 + 2.5 / 1.5).ln();
        let want = idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * 3.0 / (7.0 / 3.0)));
        let got = index.score_one(&index.prepare(&terms("rate")), 0);
        assert!((got.0 - want).abs() < 1e-5, "{got:?} vs {want}");
        assert_eq!(got.1, 1);
    }

    #[test]
    fn terms_matched_and_the_ceiling_bound_scores() {
        let mut index = Bm25::default();
        index.push(&terms("alpha beta gamma"));
        index.push(&terms("delta"));
        let q = index.prepare(&terms("alpha beta beta zeta"));
        assert_eq!(q.distinct_terms, 3);
        let (score, matched) = index.score_one(&q, 0);
        assert_eq!(matched, 2);
        assert!(score > 0.0 && score < q.ceiling);
    }

    #[test]
    fn retain_renumbers_postings() {
        let mut index = Bm25::default();
        index.push(&terms("a b"));
        index.push(&terms("b c"));
        index.push(&terms("c d"));
        index.forget(0);
        index.retain(&[false, true, true]);
        let mut c = ranked(&index, "c");
        c.sort_unstable();
        assert_eq!(c, [0, 1]);
        assert_eq!(ranked(&index, "d"), [1]);
        assert_eq!(ranked(&index, "a"), Vec::<u32>::new());
    }
}

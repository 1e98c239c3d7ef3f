//! An HNSW graph (Malkov & Yashunin 2016) over the index's int8 vectors, for approximate vector
//! search in large indexes: nodes are slots, similarity is the quantised cosine. Search takes the
//! index's filter: rejected and deleted slots are walked through but never returned. Neighbours
//! are the closest candidates (no diversity heuristic); parameters are fixed (M 16, M0 32,
//! ef_construction 64).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::rank::Scored;
use super::vectors::VectorStore;

const M: usize = 16;
const M0: usize = 32;
const EF_CONSTRUCTION: usize = 64;

#[derive(Debug, Clone, Default)]
pub(crate) struct Hnsw {
    /// node -> level -> neighbours.
    links: Vec<Vec<Vec<u32>>>,
    entry: Option<u32>,
    top: usize,
    rng: u64,
}

impl Hnsw {
    pub(crate) fn new() -> Self {
        Self {
            rng: 0x9E37_79B9_7F4A_7C15,
            ..Self::default()
        }
    }

    fn random_level(&mut self) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let u = ((self.rng >> 11) as f64 / (1u64 << 53) as f64).max(1e-12);
        ((-u.ln()) / (M as f64).ln()).floor().min(16.0) as usize
    }

    /// Adds slot `node` (must be the next slot: `node == self.len()`).
    pub(crate) fn insert(&mut self, node: u32, vectors: &VectorStore) {
        let level = self.random_level();
        self.links.push(vec![Vec::new(); level + 1]);
        let Some(mut entry) = self.entry else {
            self.entry = Some(node);
            self.top = level;
            return;
        };
        let sim = |other: u32| vectors.similarity_between(node as usize, other as usize);
        for l in (level + 1..=self.top).rev() {
            entry = self.greedy(entry, l, &sim);
        }
        let mut entries = vec![entry];
        for l in (0..=level.min(self.top)).rev() {
            let found = self.search_layer(&entries, EF_CONSTRUCTION, l, &sim, &|_| true);
            let max = if l == 0 { M0 } else { M };
            let chosen: Vec<u32> = found.iter().take(M).map(|s| s.1).collect();
            for &n in &chosen {
                let list = &mut self.links[n as usize][l];
                list.push(node);
                if list.len() > max {
                    let mut scored: Vec<Scored> = list
                        .iter()
                        .map(|&x| Scored(vectors.similarity_between(n as usize, x as usize), x))
                        .collect();
                    scored.sort_by(|a, b| b.cmp(a));
                    *list = scored.into_iter().take(max).map(|s| s.1).collect();
                }
            }
            self.links[node as usize][l] = chosen;
            entries = found.iter().map(|s| s.1).collect();
        }
        if level > self.top {
            self.top = level;
            self.entry = Some(node);
        }
    }

    fn greedy(&self, mut at: u32, level: usize, sim: &impl Fn(u32) -> f32) -> u32 {
        let mut best = sim(at);
        loop {
            let mut moved = false;
            for &n in &self.links[at as usize][level] {
                let s = sim(n);
                if s > best {
                    best = s;
                    at = n;
                    moved = true;
                }
            }
            if !moved {
                return at;
            }
        }
    }

    /// The best `ef` accepted nodes reachable at `level` from `entries`, best first.
    fn search_layer(
        &self,
        entries: &[u32],
        ef: usize,
        level: usize,
        sim: &impl Fn(u32) -> f32,
        accept: &impl Fn(usize) -> bool,
    ) -> Vec<Scored> {
        let mut visited = vec![false; self.links.len()];
        let mut candidates: BinaryHeap<Scored> = BinaryHeap::new();
        let mut results: BinaryHeap<Reverse<Scored>> = BinaryHeap::new();
        for &e in entries {
            if !visited[e as usize] {
                visited[e as usize] = true;
                let s = Scored(sim(e), e);
                candidates.push(s);
                if accept(e as usize) {
                    results.push(Reverse(s));
                }
            }
        }
        while let Some(c) = candidates.pop() {
            if results.len() >= ef
                && let Some(Reverse(worst)) = results.peek()
                && c.0 < worst.0
            {
                break;
            }
            for &n in &self.links[c.1 as usize][level] {
                if visited[n as usize] {
                    continue;
                }
                visited[n as usize] = true;
                let s = Scored(sim(n), n);
                let worst = results.peek().map_or(f32::MIN, |r| r.0.0);
                if results.len() < ef || s.0 > worst {
                    candidates.push(s);
                    if accept(n as usize) {
                        results.push(Reverse(s));
                        if results.len() > ef {
                            results.pop();
                        }
                    }
                }
            }
        }
        let mut out: Vec<Scored> = results.into_iter().map(|Reverse(s)| s).collect();
        out.sort_by(|a, b| b.cmp(a));
        out
    }

    /// The best `ef` accepted slots for the prepared query, best first.
    pub(crate) fn search(
        &self,
        query: &(Vec<i8>, f32),
        vectors: &VectorStore,
        ef: usize,
        accept: &impl Fn(usize) -> bool,
    ) -> Vec<Scored> {
        let Some(mut entry) = self.entry else {
            return Vec::new();
        };
        let sim = |n: u32| vectors.similarity(query, n as usize);
        for l in (1..=self.top).rev() {
            entry = self.greedy(entry, l, &sim);
        }
        self.search_layer(&[entry], ef, 0, &sim, accept)
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.links
            .iter()
            .map(|levels| {
                levels.iter().map(|l| l.capacity() * 4 + 24).sum::<usize>() + levels.capacity() * 24
            })
            .sum::<usize>()
            + self.links.capacity() * 24
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_store(n: usize, dim: usize) -> VectorStore {
        let mut s: u64 = 42;
        let mut store = VectorStore::new(dim);
        for _ in 0..n {
            let v: Vec<f32> = (0..dim)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            store
                .push(&v.iter().map(|x| x / norm).collect::<Vec<_>>())
                .unwrap();
        }
        store
    }

    #[test]
    fn recall_at_10_against_exact_search() {
        let (n, dim) = (1500, 32);
        let store = random_store(n, dim);
        let mut graph = Hnsw::new();
        for i in 0..n {
            graph.insert(i as u32, &store);
        }
        let mut found = 0;
        let queries = 30;
        for q in 0..queries {
            // Query: a stored vector itself, like a near-duplicate question.
            let row: Vec<f32> = (0..dim)
                .map(|d| if d == q % dim { 1.0 } else { 0.1 })
                .collect();
            let prepared = store.prepare(&row).unwrap();
            let mut exact: Vec<Scored> = (0..n)
                .map(|s| Scored(store.similarity(&prepared, s), s as u32))
                .collect();
            exact.sort_by(|a, b| b.cmp(a));
            let approx = graph.search(&prepared, &store, 64, &|_| true);
            let top: Vec<u32> = approx.iter().take(10).map(|s| s.1).collect();
            found += exact.iter().take(10).filter(|s| top.contains(&s.1)).count();
        }
        let recall = found as f64 / (10 * queries) as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    #[test]
    fn filtered_search_returns_only_accepted_slots() {
        let store = random_store(2000, 16);
        let mut graph = Hnsw::new();
        for i in 0..2000 {
            graph.insert(i, &store);
        }
        let q = store.prepare(&[0.25; 16]).unwrap();
        let hits = graph.search(&q, &store, 40, &|s| s % 4 == 1);
        assert_eq!(hits.len(), 40);
        assert!(hits.iter().all(|h| h.1 % 4 == 1));
        assert!(hits.windows(2).all(|w| w[0] >= w[1]));
    }
}

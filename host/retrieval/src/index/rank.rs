//! Ranking order: a slot with its score, ordered by score then lower slot (`Scored`), and the best
//! `n` of a list (`top_n`); the exact scan and the HNSW walk rank with them alike.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A scored slot ordered by score (total order on f32), then by lower slot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Scored(pub(super) f32, pub(super) u32);
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
pub(super) fn top_n(items: impl Iterator<Item = Scored>, n: usize) -> Vec<Scored> {
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

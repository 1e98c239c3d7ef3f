//! Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): a candidate's fused score is
//! Σ 1 / (k + rank) over the ranked lists it appears in (ranks 1-based), so agreement between the
//! vector and the lexical ranking lifts a chunk without comparing their incomparable scores.

use std::collections::HashMap;

/// The constant of the original paper; larger values flatten the head of each list.
pub const RRF_K: f32 = 60.0;

/// Fuses ranked lists of slots into one: (slot, fused score, rank in each list), best first; ties
/// broken by the slot's best single rank, then by slot for determinism.
pub(crate) fn rrf(lists: &[&[u32]], k: f32) -> Vec<(u32, f32, Vec<Option<u32>>)> {
    let weighted: Vec<Vec<(u32, f32)>> = lists
        .iter()
        .map(|l| l.iter().map(|&s| (s, 1.0)).collect())
        .collect();
    let refs: Vec<&[(u32, f32)]> = weighted.iter().map(Vec::as_slice).collect();
    weighted_rrf(&refs, k)
}

/// RRF where each entry carries a weight in [0, 1]: its contribution is weight / (k + rank).
/// (The index weights a BM25 entry by how much of the query it matches, so a list made of
/// stop-word-level matches cannot outvote the vector ranking.)
pub(crate) fn weighted_rrf(lists: &[&[(u32, f32)]], k: f32) -> Vec<(u32, f32, Vec<Option<u32>>)> {
    let mut fused: HashMap<u32, (f32, Vec<Option<u32>>)> = HashMap::new();
    for (l, list) in lists.iter().enumerate() {
        for (i, &(slot, weight)) in list.iter().enumerate() {
            let rank = i as u32 + 1;
            let e = fused
                .entry(slot)
                .or_insert_with(|| (0.0, vec![None; lists.len()]));
            e.0 += weight / (k + rank as f32);
            e.1[l] = Some(rank);
        }
    }
    let mut out: Vec<_> = fused
        .into_iter()
        .map(|(s, (score, ranks))| (s, score, ranks))
        .collect();
    out.sort_by(|a, b| {
        let best = |r: &[Option<u32>]| r.iter().flatten().min().copied().unwrap_or(u32::MAX);
        b.1.total_cmp(&a.1)
            .then_with(|| best(&a.2).cmp(&best(&b.2)))
            .then_with(|| a.0.cmp(&b.0))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_beats_a_single_first_place() {
        // 7 is 2nd in both lists; 1 is first in one list only.
        let fused = rrf(&[&[1, 7, 3], &[5, 7, 9]], RRF_K);
        assert_eq!(fused[0].0, 7);
        assert!((fused[0].1 - 2.0 / 62.0).abs() < 1e-6);
        assert_eq!(fused[0].2, vec![Some(2), Some(2)]);
    }

    #[test]
    fn ties_are_broken_by_best_rank_then_slot() {
        let fused = rrf(&[&[4, 2], &[3, 1]], RRF_K);
        let order: Vec<u32> = fused.iter().map(|f| f.0).collect();
        assert_eq!(order, [3, 4, 1, 2]);
        assert_eq!(fused[2].2, vec![None, Some(2)]);
    }

    #[test]
    fn weights_scale_each_contribution() {
        let fused = weighted_rrf(&[&[(1, 1.0), (2, 1.0)], &[(2, 0.1), (1, 0.1)]], RRF_K);
        assert_eq!(fused[0].0, 1);
        assert!((fused[0].1 - (1.0 / 61.0 + 0.1 / 62.0)).abs() < 1e-6);
    }

    #[test]
    fn a_single_list_keeps_its_order() {
        let fused = rrf(&[&[9, 8, 7]], RRF_K);
        let order: Vec<u32> = fused.iter().map(|f| f.0).collect();
        assert_eq!(order, [9, 8, 7]);
    }
}

//! RFC 9162 Merkle tree hashing (§2.1.1), inclusion and consistency proofs built from stored
//! subtree hashes (§2.1.3.1, §2.1.4.1) and their verification (§2.1.3.2, §2.1.4.2). Pure
//! functions over a [`Nodes`] source: the log's files in production, a vector in tests.

use std::collections::HashMap;

use sha2::{Digest as _, Sha256};

/// A SHA-256 hash.
pub type Hash = [u8; 32];

/// `SHA-256(0x00 || leaf)`.
pub fn leaf_hash(leaf: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    h.finalize().into()
}

/// `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: `SHA-256()`.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Where the hashes of complete subtrees come from: `node(level, index)` is the root of the
/// subtree over leaves `[index·2^level, (index+1)·2^level)`, level 0 being the leaf hashes.
pub trait Nodes {
    fn node(&self, level: u32, index: u64) -> std::io::Result<Hash>;
}

/// The largest power of two strictly below `n` (n ≥ 2).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// Hashes of the ranges a proof needs, each read or computed once per proof.
struct Ranges<'a, N: Nodes + ?Sized> {
    nodes: &'a N,
    memo: HashMap<(u64, u64), Hash>,
}

impl<N: Nodes + ?Sized> Ranges<'_, N> {
    /// MTH of leaves `[lo, hi)` (hi > lo): one stored read when the range is a complete,
    /// aligned subtree, else split as RFC 9162 splits. Only ranges ending at a proof's tree size
    /// are ever incomplete, so a proof reads O(log n) stored hashes.
    fn mth(&mut self, lo: u64, hi: u64) -> std::io::Result<Hash> {
        let n = hi - lo;
        if n.is_power_of_two() && lo.is_multiple_of(n) {
            return self.nodes.node(n.trailing_zeros(), lo / n);
        }
        if let Some(h) = self.memo.get(&(lo, hi)) {
            return Ok(*h);
        }
        let k = split(n);
        let h = node_hash(&self.mth(lo, lo + k)?, &self.mth(lo + k, hi)?);
        self.memo.insert((lo, hi), h);
        Ok(h)
    }

    /// PATH(m, D[lo:hi]), leaf side first.
    fn path(&mut self, m: u64, lo: u64, hi: u64, out: &mut Vec<Hash>) -> std::io::Result<()> {
        if hi - lo <= 1 {
            return Ok(());
        }
        let k = split(hi - lo);
        if m < lo + k {
            self.path(m, lo, lo + k, out)?;
            out.push(self.mth(lo + k, hi)?);
        } else {
            self.path(m, lo + k, hi, out)?;
            out.push(self.mth(lo, lo + k)?);
        }
        Ok(())
    }

    /// SUBPROOF(m, D[lo:hi], b).
    fn subproof(
        &mut self,
        m: u64,
        lo: u64,
        hi: u64,
        whole: bool,
        out: &mut Vec<Hash>,
    ) -> std::io::Result<()> {
        let n = hi - lo;
        if m == n {
            if !whole {
                out.push(self.mth(lo, hi)?);
            }
            return Ok(());
        }
        let k = split(n);
        if m <= k {
            self.subproof(m, lo, lo + k, whole, out)?;
            out.push(self.mth(lo + k, hi)?);
        } else {
            self.subproof(m - k, lo + k, hi, false, out)?;
            out.push(self.mth(lo, lo + k)?);
        }
        Ok(())
    }
}

fn ranges<N: Nodes + ?Sized>(nodes: &N) -> Ranges<'_, N> {
    Ranges {
        nodes,
        memo: HashMap::new(),
    }
}

/// The root of the tree of the first `size` leaves.
pub fn root<N: Nodes + ?Sized>(nodes: &N, size: u64) -> std::io::Result<Hash> {
    if size == 0 {
        return Ok(empty_root());
    }
    ranges(nodes).mth(0, size)
}

/// The inclusion proof of leaf `index` in the tree of the first `size` leaves (index < size).
pub fn inclusion_proof<N: Nodes + ?Sized>(
    nodes: &N,
    index: u64,
    size: u64,
) -> std::io::Result<Vec<Hash>> {
    let mut out = Vec::with_capacity(64);
    if index < size {
        ranges(nodes).path(index, 0, size, &mut out)?;
    }
    Ok(out)
}

/// The consistency proof between the trees of the first `from` and `to` leaves
/// (1 ≤ from ≤ to; empty when equal).
pub fn consistency_proof<N: Nodes + ?Sized>(
    nodes: &N,
    from: u64,
    to: u64,
) -> std::io::Result<Vec<Hash>> {
    let mut out = Vec::with_capacity(64);
    if from >= 1 && from < to {
        ranges(nodes).subproof(from, 0, to, true, &mut out)?;
    }
    Ok(out)
}

/// RFC 9162 §2.1.3.2: the root that `path` leads to from `leaf` at `index` in a tree of `size`
/// leaves, or `None` when the path cannot belong to such a tree (wrong length, index ≥ size).
pub fn root_from_inclusion(leaf: &Hash, index: u64, size: u64, path: &[Hash]) -> Option<Hash> {
    if index >= size {
        return None;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if sn == 0 {
            return None;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    (sn == 0).then_some(r)
}

/// RFC 9162 §2.1.4.2: whether `proof` shows the tree of `from` leaves with root `root1` is a
/// prefix of the tree of `to` leaves with root `root2`. `from == to` takes an empty proof and
/// equal roots; `from == 0` is not a proof this log gives.
pub fn verify_consistency(from: u64, to: u64, root1: &Hash, root2: &Hash, proof: &[Hash]) -> bool {
    if from == 0 || from > to {
        return false;
    }
    if from == to {
        return proof.is_empty() && root1 == root2;
    }
    if proof.is_empty() {
        return false;
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if from.is_power_of_two() {
        path.push(*root1);
    }
    path.extend_from_slice(proof);
    let (mut fn_, mut sn) = (from - 1, to - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (path[0], path[0]);
    for c in &path[1..] {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    fr == *root1 && sr == *root2 && sn == 0
}

/// An in-memory tree: every level of complete subtrees (the same layout the log keeps on disk).
/// Tests and the vectors use it; so does `sovereign journal` when it rebuilds a tree from an
/// export.
#[derive(Debug, Default, Clone)]
pub struct MemoryTree {
    levels: Vec<Vec<Hash>>,
}

impl MemoryTree {
    pub fn push(&mut self, leaf: Hash) {
        let mut h = leaf;
        let mut level = 0;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            self.levels[level].push(h);
            let len = self.levels[level].len();
            if len % 2 == 1 {
                return;
            }
            h = node_hash(&self.levels[level][len - 2], &self.levels[level][len - 1]);
            level += 1;
        }
    }

    pub fn size(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }
}

impl Nodes for MemoryTree {
    fn node(&self, level: u32, index: u64) -> std::io::Result<Hash> {
        self.levels
            .get(level as usize)
            .and_then(|l| l.get(index as usize))
            .copied()
            .ok_or_else(|| std::io::Error::other(format!("no node {level}/{index}")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    /// The tree straight from RFC 9162's definition, for comparison.
    fn reference_mth(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => empty_root(),
            1 => leaves[0],
            n => {
                let k = split(n as u64) as usize;
                node_hash(&reference_mth(&leaves[..k]), &reference_mth(&leaves[k..]))
            }
        }
    }

    fn tree(n: u64) -> (MemoryTree, Vec<Hash>) {
        let mut t = MemoryTree::default();
        let leaves: Vec<Hash> = (0..n)
            .map(|i| leaf_hash(format!("leaf-{i}").as_bytes()))
            .collect();
        for l in &leaves {
            t.push(*l);
        }
        (t, leaves)
    }

    #[test]
    fn roots_match_the_definition_and_proofs_verify() {
        let (t, leaves) = tree(70);
        for size in 1..=70u64 {
            let root_n = root(&t, size).unwrap();
            assert_eq!(root_n, reference_mth(&leaves[..size as usize]), "{size}");
            for index in 0..size {
                let p = inclusion_proof(&t, index, size).unwrap();
                assert!(p.len() <= 64 - (size - 1).leading_zeros() as usize);
                let got = root_from_inclusion(&leaves[index as usize], index, size, &p);
                assert_eq!(got, Some(root_n), "{index}/{size}");
                // A wrong index or size does not lead to the root.
                if size > 1 {
                    let other = (index + 1) % size;
                    assert_ne!(
                        root_from_inclusion(&leaves[index as usize], other, size, &p),
                        Some(root_n)
                    );
                }
            }
            for from in 1..=size {
                let p = consistency_proof(&t, from, size).unwrap();
                let r1 = root(&t, from).unwrap();
                assert!(
                    verify_consistency(from, size, &r1, &root_n, &p),
                    "{from}/{size}"
                );
                if from < size {
                    let mut bad = p.clone();
                    bad[0][0] ^= 1;
                    assert!(!verify_consistency(from, size, &r1, &root_n, &bad));
                    assert!(!verify_consistency(from, size, &root_n, &root_n, &p));
                    assert!(!verify_consistency(from, size, &r1, &root_n, &p[1..]));
                }
            }
        }
    }

    #[test]
    fn ct_reference_roots() {
        // RFC 6962's reference leaves (certificate-transparency's merkle tree tests).
        let leaves = [
            "",
            "00",
            "10",
            "2021",
            "3031",
            "40414243",
            "5051525354555657",
            "606162636465666768696a6b6c6d6e6f",
        ];
        let mut t = MemoryTree::default();
        for l in leaves {
            t.push(leaf_hash(&hex::decode(l).unwrap()));
        }
        assert_eq!(
            hex::encode(root(&t, 8).unwrap()),
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
        );
        assert_eq!(
            hex::encode(root(&t, 1).unwrap()),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
        assert_eq!(
            hex::encode(empty_root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}

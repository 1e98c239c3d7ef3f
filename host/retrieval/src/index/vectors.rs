//! Vector storage of the index: int8 quantisation (one scale per vector; 4× smaller than f32,
//! cosine error below 0.01 at 384 dims), the f32 byte encoding the host's store keeps, and the
//! exact dot-product scan.

use super::dot::{dot_i8, dot_rows};

/// Why a vector could not be decoded or used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VectorError {
    #[error("a vector of {got} dimensions where the index holds {want}")]
    Dimensions { got: usize, want: usize },
    #[error("vector bytes of length {0} are not a whole number of little-endian f32 values")]
    Bytes(usize),
    #[error("the vector has a non-finite component")]
    NotFinite,
}

/// The store's encoding of a vector: its f32 components, little-endian (4 bytes each). Exact (the
/// index quantises on load), so a changed quantisation never needs a re-embed.
pub fn vector_to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Decodes `vector_to_bytes`.
pub fn vector_from_bytes(bytes: &[u8]) -> Result<Vec<f32>, VectorError> {
    if !bytes.len().is_multiple_of(4) {
        return Err(VectorError::Bytes(bytes.len()));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// A vector quantised to int8 with one scale: `x[i] ≈ q[i] * scale`.
pub(crate) fn quantize(vector: &[f32], out: &mut Vec<i8>) -> Result<f32, VectorError> {
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(VectorError::NotFinite);
    }
    let max = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    out.extend(
        vector
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    Ok(scale)
}

/// Quantised vectors in one contiguous buffer, `dim` bytes per slot, plus each slot's scale.
#[derive(Debug, Clone)]
pub(crate) struct VectorStore {
    dim: usize,
    data: Vec<i8>,
    scales: Vec<f32>,
}

impl VectorStore {
    pub(crate) fn new(dim: usize) -> Self {
        Self {
            dim,
            data: Vec::new(),
            scales: Vec::new(),
        }
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.scales.len()
    }

    pub(crate) fn check(&self, vector: &[f32]) -> Result<(), VectorError> {
        if vector.len() != self.dim {
            return Err(VectorError::Dimensions {
                got: vector.len(),
                want: self.dim,
            });
        }
        Ok(())
    }

    /// Appends a vector; its slot is the previous `len()`.
    pub(crate) fn push(&mut self, vector: &[f32]) -> Result<(), VectorError> {
        self.check(vector)?;
        let scale = quantize(vector, &mut self.data)?;
        self.scales.push(scale);
        Ok(())
    }

    /// Appends a copy of `from`'s slot `slot` (a store of the same dimensions).
    pub(crate) fn push_copy(&mut self, from: &VectorStore, slot: usize) {
        self.data
            .extend_from_slice(&from.data[slot * from.dim..(slot + 1) * from.dim]);
        self.scales.push(from.scales[slot]);
    }

    /// The query in the store's form.
    pub(crate) fn prepare(&self, vector: &[f32]) -> Result<(Vec<i8>, f32), VectorError> {
        self.check(vector)?;
        let mut q = Vec::with_capacity(self.dim);
        let scale = quantize(vector, &mut q)?;
        Ok((q, scale))
    }

    /// Approximate cosine of the prepared query with slot `slot`.
    #[inline]
    pub(crate) fn similarity(&self, query: &(Vec<i8>, f32), slot: usize) -> f32 {
        let row = &self.data[slot * self.dim..(slot + 1) * self.dim];
        dot_i8(&query.0, row) as f32 * query.1 * self.scales[slot]
    }

    /// `out(slot, cosine)` for every slot in `slots` that `want` accepts, in order: the exact
    /// scan's loop.
    pub(crate) fn similarities(
        &self,
        query: &(Vec<i8>, f32),
        slots: std::ops::Range<usize>,
        want: impl Fn(usize) -> bool,
        mut out: impl FnMut(usize, f32),
    ) {
        let (lo, hi) = (slots.start, slots.end.min(self.scales.len()));
        if lo >= hi {
            return;
        }
        let rows = &self.data[lo * self.dim..hi * self.dim];
        let scales = &self.scales[lo..hi];
        dot_rows(
            &query.0,
            rows,
            |i| want(lo + i),
            |i, d| out(lo + i, d as f32 * query.1 * scales[i]),
        );
    }

    /// Approximate cosine between two stored slots.
    #[inline]
    pub(crate) fn similarity_between(&self, a: usize, b: usize) -> f32 {
        let ra = &self.data[a * self.dim..(a + 1) * self.dim];
        let rb = &self.data[b * self.dim..(b + 1) * self.dim];
        dot_i8(ra, rb) as f32 * self.scales[a] * self.scales[b]
    }

    /// Keeps only the slots for which `keep` is true, in order (compaction).
    pub(crate) fn retain(&mut self, keep: &[bool]) {
        let dim = self.dim;
        let mut write = 0;
        for (slot, &k) in keep.iter().enumerate() {
            if k {
                if write != slot {
                    self.data
                        .copy_within(slot * dim..(slot + 1) * dim, write * dim);
                    self.scales[write] = self.scales[slot];
                }
                write += 1;
            }
        }
        self.data.truncate(write * dim);
        self.scales.truncate(write);
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.data.capacity() + self.scales.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32, dim: usize) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        let v: Vec<f32> = (0..dim)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32) - 0.5
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    #[test]
    fn bytes_round_trip_is_exact() {
        let v = unit(7, 384);
        let bytes = vector_to_bytes(&v);
        assert_eq!(bytes.len(), 384 * 4);
        assert_eq!(vector_from_bytes(&bytes), Ok(v));
        assert_eq!(vector_from_bytes(&[0, 1, 2]), Err(VectorError::Bytes(3)));
    }

    #[test]
    fn quantised_cosine_stays_within_a_hundredth() {
        let mut store = VectorStore::new(384);
        let vs: Vec<Vec<f32>> = (0..50).map(|i| unit(i, 384)).collect();
        for v in &vs {
            store.push(v).unwrap();
        }
        for (i, q) in vs.iter().enumerate().take(10) {
            let prepared = store.prepare(q).unwrap();
            for (slot, v) in vs.iter().enumerate() {
                let exact: f32 = q.iter().zip(v).map(|(a, b)| a * b).sum();
                let approx = store.similarity(&prepared, slot);
                assert!(
                    (exact - approx).abs() < 0.01,
                    "{i},{slot}: {exact} vs {approx}"
                );
            }
        }
    }

    #[test]
    fn wrong_dimensions_and_non_finite_values_are_refused() {
        let mut store = VectorStore::new(4);
        assert!(matches!(
            store.push(&[1.0; 3]),
            Err(VectorError::Dimensions { got: 3, want: 4 })
        ));
        assert_eq!(
            store.push(&[1.0, f32::NAN, 0.0, 0.0]),
            Err(VectorError::NotFinite)
        );
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn retain_compacts_in_order() {
        let mut store = VectorStore::new(384);
        let vs: Vec<Vec<f32>> = (0..4).map(|i| unit(i, 384)).collect();
        for v in &vs {
            store.push(v).unwrap();
        }
        store.retain(&[true, false, false, true]);
        assert_eq!(store.len(), 2);
        let q = store.prepare(&vs[3]).unwrap();
        assert!(store.similarity(&q, 1) > 0.99);
    }
}

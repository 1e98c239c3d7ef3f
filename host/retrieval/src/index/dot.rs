//! The int8 dot product every vector comparison runs on: AVX2 when the CPU has it (checked at run
//! time; the shipped binary targets baseline x86-64, whose SSE2 has no 8-to-16-bit widening
//! load), the portable loop otherwise. Both are exact in i32 for any input, so their results are
//! identical.
#![expect(
    unsafe_code,
    reason = "x86 intrinsics behind a run-time CPU check; each block has a SAFETY note"
)]

/// `Σ a[i]·b[i]` over the shorter of the two slices' common length (callers pass equal lengths).
#[inline]
pub(crate) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked on the line above), which is all `avx2::dot`
        // requires; it reads only within both slices.
        return unsafe { avx2::dot(a, b) };
    }
    portable(a, b)
}

/// `out(i, a·row_i)` for each row `i` of `rows` (`a.len()` bytes each) that `want(i)` accepts,
/// in order: the scan's loop, in one AVX2 function when the CPU has it, so the kernel is inlined
/// into it rather than called per row.
#[inline]
pub(crate) fn dot_rows(
    a: &[i8],
    rows: &[i8],
    want: impl Fn(usize) -> bool,
    mut out: impl FnMut(usize, i32),
) {
    let dim = a.len().max(1);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked on the line above), which is all
        // `avx2::dot_rows` requires; it reads only within both slices.
        return unsafe { avx2::dot_rows(a, rows, want, out) };
    }
    for (i, row) in rows.chunks_exact(dim).enumerate() {
        if want(i) {
            out(i, portable(a, row));
        }
    }
}

/// The plain loop, written so LLVM vectorises it with what the target has.
fn portable(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let chunks_a = a.chunks_exact(16);
    let chunks_b = b.chunks_exact(16);
    let tail: i32 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for i in 0..16 {
            acc[i] += i32::from(ca[i]) * i32::from(cb[i]);
        }
    }
    acc.iter().sum::<i32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
        _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16, _mm256_extracti128_si256,
        _mm256_madd_epi16, _mm256_setzero_si256,
    };

    /// [`super::dot_rows`] with the kernel inlined.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dot_rows(
        a: &[i8],
        rows: &[i8],
        want: impl Fn(usize) -> bool,
        mut out: impl FnMut(usize, i32),
    ) {
        for (i, row) in rows.chunks_exact(a.len().max(1)).enumerate() {
            if want(i) {
                // SAFETY: AVX2 is this function's own target feature.
                out(i, unsafe { dot(a, row) });
            }
        }
    }

    /// 16 lanes at a time: sign-extend each side to i16 (`vpmovsxbw`), multiply and add pairs
    /// into i32 (`vpmaddwd`: at most 2·128² per lane, no overflow), accumulate; two accumulators
    /// so consecutive adds do not wait on each other.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn dot(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (mut acc0, mut acc1) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n`, so both 16-byte loads at `i` and `i + 16` lie inside both
            // slices; `loadu` has no alignment requirement.
            let (a0, b0, a1, b1) = unsafe {
                let pa = a.as_ptr().add(i).cast::<__m128i>();
                let pb = b.as_ptr().add(i).cast::<__m128i>();
                (
                    _mm_loadu_si128(pa),
                    _mm_loadu_si128(pb),
                    _mm_loadu_si128(pa.add(1)),
                    _mm_loadu_si128(pb.add(1)),
                )
            };
            acc0 = _mm256_add_epi32(
                acc0,
                _mm256_madd_epi16(_mm256_cvtepi8_epi16(a0), _mm256_cvtepi8_epi16(b0)),
            );
            acc1 = _mm256_add_epi32(
                acc1,
                _mm256_madd_epi16(_mm256_cvtepi8_epi16(a1), _mm256_cvtepi8_epi16(b1)),
            );
            i += 32;
        }
        let acc: __m256i = _mm256_add_epi32(acc0, acc1);
        let half = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let quarter = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
        let one = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b10_11_00_01>(quarter));
        let sum = _mm_cvtsi128_si32(one);
        if i == n {
            sum
        } else {
            sum + super::portable(&a[i..n], &b[i..n])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(a: &[i8], b: &[i8]) -> i32 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum()
    }

    #[test]
    fn both_kernels_match_the_plain_sum_at_every_length_and_extreme() {
        let mut s = 0x9e37_79b9u32;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s as i8
        };
        for len in (0..70).chain([384, 385, 1024]) {
            let a: Vec<i8> = (0..len).map(|_| next()).collect();
            let b: Vec<i8> = (0..len).map(|_| next()).collect();
            assert_eq!(dot_i8(&a, &b), plain(&a, &b), "len {len}");
            assert_eq!(portable(&a, &b), plain(&a, &b), "len {len}");
        }
        // The extremes: -128 · -128 in every lane, the largest sum a lane pair can reach.
        let min = vec![i8::MIN; 384];
        assert_eq!(dot_i8(&min, &min), 384 * 128 * 128);
        let max = vec![i8::MAX; 384];
        assert_eq!(dot_i8(&min, &max), -384 * 128 * 127);
    }

    #[test]
    fn rows_are_scanned_in_order_and_only_those_wanted() {
        let dim = 40;
        let a: Vec<i8> = (0..dim).map(|i| (i * 3 % 255) as i8).collect();
        let rows: Vec<i8> = (0..dim * 7).map(|i| (i * 11 % 255) as i8).collect();
        let mut got = Vec::new();
        dot_rows(&a, &rows, |i| i != 2, |i, d| got.push((i, d)));
        let want: Vec<(usize, i32)> = rows
            .chunks_exact(dim)
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(i, r)| (i, plain(&a, r)))
            .collect();
        assert_eq!(got, want);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_avx2_kernel_alone_matches_the_plain_sum() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let a: Vec<i8> = (0..384).map(|i| (i % 251) as i8).collect();
        let b: Vec<i8> = (0..384).map(|i| (i * 7 % 253) as i8).collect();
        // SAFETY: AVX2 checked above.
        let fast = unsafe { avx2::dot(&a, &b) };
        assert_eq!(fast, plain(&a, &b));
    }
}

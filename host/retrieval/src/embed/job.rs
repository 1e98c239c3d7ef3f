//! One embedding request cut into model windows, run a batch at a time: [`EmbedJob`] holds every
//! text's windows (e5 sees at most 512 positions, `<s>` and `</s>` included: a longer text is
//! split, without overlap, as the vendored engine did), the order they run in (longest first, so a
//! batch pads little) and the per-text sums the windows' mean vectors add into, weighted by their
//! content tokens. A caller that runs the job step by step (`E5Model::step`) can stop between two
//! batches, which is how the host's scheduler cancels work nobody waits for and lets interactive
//! work overtake bulk work.

/// One window: the text it belongs to and its token ids, `<s>` and `</s>` included.
#[derive(Debug)]
pub(crate) struct Window {
    pub(crate) text: usize,
    pub(crate) ids: Vec<i32>,
}

impl Window {
    /// What the window's vector weighs in its text's mean: its content tokens (at least 1).
    fn weight(&self) -> f32 {
        self.ids.len().saturating_sub(2).max(1) as f32
    }
}

/// Texts being embedded: windows still to run and what the finished ones added up to.
#[derive(Debug)]
pub struct EmbedJob {
    windows: Vec<Window>,
    /// Indices into `windows`, longest first; `next` is the first not yet run.
    order: Vec<usize>,
    next: usize,
    sums: Vec<Vec<f32>>,
    weights: Vec<f32>,
    tokens: u64,
    longest_text: u64,
}

impl EmbedJob {
    /// A job over `contents` (each text's content token ids, prefix included, no specials):
    /// windows of at most `positions - 2` content tokens each, framed by `bos` and `eos`.
    pub(crate) fn new(
        contents: Vec<Vec<i32>>,
        positions: usize,
        (bos, eos): (i32, i32),
        dim: usize,
    ) -> Self {
        let per_window = positions.saturating_sub(2).max(1);
        let mut windows = Vec::new();
        let mut tokens = 0u64;
        let mut longest_text = 0u64;
        for (text, content) in contents.iter().enumerate() {
            tokens += content.len() as u64 + 2;
            longest_text = longest_text.max(content.len() as u64 + 2);
            let mut pieces: Vec<&[i32]> = content.chunks(per_window).collect();
            if pieces.is_empty() {
                pieces.push(&[]);
            }
            for piece in pieces {
                let mut ids = Vec::with_capacity(piece.len() + 2);
                ids.push(bos);
                ids.extend_from_slice(piece);
                ids.push(eos);
                windows.push(Window { text, ids });
            }
        }
        let mut order: Vec<usize> = (0..windows.len()).collect();
        // Longest first, ties in input order: deterministic batches.
        order.sort_by_key(|&i| std::cmp::Reverse(windows[i].ids.len()));
        Self {
            windows,
            order,
            next: 0,
            sums: vec![vec![0.0; dim]; contents.len()],
            weights: vec![0.0; contents.len()],
            tokens,
            longest_text,
        }
    }

    /// The tokens of the longest text (as [`EmbedJob::tokens`] counts them).
    pub fn longest_text_tokens(&self) -> u64 {
        self.longest_text
    }

    /// Tokens the model reads for these texts, as usage counts them: each text's content and
    /// `<s>`/`</s>`, once (not once per window).
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Windows in the job.
    pub fn windows(&self) -> usize {
        self.windows.len()
    }

    /// Windows still to run.
    pub fn windows_left(&self) -> usize {
        self.order.len() - self.next
    }

    /// Whether every window has run.
    pub fn is_done(&self) -> bool {
        self.next >= self.order.len()
    }

    /// The next batch: windows whose padded size (count × longest) stays within `max_tokens`
    /// (always at least one window). Returns their indices; `None` when the job is done.
    pub(crate) fn next_batch(&self, max_tokens: usize) -> Option<&[usize]> {
        let rest = self.order.get(self.next..).filter(|r| !r.is_empty())?;
        // Longest first, so the first window of the batch sets the padded length.
        let longest = self.windows[rest[0]].ids.len().max(1);
        let count = (max_tokens / longest).clamp(1, rest.len());
        Some(&rest[..count])
    }

    pub(crate) fn window(&self, index: usize) -> &Window {
        &self.windows[index]
    }

    /// Adds the pooled (mean, unnormalised) vectors of the batch `next_batch` returned.
    pub(crate) fn absorb(&mut self, batch_len: usize, pooled: &[f32]) {
        let dim = self.sums.first().map_or(0, Vec::len);
        let end = (self.next + batch_len).min(self.order.len());
        for (slot, &w) in self.order[self.next..end].iter().enumerate() {
            let window = &self.windows[w];
            let weight = window.weight();
            let row = pooled.get(slot * dim..(slot + 1) * dim).unwrap_or(&[]);
            for (sum, x) in self.sums[window.text].iter_mut().zip(row) {
                *sum += weight * x;
            }
            self.weights[window.text] += weight;
        }
        self.next = end;
    }

    /// The texts' vectors, L2-normalised, in input order.
    pub fn finish(self) -> Vec<Vec<f32>> {
        self.sums
            .into_iter()
            .zip(self.weights)
            .map(|(mut v, w)| {
                let inv = if w > 0.0 { 1.0 / w } else { 1.0 };
                v.iter_mut().for_each(|x| *x *= inv);
                let norm = v.iter().map(|x| x * x).sum::<f32>().max(1e-12).sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_split_into_framed_windows_without_overlap() {
        let job = EmbedJob::new(vec![(10..21).collect(), vec![]], 6, (0, 2), 3);
        // 11 content tokens, 4 per window: 3 windows; the empty text still gets one.
        assert_eq!(job.windows(), 4);
        assert_eq!(job.tokens(), 11 + 2 + 2);
        let first = job.next_batch(6).map(<[usize]>::to_vec).unwrap_or_default();
        assert_eq!(first.len(), 1, "one 6-token window fills a 6-token budget");
        assert_eq!(job.window(first[0]).ids, vec![0, 10, 11, 12, 13, 2]);
        let all = job.next_batch(1000).map(<[usize]>::len).unwrap_or(0);
        assert_eq!(all, 4);
    }

    #[test]
    fn windows_average_by_their_content_tokens_then_normalise() {
        // One text of 5 tokens in windows of 4 and 1: weights 4 and 1.
        let mut job = EmbedJob::new(vec![(1..6).collect()], 6, (0, 2), 2);
        let batch = job.next_batch(100).map(<[usize]>::len).unwrap_or(0);
        assert_eq!(batch, 2);
        // Longest window first: [1, 0] then [0, 1].
        job.absorb(batch, &[1.0, 0.0, 0.0, 1.0]);
        assert!(job.is_done());
        let v = job.finish().remove(0);
        let expected = [4.0f32, 1.0];
        let norm = (17.0f32).sqrt();
        assert!(
            (v[0] - expected[0] / norm).abs() < 1e-6 && (v[1] - expected[1] / norm).abs() < 1e-6
        );
    }
}

//! Cosines on their script's scale: per-script mean and standard deviation of a search's cosines,
//! pooled with a `ScorePrior` for small collections, and a cosine as a z-score.

use super::Index;
use super::rank::Scored;

/// What one query's cosines against a collection's chunks look like before the collection is
/// seen, for one embedding model file: per query script and chunk script, the mean and standard
/// deviation of the cosines (measured on the evaluation corpus, `examples/eval.rs`). The index
/// pools them, as `weight` virtual chunks, with the filtered chunks' own statistics before it
/// takes z-scores: with thousands of chunks the prior barely moves them, with a handful it keeps
/// the z-score on the scale the confidence model was fitted on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScorePrior {
    /// `[query script][chunk script]` (0 = other, 1 = Arabic): (mean, standard deviation).
    pub cosine: [[(f64, f64); 2]; 2],
    /// Pseudo-count: how many chunks the prior weighs as.
    pub weight: f64,
}

/// A search's cosines summed per script: `[script]` → (count, sum, sum of squares).
#[derive(Debug, Clone, Copy)]
pub(super) struct Moments([(f64, f64, f64); 2]);

impl Index {
    /// The similarities' moments per script (index 1 = Arabic): (count, sum, sum of squares),
    /// in f64 so 10^5 terms lose nothing. One pass serves every [`Index::z_params`] of a search.
    pub(super) fn moments(&self, sims: &[Scored]) -> Moments {
        let mut stats = [(0f64, 0f64, 0f64); 2];
        for s in sims {
            let g = usize::from(self.slots[s.1 as usize].arabic);
            let x = f64::from(s.0);
            stats[g].0 += 1.0;
            stats[g].1 += x;
            stats[g].2 += x * x;
        }
        Moments(stats)
    }

    /// Mean and standard deviation of the similarities, per script (index 1 = Arabic) when
    /// `by_script`, else one pair for all (stored in both places). With a prior (and the query's
    /// script, 0 = other, 1 = Arabic) and `by_script`, each script's moments are pooled with
    /// `weight` virtual chunks distributed as the prior: mean = (Σx + k·μ) / (n + k), variance =
    /// (Σx² + k·(σ² + μ²)) / (n + k) − mean².
    pub(super) fn z_params(
        moments: &Moments,
        by_script: bool,
        prior: Option<(&ScorePrior, usize)>,
    ) -> [(f64, f64); 2] {
        let mut stats = moments.0;
        if !by_script {
            let [a, b] = stats;
            stats = [(a.0 + b.0, a.1 + b.1, a.2 + b.2); 2];
        } else if let Some((p, query)) = prior {
            for (g, st) in stats.iter_mut().enumerate() {
                let (mu, sd) = p.cosine[query.min(1)][g];
                st.0 += p.weight;
                st.1 += p.weight * mu;
                st.2 += p.weight * (sd * sd + mu * mu);
            }
        }
        stats.map(|(n, sum, sq)| {
            let n = if n > 0.0 { n } else { 1.0 };
            let mean = sum / n;
            let sd = (sq / n - mean * mean).max(0.0).sqrt();
            (mean, if sd > 1e-6 { sd } else { 1.0 })
        })
    }

    /// A similarity as a z-score on its script's scale.
    pub(super) fn z(&self, params: &[(f64, f64); 2], slot: u32, sim: f32) -> f32 {
        let (mean, sd) = params[usize::from(self.slots[slot as usize].arabic)];
        ((f64::from(sim) - mean) / sd) as f32
    }
}

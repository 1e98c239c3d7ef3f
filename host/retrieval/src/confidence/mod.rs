//! Answerability confidence: how likely it is that the searched collection answers the query at
//! all. Raw cosine is not a probability (e5 puts unrelated passages at 0.65–0.82), so six
//! query-level features (`Features`) go through a logistic model fitted offline on a labelled set
//! of answerable and unanswerable questions (`fit`, by Newton's method on the L2-regularised
//! log-loss over standardised features) and stored per model file (`fitted`), with the
//! per-script cosine prior (`index::ScorePrior`) the features were computed with, so that a
//! collection of one or a few chunks gets meaningful z-scores. It is fitted on searches of the
//! whole evaluation corpus and of small collections drawn from it (crate README). `brier`, `auc`
//! and `reliability` report how well calibrated it is. `Features::for_hit` gives one hit's
//! features for a per-citation confidence with the same model; `with_entities` lowers a confidence
//! when the query names something the library does not hold (issue 50).
#![expect(
    clippy::needless_range_loop,
    reason = "small dense linear algebra reads best with explicit indices"
)]

mod entities;
mod fitted;

pub use entities::{DISAGREEMENT_FACTOR, IDENTIFIED, UNKNOWN_NAME_FACTOR, with_entities};
pub use fitted::CALIBRATIONS;

use crate::index::{Hit, ScorePrior, SearchResults};

/// Number of features.
pub const N_FEATURES: usize = 6;
/// Feature names, in `Features::to_array` order.
pub const FEATURE_NAMES: [&str; N_FEATURES] = [
    "top1_cosine",
    "cosine_gap",
    "bm25_norm",
    "list_overlap",
    "terms_matched",
    "top1_z",
];

/// The query-level evidence a confidence is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Features {
    /// Best cosine between the query and a chunk.
    pub top1_cosine: f64,
    /// Best minus second-best cosine (a clear winner vs. a flat field); with a single chunk, best
    /// minus the mean its z-score was taken against (`SearchResults::vector_top_baseline`).
    pub cosine_gap: f64,
    /// Best BM25 divided by the query's BM25 ceiling (Σ idf·(k1+1)), in [0, 1).
    pub bm25_norm: f64,
    /// Share of the vector top-5 that is also in the BM25 top-5 (`SearchResults::list_overlap`).
    pub list_overlap: f64,
    /// Share of the query's distinct terms found in the top hit.
    pub terms_matched: f64,
    /// How many standard deviations the best chunk's cosine stands above the other chunks of its
    /// script (`SearchResults::vector_top_z`): the language-neutral form of `top1_cosine`.
    pub top1_z: f64,
}

impl Features {
    pub fn from_results(results: &SearchResults) -> Self {
        let top1 = results.vector_top.first().copied().unwrap_or(0.0);
        // A lone chunk leads the typical chunk its z-score was taken against (with the prior,
        // k/(1+k)·(cosine − prior mean); without one, itself: a gap of 0).
        let top2 = results
            .vector_top
            .get(1)
            .copied()
            .unwrap_or(results.vector_top_baseline.min(top1));
        let bm25_norm = if results.bm25_ceiling > 0.0 {
            (results.bm25_top / results.bm25_ceiling).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let terms_matched = match (results.hits.first(), results.query_terms) {
            (Some(hit), n) if n > 0 => f64::from(hit.terms_matched) / n as f64,
            _ => 0.0,
        };
        Self {
            top1_cosine: f64::from(top1),
            cosine_gap: f64::from(top1 - top2),
            bm25_norm: f64::from(bm25_norm),
            list_overlap: f64::from(results.list_overlap),
            terms_matched,
            top1_z: f64::from(results.vector_top_z),
        }
    }

    /// The features of one hit, for a per-citation confidence with the same model: the hit's own
    /// cosine, its lead over the best other hit (over the typical chunk when it is alone), its
    /// share of the BM25 ceiling and of the query's terms, its own z-score (`Hit::vector_z`) and
    /// the query's list overlap. Cap the result at the query's confidence: a citation is never
    /// surer than the question is answerable. With the query's `vector_top_z` in place of the
    /// hit's own, every hit of an answerable query scored alike (crate README).
    pub fn for_hit(results: &SearchResults, hit: &Hit) -> Self {
        let best_other = results
            .hits
            .iter()
            .filter(|h| h.chunk_id != hit.chunk_id)
            .map(|h| h.vector_sim)
            .fold(None, |m: Option<f32>, c| Some(m.map_or(c, |m| m.max(c))))
            .unwrap_or(results.vector_top_baseline);
        let bm25_norm = if results.bm25_ceiling > 0.0 {
            (hit.bm25 / results.bm25_ceiling).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let terms_matched = if results.query_terms > 0 {
            f64::from(hit.terms_matched) / results.query_terms as f64
        } else {
            0.0
        };
        Self {
            top1_cosine: f64::from(hit.vector_sim),
            cosine_gap: f64::from((hit.vector_sim - best_other).max(0.0)),
            bm25_norm: f64::from(bm25_norm),
            list_overlap: f64::from(results.list_overlap),
            terms_matched,
            top1_z: f64::from(hit.vector_z),
        }
    }

    pub fn to_array(self) -> [f64; N_FEATURES] {
        [
            self.top1_cosine,
            self.cosine_gap,
            self.bm25_norm,
            self.list_overlap,
            self.terms_matched,
            self.top1_z,
        ]
    }
}

/// A logistic model over standardised features: p = σ(b + Σ wᵢ·(xᵢ − meanᵢ)/scaleᵢ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Logistic {
    pub mean: [f64; N_FEATURES],
    pub scale: [f64; N_FEATURES],
    pub weights: [f64; N_FEATURES],
    pub bias: f64,
}

impl Logistic {
    pub fn predict(&self, features: &Features) -> f64 {
        self.predict_array(&features.to_array())
    }

    fn predict_array(&self, x: &[f64; N_FEATURES]) -> f64 {
        let mut z = self.bias;
        for i in 0..N_FEATURES {
            z += self.weights[i] * (x[i] - self.mean[i]) / self.scale[i];
        }
        sigmoid(z)
    }
}

/// A fitted model for one embedding model file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    pub model_id: &'static str,
    /// sha256 of the weights file the features were computed with.
    pub model_sha256: &'static str,
    /// What it was fitted on (set, size, regularisation).
    pub fitted_on: &'static str,
    pub logistic: Logistic,
    /// The per-script cosine prior the features were computed with: an `Index` whose model key
    /// names this file uses it (`calibration_for_key`).
    pub score_prior: ScorePrior,
}

/// The committed calibration for a model file, if there is one. Another file (even with the same
/// model id) gets none: its cosines are on another scale, and the host must refuse or re-fit.
pub fn calibration_for(model_id: &str, model_sha256: &str) -> Option<&'static Calibration> {
    CALIBRATIONS
        .iter()
        .find(|c| c.model_id == model_id && c.model_sha256 == model_sha256)
}

/// The committed calibration for an index's model key: `<model_id>@<sha256 prefix>` (as the host
/// writes it, at least 12 hex digits) or `<model_id>:<sha256>` (as the evaluation does).
pub fn calibration_for_key(model_key: &str) -> Option<&'static Calibration> {
    CALIBRATIONS.iter().find(|c| {
        model_key
            .strip_prefix(c.model_id)
            .and_then(|rest| rest.strip_prefix(['@', ':']))
            .is_some_and(|sha| sha.len() >= 12 && c.model_sha256.starts_with(sha))
    })
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Fits a logistic model to `(features, answerable)` pairs by Newton's method on the log-loss
/// plus `l2`·|w|² (the bias is not penalised). Features are standardised first; a constant
/// feature keeps scale 1 and weight 0. Deterministic; at most 50 iterations.
pub fn fit(samples: &[([f64; N_FEATURES], bool)], l2: f64) -> Logistic {
    let n = samples.len().max(1) as f64;
    let mut mean = [0.0; N_FEATURES];
    let mut scale = [1.0; N_FEATURES];
    for i in 0..N_FEATURES {
        mean[i] = samples.iter().map(|(x, _)| x[i]).sum::<f64>() / n;
        let var = samples
            .iter()
            .map(|(x, _)| (x[i] - mean[i]).powi(2))
            .sum::<f64>()
            / n;
        if var > 1e-12 {
            scale[i] = var.sqrt();
        }
    }
    // Parameters: [bias, w0..w4] over z = (x - mean) / scale.
    const P: usize = N_FEATURES + 1;
    let rows: Vec<([f64; P], f64)> = samples
        .iter()
        .map(|(x, y)| {
            let mut r = [1.0; P];
            for i in 0..N_FEATURES {
                r[i + 1] = (x[i] - mean[i]) / scale[i];
            }
            (r, if *y { 1.0 } else { 0.0 })
        })
        .collect();
    let mut beta = [0.0; P];
    for _ in 0..50 {
        let mut grad = [0.0; P];
        let mut hess = [[0.0; P]; P];
        for (r, y) in &rows {
            let z: f64 = r.iter().zip(&beta).map(|(a, b)| a * b).sum();
            let p = sigmoid(z);
            let w = (p * (1.0 - p)).max(1e-9);
            for a in 0..P {
                grad[a] += (p - y) * r[a];
                for b in 0..P {
                    hess[a][b] += w * r[a] * r[b];
                }
            }
        }
        for a in 1..P {
            grad[a] += 2.0 * l2 * beta[a];
            hess[a][a] += 2.0 * l2;
        }
        // A constant feature has an all-zero column once centred: a tiny ridge keeps the system
        // solvable (its gradient is zero, so its weight stays 0).
        for (a, row) in hess.iter_mut().enumerate() {
            row[a] += 1e-9;
        }
        let Some(step) = solve(hess, grad) else {
            break;
        };
        let mut largest: f64 = 0.0;
        for a in 0..P {
            beta[a] -= step[a];
            largest = largest.max(step[a].abs());
        }
        if largest < 1e-10 {
            break;
        }
    }
    let mut weights = [0.0; N_FEATURES];
    weights.copy_from_slice(&beta[1..]);
    Logistic {
        mean,
        scale,
        weights,
        bias: beta[0],
    }
}

/// Solves `a · x = b` by Gaussian elimination with partial pivoting; `None` if singular.
fn solve<const P: usize>(mut a: [[f64; P]; P], mut b: [f64; P]) -> Option<[f64; P]> {
    for col in 0..P {
        let pivot = (col..P).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..P {
            let f = a[row][col] / a[col][col];
            for k in col..P {
                a[row][k] -= f * a[col][k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; P];
    for row in (0..P).rev() {
        let s: f64 = (row + 1..P).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

/// Mean squared error of probabilities against outcomes (0 is perfect; 0.25 is a coin).
pub fn brier(predictions: &[(f64, bool)]) -> f64 {
    if predictions.is_empty() {
        return 0.0;
    }
    predictions
        .iter()
        .map(|(p, y)| (p - if *y { 1.0 } else { 0.0 }).powi(2))
        .sum::<f64>()
        / predictions.len() as f64
}

/// Area under the ROC curve: the probability that a random positive scores above a random
/// negative (ties count half).
pub fn auc(predictions: &[(f64, bool)]) -> f64 {
    let pos: Vec<f64> = predictions.iter().filter(|p| p.1).map(|p| p.0).collect();
    let neg: Vec<f64> = predictions.iter().filter(|p| !p.1).map(|p| p.0).collect();
    if pos.is_empty() || neg.is_empty() {
        return 0.5;
    }
    let mut wins = 0.0;
    for p in &pos {
        for q in &neg {
            wins += if p > q {
                1.0
            } else if p == q {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (pos.len() * neg.len()) as f64
}

/// One bin of a reliability table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReliabilityBin {
    pub lower: f64,
    pub upper: f64,
    pub count: usize,
    pub mean_predicted: f64,
    pub observed: f64,
}

/// Predictions grouped into `bins` equal-width probability bins (empty bins omitted): a
/// calibrated model has `observed` ≈ `mean_predicted` in every bin.
pub fn reliability(predictions: &[(f64, bool)], bins: usize) -> Vec<ReliabilityBin> {
    let bins = bins.max(1);
    let mut out = Vec::new();
    for b in 0..bins {
        let lower = b as f64 / bins as f64;
        let upper = (b + 1) as f64 / bins as f64;
        let inside: Vec<&(f64, bool)> = predictions
            .iter()
            .filter(|(p, _)| *p >= lower && (*p < upper || (b + 1 == bins && *p <= upper)))
            .collect();
        if inside.is_empty() {
            continue;
        }
        let count = inside.len();
        out.push(ReliabilityBin {
            lower,
            upper,
            count,
            mean_predicted: inside.iter().map(|p| p.0).sum::<f64>() / count as f64,
            observed: inside.iter().filter(|p| p.1).count() as f64 / count as f64,
        });
    }
    out
}

/// The reliability table as text, one bin per line.
pub fn format_reliability(table: &[ReliabilityBin]) -> String {
    let mut s =
        String::from("| bin | n | mean predicted | observed answerable |\n|---|---|---|---|\n");
    for b in table {
        s.push_str(&format!(
            "| {:.1}–{:.1} | {} | {:.2} | {:.2} |\n",
            b.lower, b.upper, b.count, b.mean_predicted, b.observed
        ));
    }
    s
}

#[cfg(test)]
mod tests;

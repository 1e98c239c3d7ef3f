//! Unit tests of the confidence model: fitting, metrics, features.

use super::*;
use crate::index::{Hit, SearchResults};

/// Samples from a known logistic model with one informative feature.
fn synthetic(n: usize) -> Vec<([f64; N_FEATURES], bool)> {
    let mut s: u64 = 12345;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let x0 = next() * 4.0 - 2.0;
            let p = sigmoid(3.0 * x0 - 0.5);
            let y = next() < p;
            ([x0, next(), 0.3, next(), next(), next()], y)
        })
        .collect()
}

#[test]
fn fit_recovers_a_known_model() {
    let data = synthetic(4000);
    let model = fit(&data, 0.0);
    // Weights are per standard deviation: 3.0 × sd(x0) = 3.0 × 4/√12 ≈ 3.46.
    let w0 = model.weights[0] / model.scale[0];
    assert!((w0 - 3.0).abs() < 0.3, "w0 {w0}");
    let intercept = model.bias - model.weights[0] * model.mean[0] / model.scale[0];
    assert!((intercept + 0.5).abs() < 0.3, "intercept {intercept}");
    // The constant feature keeps weight 0; the noise features stay small.
    assert!(model.weights[2].abs() < 1e-9);
    assert!(model.weights[1].abs() < 0.2 && model.weights[3].abs() < 0.2);
}

#[test]
fn regularisation_shrinks_and_separable_data_stays_finite() {
    let separable: Vec<([f64; N_FEATURES], bool)> = (0..40)
        .map(|i| ([f64::from(i), 0.0, 0.0, 0.0, 0.0, 0.0], i >= 20))
        .collect();
    let model = fit(&separable, 0.1);
    assert!(model.weights.iter().all(|w| w.is_finite()) && model.bias.is_finite());
    let low = model.predict_array(&[5.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let high = model.predict_array(&[35.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert!(low < 0.1 && high > 0.9, "{low} {high}");
    let loose = fit(&separable, 1.0);
    assert!(loose.weights[0] < model.weights[0]);
}

#[test]
fn brier_auc_and_reliability_on_hand_made_predictions() {
    let preds = [
        (0.9, true),
        (0.8, true),
        (0.3, false),
        (0.6, false),
        (0.2, true),
    ];
    let brier_want = (0.01 + 0.04 + 0.09 + 0.36 + 0.64) / 5.0;
    assert!((brier(&preds) - brier_want).abs() < 1e-12);
    // Positives 0.9, 0.8, 0.2 vs negatives 0.3, 0.6: 4 of 6 pairs ordered.
    assert!((auc(&preds) - 4.0 / 6.0).abs() < 1e-12);
    let table = reliability(&preds, 5);
    let counts: Vec<usize> = table.iter().map(|b| b.count).collect();
    // [0.2, 0.4): 0.2, 0.3; [0.6, 0.8): 0.6; [0.8, 1.0]: 0.8, 0.9.
    assert_eq!(counts, [2, 1, 2]);
    assert_eq!(table[2].observed, 1.0);
    assert_eq!(table[0].observed, 0.5);
    assert!(format_reliability(&table).contains("| 0.8–1.0 | 2 | 0.85 | 1.00 |"));
}

#[test]
fn features_come_from_the_search_results() {
    let hit = Hit {
        chunk_id: 1,
        document_id: "d".into(),
        collection: "c".into(),
        rank: 1,
        score: 0.03,
        vector_sim: 0.9,
        vector_z: 2.5,
        bm25: 2.0,
        vector_rank: Some(1),
        bm25_rank: Some(1),
        terms_matched: 3,
        entity_share: 0.0,
    };
    let results = SearchResults {
        hits: vec![hit],
        vector_top: vec![0.9, 0.8],
        bm25_top: 2.0,
        bm25_ceiling: 8.0,
        query_terms: 4,
        list_overlap: 0.4,
        vector_top_z: 2.5,
        vector_top_baseline: 0.78,
        vector_candidates: 12,
        ..SearchResults::default()
    };
    let f = Features::from_results(&results);
    assert!((f.top1_cosine - 0.9).abs() < 1e-6);
    assert!((f.cosine_gap - 0.1).abs() < 1e-6);
    assert!((f.bm25_norm - 0.25).abs() < 1e-6);
    assert!((f.list_overlap - 0.4).abs() < 1e-6);
    assert!((f.terms_matched - 0.75).abs() < 1e-6);
    assert!((f.top1_z - 2.5).abs() < 1e-6);
    assert_eq!(
        Features::from_results(&SearchResults::default()),
        Features::default()
    );
    // A lone chunk's gap is its lead over the mean its z-score was taken against.
    let lone = SearchResults {
        vector_top: vec![0.9],
        ..results.clone()
    };
    assert!((Features::from_results(&lone).cosine_gap - 0.12).abs() < 1e-6);
    let below = SearchResults {
        vector_top: vec![0.7],
        ..results
    };
    assert_eq!(Features::from_results(&below).cosine_gap, 0.0);
}

#[test]
fn a_hits_features_are_its_own_with_the_querys_overlap() {
    let hit = |id: u64, sim: f32, z: f32, bm25: f32, terms: u16| Hit {
        chunk_id: id,
        document_id: "d".into(),
        collection: "c".into(),
        rank: id as usize,
        score: 0.0,
        vector_sim: sim,
        vector_z: z,
        bm25,
        vector_rank: None,
        bm25_rank: None,
        terms_matched: terms,
        entity_share: 0.0,
    };
    let results = SearchResults {
        hits: vec![hit(1, 0.9, 3.0, 4.0, 3), hit(2, 0.8, 0.5, 0.0, 0)],
        vector_top: vec![0.9, 0.8],
        vector_top_z: 3.0,
        vector_top_baseline: 0.78,
        vector_candidates: 2,
        bm25_top: 4.0,
        bm25_ceiling: 8.0,
        query_terms: 4,
        list_overlap: 0.5,
        ..SearchResults::default()
    };
    let best = Features::for_hit(&results, &results.hits[0]);
    assert_eq!(best, Features::from_results(&results));
    let other = Features::for_hit(&results, &results.hits[1]);
    assert!((other.top1_cosine - 0.8).abs() < 1e-6);
    assert_eq!(other.cosine_gap, 0.0);
    assert_eq!((other.bm25_norm, other.terms_matched), (0.0, 0.0));
    assert!((other.top1_z - 0.5).abs() < 1e-6);
    assert!((other.list_overlap - 0.5).abs() < 1e-6);
    // Alone, a hit leads the typical chunk.
    let alone = SearchResults {
        hits: vec![hit(1, 0.9, 3.0, 4.0, 3)],
        vector_top: vec![0.9],
        ..results
    };
    assert!((Features::for_hit(&alone, &alone.hits[0]).cosine_gap - 0.12).abs() < 1e-6);
}

#[test]
fn committed_calibration_is_found_only_for_its_file() {
    let c = CALIBRATIONS[0];
    assert!(calibration_for(c.model_id, c.model_sha256).is_some());
    assert!(calibration_for(c.model_id, "0000").is_none());
    let host_key = format!("{}@{}", c.model_id, &c.model_sha256[..12]);
    assert!(calibration_for_key(&host_key).is_some());
    assert!(calibration_for_key(&format!("{}:{}", c.model_id, c.model_sha256)).is_some());
    assert!(calibration_for_key(&format!("{}@{}", c.model_id, &c.model_sha256[..6])).is_none());
    assert!(calibration_for_key(c.model_sha256).is_none());
    assert!(c.score_prior.weight > 0.0);
    assert!(c.logistic.scale.iter().all(|s| *s > 0.0));
}

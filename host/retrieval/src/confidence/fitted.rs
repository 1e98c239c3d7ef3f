//! The committed calibrations, one per embedding model file. Written by
//! `cargo run --release -p sovereign-retrieval --example eval -- --write-calibration` from the
//! evaluation set in `eval/`; do not edit by hand.

use super::{Calibration, Logistic};

pub static CALIBRATIONS: &[Calibration] = &[Calibration {
    model_id: "multilingual-e5-small-q4",
    model_sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    fitted_on: "placeholder until the eval set is fitted",
    logistic: Logistic {
        mean: [0.0; 5],
        scale: [1.0; 5],
        weights: [0.0; 5],
        bias: 0.0,
    },
}];

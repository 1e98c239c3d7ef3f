//! The committed calibrations, one per embedding model file. Written by
//! `cargo run --release -p sovereign-retrieval --example eval -- --write-calibration` from the
//! evaluation set in `eval/`; do not edit by hand.

use super::{Calibration, Logistic, ScorePrior};

pub static CALIBRATIONS: &[Calibration] = &[Calibration {
    model_id: "multilingual-e5-small-q4",
    model_sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    fitted_on: "eval/: 118 questions (87 answerable), 104 chunks; full corpus and small collections (534 samples, seed 0x5eed20261125); hybrid search top 5; Newton, L2 0.05",
    logistic: Logistic {
        mean: [
            0.8379513684953197,
            0.03515588210316633,
            0.28874003338847265,
            0.3507490673761689,
            0.22104086092850134,
            2.4573873554004098,
        ],
        scale: [
            0.051558346824865646,
            0.03507801682218844,
            0.23012432720965587,
            0.37098588435242047,
            0.27527550640870563,
            1.509578716995656,
        ],
        weights: [
            -1.3003553553218348,
            1.8356281820535616,
            -0.5003760196278423,
            0.3436398887713423,
            -0.03537784198563762,
            5.524484250538597,
        ],
        bias: 1.9675432327018936,
    },
    // [query script][chunk script] (0 = other, 1 = Arabic): mean and sd of a query's cosines.
    score_prior: ScorePrior {
        cosine: [
            [
                (0.7783428313831486, 0.02534052762268114),
                (0.7506141014015061, 0.019392120559801787),
            ],
            [
                (0.7476932345358381, 0.024459732988901407),
                (0.7942730884613664, 0.021788761133114027),
            ],
        ],
        weight: 50.0,
    },
}];

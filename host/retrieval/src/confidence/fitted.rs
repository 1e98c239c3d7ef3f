//! The committed calibrations, one per embedding model file. Written by
//! `cargo run --release -p sovereign-retrieval --example eval -- --write-calibration` from the
//! evaluation set in `eval/`; do not edit by hand.

use super::{Calibration, Logistic, ScorePrior};

pub static CALIBRATIONS: &[Calibration] = &[Calibration {
    model_id: "multilingual-e5-small-q4",
    model_sha256: "b1040034a6084f830570418e7e70afad9c6df102274ccff4d417f2a84a9bbd0e",
    fitted_on: "eval/: 118 questions (87 answerable), 104 chunks; full corpus and small collections (534 samples, seed 0x5eed20261125); hybrid search top 5; Newton, L2 0.05",
    logistic: Logistic {
        mean: [
            0.8379448137703013,
            0.03523107782731789,
            0.28874003338847265,
            0.3496254717700937,
            0.22150294566024897,
            2.4614240625281973,
        ],
        scale: [
            0.051615798564950514,
            0.03509490450430017,
            0.23012432720965587,
            0.37214563065063067,
            0.27541634557845907,
            1.5115358539419235,
        ],
        weights: [
            -1.1900288279556088,
            1.8456330498522184,
            -0.4963878024005328,
            0.307183126465336,
            -0.08711523724695004,
            5.474880109906087,
        ],
        bias: 1.9584974743131875,
    },
    // [query script][chunk script] (0 = other, 1 = Arabic): mean and sd of a query's cosines.
    score_prior: ScorePrior {
        cosine: [
            [
                (0.7783974974583356, 0.02529122887936153),
                (0.7503986844076558, 0.019370358198171362),
            ],
            [
                (0.7476694902864632, 0.0244557380860086),
                (0.7941443364207561, 0.0217759384494451),
            ],
        ],
        weight: 50.0,
    },
}];

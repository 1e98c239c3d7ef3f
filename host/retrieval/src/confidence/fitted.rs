//! The committed calibrations, one per embedding model file. Written by
//! `cargo run --release -p sovereign-retrieval --example eval -- --write-calibration` from the
//! evaluation set in `eval/`; do not edit by hand.

use super::{Calibration, Logistic};

pub static CALIBRATIONS: &[Calibration] = &[Calibration {
    model_id: "multilingual-e5-small-q4",
    model_sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    fitted_on: "eval/: 118 questions (87 answerable), 104 chunks; hybrid search top 5; Newton, L2 0.05",
    logistic: Logistic {
        mean: [
            0.8575725050295814,
            0.023704024694733702,
            0.3492163738583104,
            0.2593220387727527,
            0.2631127347229041,
            3.2236617066092412,
        ],
        scale: [
            0.038357882716793926,
            0.025838996588196383,
            0.14788484383310388,
            0.18097536959286212,
            0.274569538005935,
            0.7758263632267395,
        ],
        weights: [
            2.3749663752201444,
            -0.6005507188874981,
            -0.08262437231673025,
            0.4425055308131377,
            -0.9349133855112696,
            2.4056797755200763,
        ],
        bias: 2.568970219408357,
    },
}];

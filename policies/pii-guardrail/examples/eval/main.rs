//! Precision and recall of the detectors on a labelled set.
//!
//! ```sh
//! cargo run --manifest-path policies/Cargo.toml -p pii-guardrail --example eval --release \
//!     [-- [--verbose] [PRESIDIO_JSON] [ARABIC_JSON]]
//! ```
//!
//! Defaults: `../shared/data/pii/presidio-synth-v2.json` beside the repository root, and this
//! crate's `data/arabic-pii-eval.json`. `--verbose` lists every miss and false alarm.

mod score;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut verbose = false;
    let mut paths = Vec::new();
    for a in std::env::args().skip(1) {
        if a == "--verbose" {
            verbose = true;
        } else {
            paths.push(PathBuf::from(a));
        }
    }
    let defaults = [
        crate_dir.join("data/presidio/presidio-synth-v2.json"),
        crate_dir.join("data/arabic-pii-eval.json"),
    ];
    for (i, default) in defaults.into_iter().enumerate() {
        let path = paths.get(i).cloned().unwrap_or(default);
        let records: Vec<score::Record> = match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        let started = Instant::now();
        let report = score::score(&records);
        let elapsed = started.elapsed();
        println!(
            "\n{} ({} records, detection {:.1} ms natively)\n",
            path.display(),
            report.records,
            elapsed.as_secs_f64() * 1e3
        );
        print!("{}", score::table(&report));
        if verbose {
            for m in &report.mistakes {
                let what = if m.false_positive {
                    "FALSE ALARM"
                } else {
                    "MISSED"
                };
                println!("{what} {} {:?}\n    in {:?}", m.label, m.value, m.text);
            }
        }
    }
    ExitCode::SUCCESS
}

//! `sovereign-extract extract-document`: the extraction child on its own, for this crate's tests,
//! fuzzing and benchmark; the gateway binary answers the same subcommand with the same
//! stdin → stdout protocol (`sovereign_documents::child_main`).

use std::process::ExitCode;

use sovereign_documents::{EXTRACT_SUBCOMMAND, child_main};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args != [EXTRACT_SUBCOMMAND] {
        eprintln!("usage: sovereign-extract {EXTRACT_SUBCOMMAND} < request > answer");
        return ExitCode::from(2);
    }
    ExitCode::from(child_main(
        std::io::stdin().lock(),
        std::io::stdout().lock(),
    ))
}

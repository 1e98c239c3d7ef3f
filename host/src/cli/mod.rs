//! The `sovereign` binary's subcommands, one file per family; `main.rs` parses the command line
//! and dispatches here. Bin-private: only `main.rs` declares this module, and it reaches the
//! library as `sovereign::…` like any other user of it (never `crate::`, which is the binary).

pub mod config_file;
pub mod journal;
pub mod policy;
mod policy_worlds;
pub mod servers;

use std::future::Future;
use std::process::ExitCode;

/// Runs a subcommand's work on a multi-threaded runtime of its own, dropped when it ends.
pub fn block_on<T>(work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    runtime()?.block_on(work)
}

/// A multi-threaded runtime for a subcommand that needs one.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// A command's exit code: 0 when it ran, else 1 with the error on stderr as `error: …`.
pub fn exit(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// A check's exit code: 0 when everything passed, 1 when something failed (the check printed
/// what) or the check could not run (`error: …` on stderr).
pub fn verdict(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

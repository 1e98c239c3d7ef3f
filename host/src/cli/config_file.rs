//! What an operator runs while writing the configuration file: `sovereign check-config` (every
//! error with its path) and `sovereign keygen` (a new key and the `hash` line the file takes).

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use sovereign::auth;
use sovereign::config::Config;

/// `sovereign check-config FILE`: a summary when it is valid (0), else every error (1).
pub fn check_config(file: &Path) -> ExitCode {
    match Config::load(file) {
        Ok(c) => {
            println!(
                "{}: OK ({} models, {} teams, {} keys)",
                file.display(),
                c.models.len(),
                c.teams.len(),
                c.keys.len()
            );
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors.0 {
                eprintln!("{}: {e}", file.display());
            }
            ExitCode::from(1)
        }
    }
}

/// `sovereign keygen`: the secret, then the config file's `hash = "…"` line.
pub fn keygen() -> ExitCode {
    let secret = auth::generate_secret();
    // Written, not printed: `sovereign keygen | head -1` closes the pipe after the key,
    // which is no error of ours.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "key {secret}")
        .and_then(|()| writeln!(out, "hash = \"{}\"", auth::hash_for_config(&secret)));
    ExitCode::SUCCESS
}

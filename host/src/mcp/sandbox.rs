//! The child process of a stdio MCP server, under the document extractor's sandbox: the gateway
//! starts its own binary as `sovereign mcp-stdio-child <memory bytes> <cpu seconds> -- <command…>`
//! with an empty environment plus the operator's `env` table (no secret of the gateway's is
//! inherited); that child caps its own address space and CPU time (and core dumps) with
//! `sovereign_documents::apply_rlimits`, then `exec`s the server, which inherits the caps. So
//! the gateway needs no `unsafe` `pre_exec`, as the extractor does not.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::{Child, Command, Stdio};

/// The subcommand the gateway's binary answers (in `main.rs`, before anything starts).
pub const STDIO_SUBCOMMAND: &str = "mcp-stdio-child";

/// What to start, and its caps.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    pub memory_bytes: u64,
    pub cpu_seconds: u64,
}

impl Spec {
    /// Starts the server through the sandboxing child, its three pipes open.
    pub fn spawn(&self) -> std::io::Result<Child> {
        let exe = std::env::current_exe()?;
        Command::new(exe)
            .arg(STDIO_SUBCOMMAND)
            .arg(self.memory_bytes.to_string())
            .arg(self.cpu_seconds.to_string())
            .arg("--")
            .args(&self.command)
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    }
}

/// The sandboxing child's side (`args` after the subcommand): caps set, then the server
/// `exec`ed in its place. Returns only on failure, with the exit code (and a line on stderr,
/// which the gateway logs).
pub fn child_main(args: &[OsString]) -> u8 {
    let number = |a: Option<&OsString>| a.and_then(|a| a.to_str()?.parse::<u64>().ok());
    let (Some(memory), Some(cpu)) = (number(args.first()), number(args.get(1))) else {
        eprintln!("{STDIO_SUBCOMMAND}: expected <memory bytes> <cpu seconds> -- <command…>");
        return 2;
    };
    let Some((program, rest)) = args.get(3..).and_then(|c| c.split_first()) else {
        eprintln!("{STDIO_SUBCOMMAND}: no command");
        return 2;
    };
    if args.get(2).is_none_or(|a| a != "--") {
        eprintln!("{STDIO_SUBCOMMAND}: expected `--` before the command");
        return 2;
    }
    if let Err(e) = sovereign_documents::apply_rlimits(memory, cpu) {
        eprintln!("{STDIO_SUBCOMMAND}: setting the caps failed ({e})");
        return 1;
    }
    exec(program, rest)
}

#[cfg(unix)]
fn exec(program: &OsString, rest: &[OsString]) -> u8 {
    use std::os::unix::process::CommandExt;
    let e = Command::new(program).args(rest).exec();
    eprintln!(
        "{STDIO_SUBCOMMAND}: cannot start {} ({e})",
        program.to_string_lossy()
    );
    127
}

#[cfg(not(unix))]
fn exec(program: &OsString, _: &[OsString]) -> u8 {
    eprintln!(
        "{STDIO_SUBCOMMAND}: stdio MCP servers need a Unix host ({})",
        program.to_string_lossy()
    );
    127
}

//! Extraction in a child process: `extract_in_child` (parent side: spawn, feed, time out, kill,
//! read a bounded answer) and `child_main` (child side: cap its own memory and CPU time, read
//! the request from stdin, answer JSON on stdout).
//!
//! Protocol: stdin carries one JSON line (`Request`: kind, limits, pdfium path, budgets, byte
//! length) then the document's bytes; stdout carries one JSON line, `{"ok": Document}` or
//! `{"err": ExtractError}`. The child sets its own rlimits (RLIMIT_AS, RLIMIT_CPU, no core
//! dumps) through the `rlimit` crate, so the parent needs no `unsafe` `pre_exec`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{Document, ExtractError, Kind, Limits};

/// The subcommand the gateway binary (and `sovereign-extract`) answers as an extraction child.
pub const EXTRACT_SUBCOMMAND: &str = "extract-document";

/// Largest request line the child accepts.
const MAX_HEADER: u64 = 64 << 10;

/// How to run the child.
#[derive(Debug, Clone)]
pub struct ChildConfig {
    /// The executable: the gateway binary, or `sovereign-extract` in tests.
    pub exe: PathBuf,
    /// Its arguments (default: [`EXTRACT_SUBCOMMAND`]).
    pub args: Vec<OsString>,
    /// The pdfium library the child loads for PDFs.
    pub pdfium: Option<PathBuf>,
    /// Wall-clock time before the child is killed (default 30 s).
    pub timeout: Duration,
    /// The child's address-space cap, RLIMIT_AS (default 2 GiB).
    pub memory_bytes: u64,
    /// The child's CPU-time cap, RLIMIT_CPU (default 30 s).
    pub cpu_seconds: u64,
}

impl ChildConfig {
    pub fn new(exe: impl Into<PathBuf>, pdfium: Option<PathBuf>) -> Self {
        ChildConfig {
            exe: exe.into(),
            args: vec![EXTRACT_SUBCOMMAND.into()],
            pdfium,
            timeout: Duration::from_secs(30),
            memory_bytes: 2 << 30,
            cpu_seconds: 30,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Request {
    kind: Kind,
    limits: Limits,
    pdfium: Option<PathBuf>,
    memory_bytes: u64,
    cpu_seconds: u64,
    len: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Response {
    Ok(Document),
    Err(ExtractError),
}

fn extractor(reason: impl Into<String>) -> ExtractError {
    ExtractError::Extractor {
        reason: reason.into(),
    }
}

/// Reads at most `limit` bytes of `r`, then drains the rest; `true` when it overflowed.
fn read_bounded(mut r: impl Read, limit: u64) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let _ = (&mut r).take(limit.saturating_add(1)).read_to_end(&mut out);
    let over = out.len() as u64 > limit;
    out.truncate(limit as usize);
    let _ = std::io::copy(&mut r, &mut std::io::sink());
    (out, over)
}

/// Extracts `bytes` (of `kind`, from [`crate::detect`]) in a child process under `config`'s
/// time, memory and CPU budgets and `limits`. A child that runs past the timeout is killed
/// ([`ExtractError::Timeout`]); one stopped by its rlimits gives
/// [`ExtractError::ResourcesExhausted`]; a crash is reported as a malformed file.
pub fn extract_in_child(
    config: &ChildConfig,
    bytes: &[u8],
    kind: Kind,
    limits: &Limits,
) -> Result<Document, ExtractError> {
    if bytes.is_empty() {
        return Err(ExtractError::Empty);
    }
    limits.check_size(bytes.len())?;
    let request = Request {
        kind,
        limits: *limits,
        pdfium: config.pdfium.clone(),
        memory_bytes: config.memory_bytes,
        cpu_seconds: config.cpu_seconds,
        len: bytes.len() as u64,
    };
    let mut header = serde_json::to_vec(&request).map_err(|e| extractor(e.to_string()))?;
    header.push(b'\n');

    let mut child = Command::new(&config.exe)
        .args(&config.args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| extractor(format!("cannot start {} ({e})", config.exe.display())))?;
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(extractor("the child's pipes were not opened"));
    };
    // Document text is at most max_text_chars × 4 bytes of UTF-8, plus JSON per block.
    let max_output = limits
        .max_text_chars
        .saturating_mul(6)
        .saturating_add(4 << 20);
    let started = Instant::now();
    let deadline = started + config.timeout;

    std::thread::scope(|scope| {
        // A child that dies early closes its stdin: the write fails, and the exit says why.
        scope.spawn(move || {
            let _ = stdin
                .write_all(&header)
                .and_then(|()| stdin.write_all(bytes));
        });
        let out = scope.spawn(move || read_bounded(stdout, max_output));
        let err = scope.spawn(move || read_bounded(stderr, 4096));

        let mut pause = Duration::from_millis(1);
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) if Instant::now() >= deadline => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(ExtractError::Timeout {
                        seconds: config.timeout.as_secs().max(1),
                    });
                }
                Ok(None) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break Err(extractor(format!("waiting for the child failed ({e})")));
                }
            }
        };
        let (stdout, overflow) = out.join().unwrap_or_default();
        let (stderr, _) = err.join().unwrap_or_default();
        let status = status?;
        if let Some(signal) = signal_of(&status) {
            return Err(match signal {
                // SIGKILL (RLIMIT_CPU hard / OOM killer), SIGXCPU, SIGABRT (allocation failure
                // under RLIMIT_AS).
                9 | 24 | 6 => ExtractError::ResourcesExhausted,
                n => ExtractError::malformed(format!("the parser crashed on it (signal {n})")),
            });
        }
        if overflow {
            return Err(ExtractError::ResourcesExhausted);
        }
        if !status.success() {
            let stderr = String::from_utf8_lossy(&stderr);
            let first = stderr.lines().next().unwrap_or("no message");
            return Err(extractor(format!(
                "the child exited with {status}: {first}"
            )));
        }
        match serde_json::from_slice::<Response>(&stdout) {
            Ok(Response::Ok(document)) => Ok(document),
            Ok(Response::Err(error)) => Err(error),
            Err(e) => Err(extractor(format!("unreadable answer from the child ({e})"))),
        }
    })
}

#[cfg(unix)]
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

#[cfg(not(unix))]
fn signal_of(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The calling process's own sandbox caps: no core dumps, its address space (RLIMIT_AS) and
/// CPU time (RLIMIT_CPU, SIGXCPU then SIGKILL a second later). The extraction child applies them
/// to itself; the gateway's MCP stdio child applies them before it `exec`s the server, which
/// inherits them.
#[cfg(unix)]
pub fn apply_rlimits(memory_bytes: u64, cpu_seconds: u64) -> std::io::Result<()> {
    use rlimit::{Resource, setrlimit};
    setrlimit(Resource::CORE, 0, 0)?;
    setrlimit(Resource::AS, memory_bytes, memory_bytes)?;
    setrlimit(Resource::CPU, cpu_seconds, cpu_seconds.saturating_add(1))
}

#[cfg(not(unix))]
pub fn apply_rlimits(_: u64, _: u64) -> std::io::Result<()> {
    Ok(())
}

fn serve(input: impl Read) -> Result<Document, ExtractError> {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    (&mut input)
        .take(MAX_HEADER)
        .read_until(b'\n', &mut line)
        .map_err(|e| extractor(format!("reading the request failed ({e})")))?;
    let request: Request = serde_json::from_slice(&line)
        .map_err(|e| extractor(format!("unreadable request ({e})")))?;
    apply_rlimits(request.memory_bytes, request.cpu_seconds)
        .map_err(|e| extractor(format!("setting the child's rlimits failed ({e})")))?;
    request.limits.check_size(request.len as usize)?;
    let mut bytes = Vec::with_capacity(request.len as usize);
    input
        .take(request.len)
        .read_to_end(&mut bytes)
        .map_err(|e| extractor(format!("reading the document failed ({e})")))?;
    if bytes.len() as u64 != request.len {
        return Err(extractor("the document arrived short"));
    }
    crate::extract(
        &bytes,
        request.kind,
        &request.limits,
        request.pdfium.as_deref().map(Path::new),
    )
}

/// The child's side: reads a request from `input`, extracts, writes the answer to `output`.
/// Returns the process exit code (0 whenever an answer, success or refusal, was written).
pub fn child_main(input: impl Read, mut output: impl Write) -> u8 {
    let response = match serve(input) {
        Ok(document) => Response::Ok(document),
        Err(error) => Response::Err(error),
    };
    let written = serde_json::to_writer(&mut output, &response)
        .map_err(std::io::Error::other)
        .and_then(|()| output.write_all(b"\n"))
        .and_then(|()| output.flush());
    if written.is_ok() { 0 } else { 1 }
}

//! `--load wrk`: the issue's own load generator, wrk (Debian's package: `wrk -t1 -c16`), instead
//! of the bench's client. wrk is C on an event loop and costs the shared cores less per request
//! than the bench's hyper client. A Lua script gives it the target's request and prints one line
//! of figures when the run ends, which this module reads back.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};

use super::Tally;
use crate::load::Target;

/// The marker of the line the script's `done` prints.
const MARK: &str = "sovereign-bench-wrk";

/// Runs wrk against `target` for `secs` whole seconds with `connections` keep-alive
/// connections on `threads` threads (its script written to `script`).
pub(super) fn run(
    script: &Path,
    target: &Target,
    threads: usize,
    connections: usize,
    secs: f64,
) -> anyhow::Result<Tally> {
    std::fs::write(script, lua(target)?)
        .with_context(|| format!("writing {}", script.display()))?;
    let out = Command::new("wrk")
        .arg(format!("-t{threads}"))
        .arg(format!("-c{connections}"))
        .arg(format!("-d{}s", whole_seconds(secs)?))
        .arg("-s")
        .arg(script)
        .arg(target.uri.to_string())
        .output()
        .context("running wrk (Debian: `apt-get install wrk`)")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "wrk failed ({}): {}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    parse(&stdout)
}

/// wrk takes durations in whole units.
fn whole_seconds(secs: f64) -> anyhow::Result<u64> {
    if secs < 1.0 || secs.fract() != 0.0 {
        bail!("with --load wrk, --duration and --warmup are whole seconds (got {secs})");
    }
    Ok(secs as u64)
}

/// The request as wrk's globals, and a `done` that prints
/// `MARK requests duration_us status_errors socket_errors p50_us p99_us`.
fn lua(target: &Target) -> anyhow::Result<String> {
    let long = |s: &str| -> anyhow::Result<String> {
        anyhow::ensure!(!s.contains("]==]"), "cannot quote {s:?} for wrk's script");
        Ok(format!("[==[{s}]==]"))
    };
    let mut l = String::from("wrk.method = \"POST\"\n");
    let body = std::str::from_utf8(&target.body).context("the request body is not UTF-8")?;
    writeln!(l, "wrk.body = {}", long(body)?)?;
    writeln!(l, "wrk.headers[\"Content-Type\"] = \"application/json\"")?;
    if let Some(a) = &target.authorization {
        writeln!(l, "wrk.headers[\"Authorization\"] = {}", long(a)?)?;
    }
    for (name, value) in &target.headers {
        writeln!(l, "wrk.headers[ {} ] = {}", long(name)?, long(value)?)?;
    }
    writeln!(
        l,
        "function done(summary, latency, requests)\n  local e = summary.errors\n  \
         io.write(string.format(\"{MARK} %d %d %d %d %d %d\\n\", summary.requests, \
         summary.duration, e.status, e.connect + e.read + e.write + e.timeout, \
         latency:percentile(50), latency:percentile(99)))\nend"
    )?;
    Ok(l)
}

fn parse(stdout: &str) -> anyhow::Result<Tally> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(MARK))
        .with_context(|| format!("wrk printed no `{MARK}` line:\n{stdout}"))?;
    let n: Vec<f64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("wrk's figures: {line:?}"))?;
    let [requests, duration_us, status, socket, p50_us, p99_us] = n[..] else {
        bail!("wrk's figures: {line:?}");
    };
    let errors = status + socket;
    let ok = (requests - status).max(0.0);
    Ok(Tally {
        ok: ok as u64,
        errors: errors as u64,
        first_error: (errors > 0.0).then(|| {
            format!(
                "wrk counted {status} answers with status ≥ 400 and {socket} socket errors \
                 (it does not keep their text)"
            )
        }),
        rps: if duration_us > 0.0 {
            ok / (duration_us / 1e6)
        } else {
            0.0
        },
        p50_ms: p50_us / 1e3,
        p99_ms: p99_us / 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_done_line_becomes_the_rows_figures() {
        let t = parse("Running 8s test\n  16 connections\nsovereign-bench-wrk 40000 8000000 10 2 2500 4800\nRequests/sec: 5000\n").unwrap();
        assert_eq!((t.ok, t.errors), (39_990, 12));
        assert!((t.rps - 4_998.75).abs() < 1e-9);
        assert!((t.p50_ms - 2.5).abs() < 1e-9 && (t.p99_ms - 4.8).abs() < 1e-9);
        assert!(t.first_error.unwrap().contains("10 answers"));
        assert!(parse("no line").is_err());
        assert!(parse("sovereign-bench-wrk 1 2 3").is_err());
    }

    #[test]
    fn the_script_sends_the_targets_headers_and_body() {
        let target = Target {
            name: "t",
            uri: "http://127.0.0.1:1/v1/chat/completions".parse().unwrap(),
            authorization: Some("Bearer k".into()),
            headers: vec![("x-portkey-provider", "openai".into())],
            body: bytes::Bytes::from_static(br#"{"model":"m"}"#),
            stream: false,
        };
        let l = lua(&target).unwrap();
        assert!(l.contains(r#"wrk.body = [==[{"model":"m"}]==]"#), "{l}");
        assert!(
            l.contains(r#"wrk.headers["Authorization"] = [==[Bearer k]==]"#),
            "{l}"
        );
        // `t[[` would open a long string in Lua, not index the table.
        assert!(
            l.contains("wrk.headers[ [==[x-portkey-provider]==] ] = [==[openai]==]"),
            "{l}"
        );
        assert!(!l.contains("[["), "{l}");
    }

    #[test]
    fn durations_are_whole_seconds() {
        assert_eq!(whole_seconds(8.0).unwrap(), 8);
        assert!(whole_seconds(2.5).is_err() && whole_seconds(0.0).is_err());
    }
}

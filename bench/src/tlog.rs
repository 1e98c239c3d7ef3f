//! `sovereign-bench tlog`: the journal's transparency log (issue 48), in process through
//! `sovereign::journal`, files on the disk of `--dir` (default: the system's temp directory).
//!
//! 1. Appends per second with the log on and off, alternating, each round: durable mode with
//!    1,024 appenders and batched mode (5 ms) with 256 — the journal benchmark's two group-commit
//!    runs. The log's follower thread is the only difference. With each, the CPU µs per entry of
//!    the process, of the journal's writer thread (on and off) and of the follower.
//! 2. Proofs as the endpoint computes them (request id → leaf, then the inclusion path from the
//!    level files) in trees of growing size up to `--entries`, and consistency proofs; p50, p99
//!    and max per size, and the proof's size against 32·⌈log₂ n⌉ bytes.
//! 3. The largest journal served by the real gateway (`--bin`): the time it takes to open it, and
//!    proofs over HTTP against `GET /v1/models` (`--served`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use sovereign::journal::{Durability, Journal, JournalConfig};

use crate::journal::draft;
use crate::servers;

#[derive(clap::Args, Debug)]
pub struct TlogArgs {
    /// Leaves of the largest tree proofs are measured in (the journal is written to that size).
    #[arg(long, default_value_t = 2_000_000)]
    entries: u64,
    /// Rounds of the append comparison.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Entries appended per append run.
    #[arg(long, default_value_t = 200_000)]
    appends: u64,
    /// Proofs timed at each size.
    #[arg(long, default_value_t = 20_000)]
    proofs: u64,
    /// Where the journals are written (removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Proofs timed through the gateway binary (`--bin`) on the largest journal, for each of
    /// its journal's durability modes (0: not started).
    #[arg(long, default_value_t = 5_000)]
    served: u64,
}

pub fn run(args: &TlogArgs, bin: &Path) -> anyhow::Result<()> {
    if args.served > 0 {
        servers::require_bin(bin)?; // before minutes of appends, not after
    }
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("sovereign-bench-tlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let result = (|| {
        let appends = rt.block_on(compare_appends(&dir, args))?;
        let proofs = rt.block_on(proofs(&dir, args))?;
        let served = match args.served {
            0 => Vec::new(),
            _ => rt.block_on(served(bin, &dir.join("proofs"), args))?,
        };
        anyhow::Ok(json!({"appends": appends, "proofs": proofs, "served": served}))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    println!("{}", serde_json::to_string(&result?)?);
    Ok(())
}

async fn append_run(
    dir: &Path,
    durability: Durability,
    appenders: u64,
    entries: u64,
    transparency: bool,
) -> anyhow::Result<Run> {
    let _ = std::fs::remove_dir_all(dir);
    let mut cfg = JournalConfig::new(dir.join("journal"), "bench", dir.join("signing.key"));
    cfg.durability = durability;
    cfg.transparency = transparency;
    let (journal, _) = Journal::open_async(cfg).await?;
    let per = entries / appenders;
    let cpu_before = own_cpu_time()?;
    let start = Instant::now();
    let mut tasks = Vec::new();
    // Each append takes the next request number, as the gateway's ids are UUIDv7s taken when a
    // request starts: the ids reach the journal nearly in order (`draft`).
    let next = Arc::new(AtomicU64::new(0));
    for _ in 0..appenders {
        let (journal, next) = (journal.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..per {
                journal
                    .append(draft(next.fetch_add(1, Ordering::Relaxed)))
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    journal.flush().await?;
    let rate = (per * appenders) as f64 / start.elapsed().as_secs_f64();
    // Not timed: the follower finishes its backlog before the next run starts, so its work
    // never lands in another run's time (its CPU is counted).
    if let Ok(tlog) = journal.tlog() {
        tlog.reach(per * appenders).await?;
    }
    let per_entry = |d: Duration| d.as_secs_f64() * 1e6 / (per * appenders) as f64;
    // The writer's and the follower's threads live as long as this journal: all they used.
    let thread = |name: &str| {
        servers::thread_cpu_time(name)
            .map(per_entry)
            .ok_or_else(|| anyhow::anyhow!("no thread {name} in /proc/self/task"))
    };
    let run = Run {
        rate,
        cpu_us: per_entry(own_cpu_time()? - cpu_before),
        writer_us: thread(WRITER_THREAD)?,
        follower_us: if transparency {
            thread(FOLLOWER_THREAD)?
        } else {
            0.0
        },
    };
    journal.close().await?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(run)
}

/// The journal's writer and the log's follower threads (`journal-<sovereign_id>`,
/// `tlog-<sovereign_id>`).
const WRITER_THREAD: &str = "journal-bench";
const FOLLOWER_THREAD: &str = "tlog-bench";

/// One append run: appends/s, and CPU µs per entry of the process, the writer and the follower.
#[derive(Default, Clone, Copy)]
struct Run {
    rate: f64,
    cpu_us: f64,
    writer_us: f64,
    follower_us: f64,
}

/// This process's CPU time so far (user and system, every thread: the follower's too).
fn own_cpu_time() -> anyhow::Result<Duration> {
    servers::cpu_time(std::process::id())
        .ok_or_else(|| anyhow::anyhow!("no CPU time in /proc/self/stat"))
}

async fn compare_appends(dir: &Path, args: &TlogArgs) -> anyhow::Result<Vec<Value>> {
    let batched = Durability::Batched {
        window: Duration::from_millis(5),
        max_entries: 4_096,
    };
    println!(
        "{:<6} {:<8} {:>9} {:>12} {:>12} {:>7} {:>20} {:>16} {:>9}",
        "round",
        "mode",
        "appenders",
        "log on /s",
        "log off /s",
        "on/off",
        "CPU µs/entry on/off",
        "writer on/off",
        "follower"
    );
    let mut out = Vec::new();
    for round in 0..args.rounds {
        for (mode, durability, appenders) in [
            ("durable", Durability::Durable, 1_024u64),
            ("batched", batched, 256),
        ] {
            // The order alternates, so a disk or neighbour drifting does not favour one side.
            let first_on = round % 2 == 0;
            let mut runs = [Run::default(); 2];
            for on in [first_on, !first_on] {
                runs[usize::from(!on)] =
                    append_run(&dir.join("append"), durability, appenders, args.appends, on)
                        .await?;
            }
            let [on, off] = runs;
            println!(
                "{round:<6} {mode:<8} {appenders:>9} {:>12.0} {:>12.0} {:>7.3} {:>9.2} / {:<8.2} {:>7.2} / {:<6.2} {:>9.2}",
                on.rate,
                off.rate,
                on.rate / off.rate,
                on.cpu_us,
                off.cpu_us,
                on.writer_us,
                off.writer_us,
                on.follower_us
            );
            out.push(json!({"round": round, "mode": mode, "appenders": appenders,
                "on_per_s": on.rate, "off_per_s": off.rate, "ratio": on.rate / off.rate,
                "cpu_us_per_entry_on": on.cpu_us, "cpu_us_per_entry_off": off.cpu_us,
                "writer_us_per_entry_on": on.writer_us, "writer_us_per_entry_off": off.writer_us,
                "follower_us_per_entry": on.follower_us}));
        }
    }
    Ok(out)
}

/// Pseudo-random numbers below the `n` of each call (xorshift64 from `seed`): every run asks for
/// the same entries.
fn picker(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

fn quantiles(h: &Histogram<u64>) -> (f64, f64, f64) {
    let us = |v: u64| v as f64 / 1_000.0;
    (
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.99)),
        us(h.max()),
    )
}

async fn proofs(dir: &Path, args: &TlogArgs) -> anyhow::Result<Vec<Value>> {
    let jdir = dir.join("proofs");
    let mut cfg = JournalConfig::new(jdir.join("journal"), "bench", jdir.join("signing.key"));
    cfg.durability = Durability::Batched {
        window: Duration::from_millis(5),
        max_entries: 8_192,
    };
    let (journal, _) = Journal::open_async(cfg.clone()).await?;
    let tlog = journal
        .tlog()
        .map_err(|e| anyhow::anyhow!("transparency log: {e}"))?
        .clone();
    let mut sizes: Vec<u64> = [10_000u64, 100_000, 1_000_000, 10_000_000]
        .into_iter()
        .filter(|s| *s < args.entries)
        .collect();
    sizes.push(args.entries);
    println!(
        "{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>11}",
        "leaves",
        "incl p50",
        "incl p99",
        "incl max",
        "cons p50",
        "cons p99",
        "cons max",
        "hashes",
        "32·⌈log₂n⌉"
    );
    let mut written = 0u64;
    let mut out = Vec::new();
    let write_start = Instant::now();
    for size in sizes {
        // Grow the journal to `size` entries with 256 concurrent appenders.
        let mut tasks = Vec::new();
        let next = Arc::new(AtomicU64::new(written));
        for _ in 0..256u64 {
            let (journal, next) = (journal.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= size {
                        break;
                    }
                    journal.append(draft(i)).await?;
                }
                anyhow::Ok(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        written = size;
        journal.flush().await?;
        tlog.reach(size).await?;
        let t = tlog.clone();
        let proofs = args.proofs;
        let row = tokio::task::spawn_blocking(move || -> anyhow::Result<Value> {
            let mut incl = Histogram::<u64>::new(3)?;
            let mut cons = Histogram::<u64>::new(3)?;
            let mut longest = 0usize;
            let mut next = picker(0x9e37_79b9_7f4a_7c15);
            for _ in 0..proofs {
                // The entry of request i is seq i + 1 only when appended in order; the index
                // says where it really is, as the endpoint asks it.
                let i = next(size);
                let t0 = Instant::now();
                let found = t
                    .find(&draft(i).request_id)?
                    .ok_or_else(|| anyhow::anyhow!("request {i} not indexed"))?;
                let path = t.inclusion(found.seq - 1, size)?;
                incl.record(t0.elapsed().as_nanos() as u64)?;
                longest = longest.max(path.len());
                let m = 1 + next(size);
                let t0 = Instant::now();
                let _ = t.consistency(m, size)?;
                cons.record(t0.elapsed().as_nanos() as u64)?;
            }
            let (ip50, ip99, imax) = quantiles(&incl);
            let (cp50, cp99, cmax) = quantiles(&cons);
            let bound = 32 * (64 - (size - 1).leading_zeros()) as usize;
            println!(
                "{size:>10} {ip50:>8.1}µ {ip99:>8.1}µ {imax:>8.1}µ {cp50:>8.1}µ {cp99:>8.1}µ {cmax:>8.1}µ {longest:>7} {bound:>11}"
            );
            Ok(json!({"leaves": size, "inclusion_p50_us": ip50, "inclusion_p99_us": ip99,
                "inclusion_max_us": imax, "consistency_p50_us": cp50, "consistency_p99_us": cp99,
                "consistency_max_us": cmax, "proof_bytes_max": 32 * longest, "bound_bytes": bound}))
        })
        .await??;
        out.push(row);
    }
    let elapsed = write_start.elapsed();
    journal.close().await?;
    let tdir = sovereign::journal::tlog::tlog_dir(&cfg.dir, "bench");
    let tree_bytes: u64 = std::fs::read_dir(&tdir)?
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    println!(
        "{written} entries written in {:.1} s; the log's files: {tree_bytes} bytes ({:.1} per entry)",
        elapsed.as_secs_f64(),
        tree_bytes as f64 / written as f64
    );
    out.push(json!({"entries": written, "tlog_bytes": tree_bytes}));
    Ok(out)
}

/// The journal `proofs` left in `jdir` (chain `bench`, its log) served by the real gateway,
/// once with its journal durable (the default: each request's own entry is fsynced before the
/// answer) and once batched: one keep-alive connection, requests one at a time, a proof of a
/// random entry's inclusion, a consistency proof and `GET /v1/models` in turn — the models
/// listing is the same authenticated, journaled request without a proof, so the difference is
/// what the proof costs served.
async fn served(bin: &Path, jdir: &Path, args: &TlogArgs) -> anyhow::Result<Vec<Value>> {
    let (secret, hash) = servers::keygen(bin)?;
    let size = args.entries;
    let base = servers::gateway_config("http://127.0.0.1:9", &hash, None);
    let text = base
        .replace("sovereign_id = \"bench-gw-1\"", "sovereign_id = \"bench\"")
        .replace("role = \"member\"", "role = \"admin\"");
    anyhow::ensure!(
        text.contains("sovereign_id = \"bench\"") && text.contains("role = \"admin\""),
        "the bench config's id or key moved (servers::gateway_config)"
    );
    println!(
        "served by {} (one connection, one request at a time, {} of each kind, {size} entries)",
        bin.display(),
        args.served
    );
    println!(
        "{:<8} {:>7} {:>22} {:>22} {:>22}",
        "journal", "open s", "models p50/p99/max", "proof p50/p99/max", "consistency p50/p99/max"
    );
    let mut out = Vec::new();
    for mode in ["durable", "batched"] {
        let config = jdir.join(format!("gateway-{mode}.toml"));
        std::fs::write(
            &config,
            format!(
                "data_dir = \"data-{mode}\"\n{text}\n[journal]\ndir = \"journal\"\n\
                 signing_key = \"signing.key\"\ndurability = \"{mode}\"\n"
            ),
        )?;
        let started = Instant::now();
        // Opening verifies the whole chain first.
        let gw = servers::Server::start_within(
            "gateway",
            bin,
            &["serve", "--config", &config.display().to_string()],
            jdir.join(format!("gateway-{mode}.log")),
            "warn",
            Duration::from_secs(600),
        )?;
        let open_s = started.elapsed().as_secs_f64();
        let client = crate::load::client(1)?;
        let auth = format!("Bearer {secret}");
        let mut next = picker(0x2545_f491_4f6c_dd1d);
        let mut hist = [
            Histogram::<u64>::new(3)?,
            Histogram::<u64>::new(3)?,
            Histogram::<u64>::new(3)?,
        ];
        let warmup = (args.served / 10).max(10);
        for k in 0..warmup + args.served {
            let paths = [
                "/v1/models".to_string(),
                format!(
                    "/v1/activity/proof?request_id={}",
                    draft(next(size)).request_id
                ),
                format!("/v1/activity/consistency?from={}&to={size}", 1 + next(size)),
            ];
            for (h, path) in hist.iter_mut().zip(paths) {
                let took = get(&client, &format!("{}{path}", gw.url), &auth).await?;
                if k >= warmup {
                    h.record(took.as_nanos() as u64)?;
                }
            }
        }
        let q = hist.each_ref().map(quantiles);
        let cell = |(p50, p99, max): (f64, f64, f64)| format!("{p50:.0}/{p99:.0}/{max:.0} µs");
        println!(
            "{mode:<8} {open_s:>7.1} {:>22} {:>22} {:>22}",
            cell(q[0]),
            cell(q[1]),
            cell(q[2])
        );
        out.push(json!({"journal": mode, "leaves": size, "open_s": open_s,
            "models_p50_us": q[0].0, "models_p99_us": q[0].1,
            "proof_p50_us": q[1].0, "proof_p99_us": q[1].1, "proof_max_us": q[1].2,
            "consistency_p50_us": q[2].0, "consistency_p99_us": q[2].1}));
        drop(gw);
    }
    Ok(out)
}

/// One authenticated GET to the end of its body, which must be a 200; how long it took.
async fn get(client: &crate::load::HttpClient, url: &str, auth: &str) -> anyhow::Result<Duration> {
    use http_body_util::BodyExt as _;
    let req = hyper::Request::get(url)
        .header("authorization", auth)
        .body(http_body_util::Full::new(bytes::Bytes::new()))?;
    let t0 = Instant::now();
    let resp = client.request(req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    let took = t0.elapsed();
    anyhow::ensure!(
        status == hyper::StatusCode::OK,
        "GET {url}: {status}: {}",
        String::from_utf8_lossy(&body)
    );
    Ok(took)
}

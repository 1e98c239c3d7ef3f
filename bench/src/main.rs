//! `sovereign-bench`: the latency the gateway adds over calling its upstream directly.
//!
//! Starts `sovereign simulate` (a fast local upstream) and `sovereign serve` in front of it, then
//! runs the same load first straight at the simulator and then through the gateway, and prints
//! both side by side with the difference: a human table, then one JSON line for scripts.
//! `--journal-compare` instead measures the activity journal (`journal.rs`); `--tls-compare`
//! HTTPS against plain HTTP and new TLS handshakes per second (`tls.rs`); `--responses-compare`
//! the Responses API against chat completions and continuation latency (`responses.rs`);
//! `--backends-compare` PostgreSQL + Redis against SQLite, and two replicas at once (`backends.rs`);
//! `--mcp-compare` a tool call through `/mcp` against calling the MCP server directly (`mcp.rs`);
//! `sovereign-bench peers` the gateway against LiteLLM and Portkey's gateway (`peers/`).
//! See bench/README.md.

mod backends;
mod journal;
mod load;
mod mcp;
mod peers;
mod responses;
mod servers;
mod stub;
mod tlog;
mod tls;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use clap::{Parser, Subcommand, ValueEnum};
use hdrhistogram::Histogram;
use serde_json::{Value, json};

use load::{Recorder, Target};
use servers::Server;

/// The budget in DESIGN.md ("Performance budget"): added p50 and p99, in milliseconds.
const GOAL_P50_MS: f64 = 0.2;
const GOAL_P99_MS: f64 = 1.0;

/// The gateway's allocator (`host/src/main.rs`): the journal, its log and the servers' code run
/// in this process (`tlog`, `--journal-compare`'s appends) as they do in the gateway.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "sovereign-bench",
    about = "Measures the latency the Sovereign Gateway adds over calling its upstream directly"
)]
struct Args {
    /// Another measurement instead of the latency the gateway adds.
    #[command(subcommand)]
    mode: Option<Mode>,
    /// The `sovereign` binary to start (simulator and gateway).
    #[arg(long, default_value = "target/release/sovereign")]
    bin: PathBuf,
    /// Open loop: requests per second, constant rate.
    #[arg(long, default_value_t = 1000.0)]
    rate: f64,
    /// Measured seconds per target (split over the rounds).
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Seconds of unmeasured load on each target before measuring.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Keep-alive connections: the cap on requests in flight (open loop), the number of workers
    /// (closed loop, `--max`).
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Alternate direct and gateway over this many rounds (direct first in odd rounds, gateway
    /// first in even ones), to spread drift (thermal, other load) over both.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Streamed requests: measure time to first byte instead of the whole answer.
    #[arg(long)]
    stream: bool,
    /// Closed loop: `--connections` workers as fast as possible; reports maximum throughput.
    #[arg(long)]
    max: bool,
    /// Tokio worker threads of the load generator (it shares the cores with both servers).
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// The model named in the requests (default: `qwen2.5-coder-32b`; with `--router`,
    /// `auto-router`). Direct requests name the model the router picks for "hi".
    #[arg(long)]
    model: Option<String>,
    /// Configure the gateway's built-in Wasm rules router with the demo's routing document and
    /// send `model: auto-router` through the gateway (it routes "hi" to `llama-3.2-3b-instruct`,
    /// which the direct requests name).
    #[arg(long)]
    router: bool,
    /// `max_tokens` of each request.
    #[arg(long, default_value_t = 16)]
    max_tokens: u32,
    /// Simulator: delay before each response's headers, in milliseconds.
    #[arg(long, default_value_t = 0)]
    sim_latency_ms: u64,
    /// Simulator: delay between two streamed tokens, in milliseconds.
    #[arg(long, default_value_t = 0)]
    sim_token_interval_ms: u64,
    /// The upstream both targets end at: `sovereign simulate`, or a minimal hyper server built
    /// into this binary that answers without any timer (see README: the simulator's timer floor).
    #[arg(long, value_enum, default_value_t = Upstream::Simulator)]
    upstream: Upstream,
    /// Internal: run the stub upstream on ADDR (what `--upstream stub` starts).
    #[arg(long, hide = true)]
    stub_listen: Option<std::net::SocketAddr>,
    /// Keep the temporary directory (config, server logs) after a successful run too.
    #[arg(long)]
    keep_logs: bool,
    /// The gateway's activity journal in the ordinary run: `off` (as the figures before it was
    /// wired were measured), `durable` (the shipped default) or `batched` (5 ms).
    #[arg(long, value_enum, default_value_t = JournalMode::Off)]
    journal: JournalMode,
    /// Measure the journal instead: appends/s with group commit, then the added p50/p99 per
    /// request of a gateway with the journal durable and batched over one with it off.
    #[arg(long)]
    journal_compare: bool,
    /// Measure TLS instead: keep-alive throughput and p99 over HTTPS vs plain HTTP (closed
    /// loop, `--connections` workers), then new full handshakes per second.
    #[arg(long)]
    tls_compare: bool,
    /// Measure the Responses API instead: its throughput and p99 against chat completions on
    /// one gateway (closed loop), then the latency of a continuation sent at once.
    #[arg(long)]
    responses_compare: bool,
    /// Measure the scale-out back end instead: a replica on PostgreSQL + Redis against the
    /// embedded gateway (SQLite, in-process limits), then two replicas at once. Needs
    /// `SOVEREIGN_STORE_URL` and `SOVEREIGN_REDIS_URL` (`scripts/services start DIR`).
    #[arg(long)]
    backends_compare: bool,
    /// Measure the MCP gateway instead: the p50/p99 a `tools/call` through `/mcp` adds over
    /// calling the MCP server directly (open loop, `--rate`), then tool calls per second (closed
    /// loop, `--connections` workers). Always on the stub upstream, which serves `/mcp`.
    #[arg(long)]
    mcp_compare: bool,
    /// RUST_LOG for both servers (their logs go to files in a temporary directory).
    #[arg(long, default_value = "info")]
    server_log: String,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// The gateway (all policies on, and none) against LiteLLM's proxy and Portkey's gateway,
    /// installed into a cache directory on first use, under the same closed-loop load on the
    /// same stub upstream (bench/README.md, "Peers").
    Peers(peers::PeersArgs),
    /// The journal's transparency log (issue 48): appends/s with the log on and off, then
    /// inclusion and consistency proofs in trees up to `--entries` leaves (bench/README.md,
    /// "Transparency log").
    Tlog(tlog::TlogArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum JournalMode {
    Off,
    Durable,
    Batched,
}

impl JournalMode {
    fn table(self) -> &'static str {
        match self {
            JournalMode::Off => "[journal]\nenabled = false\n",
            JournalMode::Durable => "[journal]\ndurability = \"durable\"\n",
            JournalMode::Batched => "[journal]\ndurability = \"batched\"\nbatch_window_ms = 5\n",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Upstream {
    Simulator,
    Stub,
}

fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(listen) = args.stub_listen {
        return stub::serve(listen);
    }
    if let Some(Mode::Peers(peers)) = &args.mode {
        return peers::run(peers);
    }
    if let Some(Mode::Tlog(tlog)) = &args.mode {
        return tlog::run(tlog, &args.bin);
    }
    if args.rate.is_nan()
        || args.rate <= 0.0
        || args.duration.is_nan()
        || args.duration <= 0.0
        || args.rounds == 0
        || args.connections == 0
    {
        bail!("--rate, --duration, --rounds and --connections must be positive");
    }
    servers::require_bin(&args.bin)?;
    let dir = std::env::temp_dir().join(format!("sovereign-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    let latency = args.sim_latency_ms.to_string();
    let interval = args.sim_token_interval_ms.to_string();
    // The MCP server is the stub's `/mcp`.
    let upstream = if args.mcp_compare {
        Upstream::Stub
    } else {
        args.upstream
    };
    let sim = match upstream {
        Upstream::Simulator => Server::start(
            "simulator",
            &args.bin,
            &[
                "simulate",
                "--listen",
                "127.0.0.1:0",
                "--latency-ms",
                &latency,
                "--token-interval-ms",
                &interval,
            ],
            dir.join("simulator.log"),
            &args.server_log,
        )?,
        Upstream::Stub => Server::start(
            "stub upstream",
            &std::env::current_exe().context("locating sovereign-bench itself")?,
            &["--stub-listen", "127.0.0.1:0"],
            dir.join("stub.log"),
            &args.server_log,
        )?,
    };
    let (secret, hash) = servers::keygen(&args.bin)?;
    if args.journal_compare {
        let summary = journal::compare(&args, sim, &secret, &hash, &dir)
            .map_err(|e| e.context(format!("server logs kept in {}", dir.display())))?;
        println!("{}", serde_json::to_string(&summary)?);
        if !args.keep_logs {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Ok(());
    }
    if args.tls_compare || args.responses_compare || args.backends_compare || args.mcp_compare {
        let summary = if args.tls_compare {
            tls::compare(&args, sim, &secret, &hash, &dir)
        } else if args.backends_compare {
            backends::compare(&args, sim, &secret, &hash, &dir)
        } else if args.mcp_compare {
            mcp::compare(&args, sim, &secret, &hash, &dir)
        } else {
            responses::compare(&args, sim, &secret, &hash, &dir)
        }
        .map_err(|e| e.context(format!("server logs kept in {}", dir.display())))?;
        println!("{}", serde_json::to_string(&summary)?);
        if !args.keep_logs {
            let _ = std::fs::remove_dir_all(&dir);
        }
        return Ok(());
    }
    let routing = if args.router {
        let doc = dir.join("routing.yaml");
        std::fs::write(&doc, sovereign::demo::DEMO_ROUTING)
            .with_context(|| format!("writing {}", doc.display()))?;
        Some("routing.yaml")
    } else {
        None
    };
    let text = format!(
        "{}\n{}",
        servers::gateway_config(&sim.url, &hash, routing),
        args.journal.table()
    );
    let gw = start_gateway(&args, &dir, "gateway", &text)?;

    let rt = client_runtime(&args)?;
    let result = rt.block_on(run(&args, sim, gw, &secret));
    rt.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) if args.keep_logs => {
            println!("config and server logs kept in {}", dir.display());
            Ok(())
        }
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&dir);
            Ok(())
        }
        Err(e) => Err(e.context(format!("server logs kept in {}", dir.display()))),
    }
}

/// Writes `text` as `<name>.toml` in `dir` and starts `sovereign serve` on it (log `<name>.log`).
fn start_gateway(
    args: &Args,
    dir: &std::path::Path,
    name: &str,
    text: &str,
) -> anyhow::Result<Server> {
    let config = dir.join(format!("{name}.toml"));
    std::fs::write(&config, text).with_context(|| format!("writing {}", config.display()))?;
    let config_arg = config.display().to_string();
    Server::start(
        "gateway",
        &args.bin,
        &["serve", "--config", &config_arg],
        dir.join(format!("{name}.log")),
        &args.server_log,
    )
}

/// The load generator's runtime: `--client-threads` workers (it shares the cores with the
/// servers).
fn client_runtime(args: &Args) -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .thread_name("bench-client")
        .enable_all()
        .build()?)
}

/// Totals for one target over all rounds, with the CPU the processes used meanwhile.
pub(crate) struct Side {
    pub(crate) rec: Recorder,
    cpu_sim: Duration,
    cpu_gw: Duration,
    cpu_bench: Duration,
    machine_busy: Duration,
    machine_total: Duration,
}

impl Side {
    pub(crate) fn new() -> anyhow::Result<Side> {
        Ok(Side {
            rec: Recorder::new()?,
            cpu_sim: Duration::ZERO,
            cpu_gw: Duration::ZERO,
            cpu_bench: Duration::ZERO,
            machine_busy: Duration::ZERO,
            machine_total: Duration::ZERO,
        })
    }

    /// One phase's answers, and the CPU used between `before` and `after` it.
    pub(crate) fn add(&mut self, rec: &Recorder, before: &Cpu, after: &Cpu) -> anyhow::Result<()> {
        self.cpu_sim += after.sim.saturating_sub(before.sim);
        self.cpu_gw += after.gw.saturating_sub(before.gw);
        self.cpu_bench += after.bench.saturating_sub(before.bench);
        self.machine_busy += after.machine_busy.saturating_sub(before.machine_busy);
        self.machine_total += after.machine_total.saturating_sub(before.machine_total);
        self.rec.merge(rec)
    }

    /// CPU per answered request, in µs: the simulator, the gateway, this client, and every
    /// other process on the machine (with `--backends-compare`, PostgreSQL and Redis).
    pub(crate) fn cpu_per_request(&self) -> [f64; 4] {
        let ours = self.cpu_sim + self.cpu_gw + self.cpu_bench;
        [
            self.cpu_sim,
            self.cpu_gw,
            self.cpu_bench,
            self.machine_busy.saturating_sub(ours),
        ]
        .map(|c| per_request_us(c, self.rec.ok))
    }

    /// The share of the machine's CPU (all cores) that processes other than the simulator, the
    /// gateway and this client used while this side was measured.
    fn others_share(&self) -> f64 {
        let ours = self.cpu_sim + self.cpu_gw + self.cpu_bench;
        let total = self.machine_total.as_secs_f64();
        if total > 0.0 {
            self.machine_busy.saturating_sub(ours).as_secs_f64() / total
        } else {
            0.0
        }
    }
}

async fn run(args: &Args, mut sim: Server, mut gw: Server, secret: &str) -> anyhow::Result<()> {
    let (direct_model, gateway_model) = match (&args.model, args.router) {
        (Some(m), _) => (m.as_str(), m.as_str()),
        (None, false) => ("qwen2.5-coder-32b", "qwen2.5-coder-32b"),
        (None, true) => ("llama-3.2-3b-instruct", "auto-router"),
    };
    let body = |model: &str| -> anyhow::Result<Bytes> {
        let mut body = json!({
            "model": model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": args.max_tokens,
        });
        if args.stream {
            body["stream"] = Value::Bool(true);
        }
        Ok(Bytes::from(serde_json::to_vec(&body)?))
    };
    let direct = Target {
        name: "direct",
        uri: format!("{}/v1/chat/completions", sim.url).parse()?,
        authorization: None,
        headers: Vec::new(),
        body: body(direct_model)?,
        stream: args.stream,
    };
    let gateway = Target {
        name: "gateway",
        uri: format!("{}/v1/chat/completions", gw.url).parse()?,
        authorization: Some(format!("Bearer {secret}")),
        headers: Vec::new(),
        body: body(gateway_model)?,
        stream: args.stream,
    };
    let client = load::client(args.connections)?;
    load::preflight(&client, &direct).await?;
    load::preflight(&client, &gateway).await?;

    let mode = if args.max {
        format!("closed loop (max throughput), {} workers", args.connections)
    } else {
        format!(
            "open loop, {} req/s, up to {} connections",
            args.rate, args.connections
        )
    };
    println!(
        "sovereign-bench: {mode}, {}, {} s measured per target in {} round(s) after {} s warm-up, \
         {} client thread(s)",
        if args.stream {
            "streaming (time to first byte)"
        } else {
            "non-streaming"
        },
        args.duration,
        args.rounds,
        args.warmup,
        args.client_threads,
    );
    println!(
        "upstream ({}) {}  gateway {}  model {direct_model} (direct) / {gateway_model} (gateway)",
        sim.name, sim.url, gw.url
    );

    let phase = |target: &Target, secs: f64| {
        let client = client.clone();
        let target = target.clone();
        let max = args.max;
        let (rate, conns) = (args.rate, args.connections);
        async move {
            let d = Duration::from_secs_f64(secs);
            if max {
                load::closed_loop(&client, &target, conns, d).await
            } else {
                load::open_loop(&client, &target, rate, d, conns).await
            }
        }
    };

    if args.warmup > 0.0 {
        for t in [&direct, &gateway] {
            let r = phase(t, args.warmup).await?;
            if r.errors > 0 {
                eprintln!(
                    "warm-up {}: {} errors, first: {}",
                    t.name,
                    r.errors,
                    r.first_error.as_deref().unwrap_or("")
                );
            }
        }
    }

    let load_start = servers::loadavg().unwrap_or(-1.0);
    let mut sides = [Side::new()?, Side::new()?];
    let mut rounds_detail = Vec::new();
    let per_round = args.duration / f64::from(args.rounds);
    let me = std::process::id();
    for round in 0..args.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut round_recs: [Option<Recorder>; 2] = [None, None];
        for i in order {
            let target = if i == 0 { &direct } else { &gateway };
            let before = Cpu::now(&sim, &gw, me);
            let rec = phase(target, per_round).await?;
            let after = Cpu::now(&sim, &gw, me);
            sides[i].add(&rec, &before, &after)?;
            sim.check_alive()?;
            gw.check_alive()?;
            round_recs[i] = Some(rec);
        }
        if let [Some(d), Some(g)] = &round_recs {
            let line = json!({
                "round": round + 1,
                "direct_p50_ms": ms(&d.latency, 0.5),
                "direct_p99_ms": ms(&d.latency, 0.99),
                "gateway_p50_ms": ms(&g.latency, 0.5),
                "gateway_p99_ms": ms(&g.latency, 0.99),
                "direct_rps": round3(d.throughput()),
                "gateway_rps": round3(g.throughput()),
            });
            if args.rounds > 1 {
                println!(
                    "round {:>2}: direct p50 {:.3} p99 {:.3} ({:.0}/s) | gateway p50 {:.3} p99 {:.3} ({:.0}/s) | added p50 {:+.3} p99 {:+.3} ms",
                    round + 1,
                    ms(&d.latency, 0.5),
                    ms(&d.latency, 0.99),
                    d.throughput(),
                    ms(&g.latency, 0.5),
                    ms(&g.latency, 0.99),
                    g.throughput(),
                    ms(&g.latency, 0.5) - ms(&d.latency, 0.5),
                    ms(&g.latency, 0.99) - ms(&d.latency, 0.99),
                );
            }
            rounds_detail.push(line);
        }
    }

    let [d, g] = &sides;
    let load = (load_start, servers::loadavg().unwrap_or(-1.0));
    let summary = report(args, d, g, rounds_detail, load);
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}

/// CPU time used so far by our three processes and by the whole machine.
pub(crate) struct Cpu {
    sim: Duration,
    gw: Duration,
    bench: Duration,
    machine_busy: Duration,
    machine_total: Duration,
}

impl Cpu {
    pub(crate) fn now(sim: &Server, gw: &Server, me: u32) -> Cpu {
        let c = |pid| servers::cpu_time(pid).unwrap_or_default();
        let (machine_busy, machine_total) = servers::machine_cpu().unwrap_or_default();
        Cpu {
            sim: c(sim.pid()),
            gw: c(gw.pid()),
            bench: c(me),
            machine_busy,
            machine_total,
        }
    }
}

const QUANTILES: [(&str, f64); 5] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("max", 1.0),
];

fn ms(h: &Histogram<u64>, q: f64) -> f64 {
    let ns = if q >= 1.0 {
        h.max()
    } else {
        h.value_at_quantile(q)
    };
    round3(ns as f64 / 1e6)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn quantiles_json(h: &Histogram<u64>) -> Value {
    let mut m = serde_json::Map::new();
    for (name, q) in QUANTILES {
        m.insert(name.into(), json!(ms(h, q)));
    }
    m.insert("mean".into(), json!(round3(h.mean() / 1e6)));
    Value::Object(m)
}

fn diff_json(d: &Histogram<u64>, g: &Histogram<u64>) -> Value {
    let mut m = serde_json::Map::new();
    for (name, q) in QUANTILES.iter().take(4) {
        m.insert((*name).into(), json!(round3(ms(g, *q) - ms(d, *q))));
    }
    Value::Object(m)
}

fn ratio_json(d: &Histogram<u64>, g: &Histogram<u64>) -> Value {
    let mut m = serde_json::Map::new();
    for (name, q) in QUANTILES.iter().take(4) {
        let r = if ms(d, *q) > 0.0 {
            ms(g, *q) / ms(d, *q)
        } else {
            0.0
        };
        m.insert((*name).into(), json!(round3(r)));
    }
    Value::Object(m)
}

fn row(name: &str, r: &Recorder, h: &Histogram<u64>) {
    print!(
        "  {name:<20} {:>8} {:>6} {:>9.1}",
        r.ok,
        r.errors,
        r.throughput()
    );
    for (_, q) in QUANTILES {
        print!(" {:>8.3}", ms(h, q));
    }
    println!();
}

fn table(title: &str, d: &Side, g: &Side, pick: fn(&Recorder) -> &Histogram<u64>, diff: bool) {
    println!();
    println!("{title} (ms)");
    print!("  {:<20} {:>8} {:>6} {:>9}", "", "ok", "errors", "req/s");
    for (name, _) in QUANTILES {
        print!(" {name:>8}");
    }
    println!();
    row("direct", &d.rec, pick(&d.rec));
    row("gateway", &g.rec, pick(&g.rec));
    if diff {
        let (hd, hg) = (pick(&d.rec), pick(&g.rec));
        print!(
            "  {:<20} {:>8} {:>6} {:>9}",
            "added (gw - direct)", "", "", ""
        );
        for (_, q) in QUANTILES.iter().take(4) {
            print!(" {:>+8.3}", ms(hg, *q) - ms(hd, *q));
        }
        println!();
        print!(
            "  {:<20} {:>8} {:>6} {:>9}",
            "ratio (gw / direct)", "", "", ""
        );
        for (_, q) in QUANTILES.iter().take(4) {
            let r = if ms(hd, *q) > 0.0 {
                ms(hg, *q) / ms(hd, *q)
            } else {
                0.0
            };
            print!(" {:>7.2}x", r);
        }
        println!();
    }
}

fn per_request_us(cpu: Duration, ok: u64) -> f64 {
    if ok == 0 {
        0.0
    } else {
        (cpu.as_secs_f64() * 1e6 / ok as f64).round()
    }
}

fn report(args: &Args, d: &Side, g: &Side, rounds_detail: Vec<Value>, load: (f64, f64)) -> Value {
    let what = if args.stream {
        "time to first byte"
    } else {
        "latency"
    };
    if args.max {
        table(
            &format!("{what}, closed loop (service time)"),
            d,
            g,
            |r| &r.service,
            false,
        );
    } else {
        table(
            &format!("{what} from the scheduled send time (includes client queueing)"),
            d,
            g,
            |r| &r.latency,
            true,
        );
        table(
            &format!("{what} from the actual send (service time)"),
            d,
            g,
            |r| &r.service,
            true,
        );
    }
    if args.stream {
        table(
            "whole stream, from the scheduled send time",
            d,
            g,
            |r| &r.complete,
            !args.max,
        );
    }

    println!();
    let ([d_sim, d_gw, d_bench, _], [g_sim, g_gw, g_bench, _]) =
        (d.cpu_per_request(), g.cpu_per_request());
    println!(
        "CPU per request (µs, /proc/PID/stat, 10 ms ticks): \
         direct phase: upstream {d_sim} gateway {d_gw} bench {d_bench} | gateway phase: upstream \
         {g_sim} gateway {g_gw} bench {g_bench}",
    );
    println!(
        "other processes on the machine: {:.1}% of all cores during the direct phase, {:.1}% \
         during the gateway phase; load average {:.2} at start, {:.2} at end{}",
        d.others_share() * 100.0,
        g.others_share() * 100.0,
        load.0,
        load.1,
        if d.others_share().max(g.others_share()) > 0.05 {
            "  (NOISY: figures are not representative)"
        } else {
            ""
        }
    );
    for (name, s) in [("direct", d), ("gateway", g)] {
        if let Some(e) = &s.rec.first_error {
            println!("{name}: {} errors, first: {e}", s.rec.errors);
        }
    }

    let added_p50 = ms(&g.rec.latency, 0.5) - ms(&d.rec.latency, 0.5);
    let added_p99 = ms(&g.rec.latency, 0.99) - ms(&d.rec.latency, 0.99);
    let pass = added_p50 < GOAL_P50_MS && added_p99 < GOAL_P99_MS;
    if args.max {
        let ratio = if d.rec.throughput() > 0.0 {
            g.rec.throughput() / d.rec.throughput()
        } else {
            0.0
        };
        println!(
            "max throughput: direct {:.0} req/s, gateway {:.0} req/s ({:.0}% of direct)",
            d.rec.throughput(),
            g.rec.throughput(),
            ratio * 100.0
        );
    } else {
        let errors = d.rec.errors + g.rec.errors;
        println!(
            "goal (DESIGN.md, added latency{}): p50 {:+.3} ms < {GOAL_P50_MS} ms {}, \
             p99 {:+.3} ms < {GOAL_P99_MS} ms {} => {}",
            if args.stream {
                ", here to first byte"
            } else {
                ""
            },
            added_p50,
            if added_p50 < GOAL_P50_MS {
                "ok"
            } else {
                "MISSED"
            },
            added_p99,
            if added_p99 < GOAL_P99_MS {
                "ok"
            } else {
                "MISSED"
            },
            if pass && errors == 0 {
                "PASS"
            } else if errors > 0 {
                "FAIL (errors)"
            } else {
                "FAIL"
            }
        );
    }

    let side = |s: &Side| {
        let [sim_us, gw_us, bench_us, _] = s.cpu_per_request();
        json!({
            "ok": s.rec.ok,
            "errors": s.rec.errors,
            "throughput_rps": round3(s.rec.throughput()),
            "latency_ms": quantiles_json(&s.rec.latency),
            "service_ms": quantiles_json(&s.rec.service),
            "complete_ms": if args.stream { quantiles_json(&s.rec.complete) } else { Value::Null },
            "others_cpu_share": round3(s.others_share()),
            "cpu_us_per_request": {
                "upstream": sim_us,
                "gateway": gw_us,
                "bench": bench_us,
            },
        })
    };
    json!({
        "bench": "sovereign-bench",
        "mode": if args.max { "max" } else { "open" },
        "upstream": match args.upstream { Upstream::Simulator => "simulator", Upstream::Stub => "stub" },
        "stream": args.stream,
        "router": args.router,
        "metric": if args.stream { "ttfb" } else { "latency" },
        "rate_rps": if args.max { Value::Null } else { json!(args.rate) },
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "connections": args.connections,
        "rounds": args.rounds,
        "client_threads": args.client_threads,
        "direct": side(d),
        "gateway": side(g),
        "added_ms": if args.max { Value::Null } else { diff_json(&d.rec.latency, &g.rec.latency) },
        "added_service_ms": if args.max { Value::Null } else { diff_json(&d.rec.service, &g.rec.service) },
        "ratio": if args.max { Value::Null } else { ratio_json(&d.rec.latency, &g.rec.latency) },
        "goal": if args.max { Value::Null } else { json!({
            "added_p50_ms_lt": GOAL_P50_MS,
            "added_p99_ms_lt": GOAL_P99_MS,
            "pass": pass && d.rec.errors + g.rec.errors == 0,
        }) },
        "loadavg_start": load.0,
        "loadavg_end": load.1,
        "rounds_detail": rounds_detail,
    })
}

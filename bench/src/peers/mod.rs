//! `sovereign-bench peers`: the gateway against its peers, LiteLLM's proxy and Portkey's gateway
//! (issue 19), under the same closed-loop load (`--connections` workers, default 16: the bench's
//! client, or wrk with `--load wrk`) on the same fast upstream (the bench's stub, or nginx with
//! `--upstream nginx`: the issue's own harness), one target at a time, each running only during
//! its turn:
//!
//! 1. the upstream alone (direct);
//! 2. Sovereign with every policy on: the key, request rates and tokens per day on its team's
//!    plan and a team budget (limits on, never reached), the Wasm rules router (`auto-router`,
//!    the demo's routing document), the Wasm PII guardrail (the demo's settings), the durable
//!    journal;
//!    then the same load through `POST /v1/messages` on that same gateway process (`messages.rs`:
//!    the Anthropic SDKs' request, `x-api-key`), whose ratio to the chat row is the Messages
//!    dialect's cost (issue 45: within 10%);
//! 3. Sovereign with none: still a key (authentication cannot be turned off), an explicit model,
//!    no guardrail, journal off;
//! 4. litellm-rs's gateway, a Rust peer (crates.io; the TensorZero does not install from
//!    the registries), 5. Portkey's gateway and 6. LiteLLM's proxy (`install.rs`: installed into
//!    a cache directory on first use), each pointing at the same upstream.
//!
//! Every target must first answer 200 with a chat completion (a gateway answering errors fast
//! must not look fast); one that cannot be installed, started or probed is a row with the reason.
//! Then a warm-up and the measured run; non-200 answers during it are counted. One table (req/s,
//! p50, p99, Sovereign's req/s over each row's), the Messages row against the chat row, the
//! Messages translation's own cost per request (timed in-process, `messages.rs`), then one JSON
//! line. See bench/README.md, "Peers".

mod install;
mod messages;
mod nginx;
mod probe;
mod report;
mod wrk;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bytes::Bytes;
use clap::ValueEnum;
use serde_json::{Value, json};

use crate::load::{self, HttpClient, Recorder, Target};
use crate::servers::{self, Server};
use crate::{ms, stub};

/// The model every request names (what the demo router picks for "hi"); Sovereign with all
/// policies gets `auto-router` instead.
const MODEL: &str = "llama-3.2-3b-instruct";

/// The key the peers forward to the stub (which ignores it).
const UPSTREAM_KEY: &str = "sk-bench-upstream";

/// The built-in PII guardrail with the settings `sovereign demo` configures.
const GUARDRAIL: &str = "[guardrail]\nsettings = '{\"default\": \"redact\", \"entities\": \
     {\"credit_card\": \"block\", \"us_ssn\": \"block\", \"saudi_id\": \"flag\", \
     \"emirates_id\": \"flag\", \"egyptian_id\": \"flag\"}}'\n";

/// Limits that are on (every check runs) but never reached in a run.
const PLAN_UNLIMITED: &str =
    "[plans.enterprise]\nrequests_per_minute = 0\nburst = 0\ntokens_per_day = 0\n";
const PLAN_LIMITED: &str = "[plans.enterprise]\nrequests_per_minute = 100000000\nburst = 100000000\n\
     tokens_per_day = 1000000000000\n";
const IP_UNLIMITED: &str = "[access]\nip_requests_per_minute = 0\n";
const IP_LIMITED: &str = "[access]\nip_requests_per_minute = 100000000\nip_burst = 100000000\n";

/// How the all-policies gateway keeps its Wasm instances (`--pools`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pools {
    Fresh,
    Warm,
}

/// The one upstream every target ends at (`--upstream`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamKind {
    /// The bench's own stub (plain hyper).
    Stub,
    /// nginx answering a static chat completion, as the issue measured (`nginx.rs`).
    Nginx,
}

/// What sends the requests (`--load`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadKind {
    /// The bench's closed loop (hyper client, `--client-threads` tokio workers).
    Client,
    /// wrk, as the issue measured (`wrk -t<client-threads> -c<connections>`; `wrk.rs`).
    Wrk,
}

#[derive(clap::Args, Debug)]
pub struct PeersArgs {
    /// The `sovereign` binary (the gateway; `keygen`).
    #[arg(long, default_value = "target/release/sovereign")]
    bin: PathBuf,
    /// Measured seconds per target.
    #[arg(long, default_value_t = 10.0)]
    duration: f64,
    /// Seconds of unmeasured load on each target first.
    #[arg(long, default_value_t = 3.0)]
    warmup: f64,
    /// Closed-loop workers, each on its own keep-alive connection.
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// Tokio worker threads of the load generator.
    #[arg(long, default_value_t = 1)]
    client_threads: usize,
    /// `max_tokens` of each request.
    #[arg(long, default_value_t = 16)]
    max_tokens: u32,
    /// Where the peers are installed on first use and found afterwards (default
    /// `~/.cache/sovereign-bench/peers`).
    #[arg(long)]
    peers_cache: Option<PathBuf>,
    /// Peers neither installed nor measured, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',')]
    skip: Vec<PeerName>,
    /// The upstream every target ends at: the bench's stub, or nginx (Debian's package)
    /// answering a static chat completion, the harness.
    #[arg(long, value_enum, default_value_t = UpstreamKind::Stub)]
    upstream: UpstreamKind,
    /// What sends the load: the bench's own closed loop, or wrk (Debian's package), the issue's
    /// harness (whole seconds of `--duration` and `--warmup`).
    #[arg(long, value_enum, default_value_t = LoadKind::Client)]
    load: LoadKind,
    /// With all policies on: the built-in router's and guardrail's instances reused from a warm
    /// pool or fresh per call (`pool = …` in `[routing]` and `[guardrail]`). Not given: no
    /// `pool` line, the gateway's own default (warm since it has one; an older build that has
    /// no such setting then starts too).
    #[arg(long, value_enum)]
    pools: Option<Pools>,
    /// With all policies on: the journal's `preallocate_bytes` (zeroed room ahead of the writer;
    /// 0, the default, as shipped: each batch appends, and no line is written).
    #[arg(long, default_value_t = 0)]
    journal_preallocate: u64,
    /// Keep the temporary directory (configs, logs) after a run without failed rows too.
    #[arg(long)]
    keep_logs: bool,
    /// Iterations of the in-process timing of the Messages translation (0: not timed).
    #[arg(long, default_value_t = 20_000)]
    translation_iterations: u32,
    /// RUST_LOG for the stub and the gateways.
    #[arg(long, default_value = "info")]
    server_log: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PeerName {
    Litellm,
    Portkey,
    LitellmRs,
}

/// The rows, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Direct,
    SovereignAll,
    /// The all-policies gateway again, on `/v1/messages`.
    SovereignMessages,
    SovereignNone,
    LitellmRs,
    Portkey,
    Litellm,
}

impl Which {
    const ALL: [Which; 7] = [
        Which::Direct,
        Which::SovereignAll,
        Which::SovereignMessages,
        Which::SovereignNone,
        Which::LitellmRs,
        Which::Portkey,
        Which::Litellm,
    ];

    fn name(self) -> &'static str {
        match self {
            Which::Direct => "upstream (direct)",
            Which::SovereignAll => "sovereign, all policies",
            Which::SovereignMessages => "sovereign, all, Messages",
            Which::SovereignNone => "sovereign, no policies",
            Which::LitellmRs => "litellm-rs (Rust)",
            Which::Portkey => "portkey gateway",
            Which::Litellm => "litellm proxy",
        }
    }

    /// What ran the row (`upstream`: the upstream's name, for the direct row).
    fn version(self, upstream: &str) -> &str {
        match self {
            Which::Direct => upstream,
            Which::SovereignAll | Which::SovereignMessages | Which::SovereignNone => "this build",
            Which::LitellmRs => install::LITELLM_RS_VERSION,
            Which::Portkey => install::PORTKEY_VERSION,
            Which::Litellm => install::LITELLM_VERSION,
        }
    }

    fn skipped(self, skip: &[PeerName]) -> bool {
        match self {
            Which::LitellmRs => skip.contains(&PeerName::LitellmRs),
            Which::Portkey => skip.contains(&PeerName::Portkey),
            Which::Litellm => skip.contains(&PeerName::Litellm),
            _ => false,
        }
    }

    /// How long a started target may take to answer its first request.
    fn ready_within(self) -> Duration {
        match self {
            Which::Direct
            | Which::SovereignAll
            | Which::SovereignMessages
            | Which::SovereignNone
            | Which::LitellmRs => Duration::from_secs(10),
            Which::Portkey => Duration::from_secs(60),
            Which::Litellm => Duration::from_secs(180),
        }
    }
}

/// The process behind a target during its turn (stopped on drop).
enum Running {
    Upstream,
    Gateway(Server),
    Peer(install::Peer),
}

impl Running {
    fn pid(&self) -> Option<u32> {
        match self {
            Running::Upstream => None,
            Running::Gateway(s) => Some(s.pid()),
            Running::Peer(p) => Some(p.pid()),
        }
    }

    fn check_alive(&mut self) -> anyhow::Result<()> {
        match self {
            Running::Upstream => Ok(()),
            Running::Gateway(s) => s.check_alive(),
            Running::Peer(p) => p.check_alive(),
        }
    }
}

/// One row of the table.
struct Row {
    which: Which,
    outcome: Result<Measured, String>,
}

/// A measured run's figures, from the bench's closed loop or from wrk.
struct Tally {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    rps: f64,
    /// Service time in the closed loop, ms.
    p50_ms: f64,
    p99_ms: f64,
}

impl From<&Recorder> for Tally {
    fn from(r: &Recorder) -> Tally {
        Tally {
            ok: r.ok,
            errors: r.errors,
            first_error: r.first_error.clone(),
            rps: r.throughput(),
            p50_ms: ms(&r.service, 0.5),
            p99_ms: ms(&r.service, 0.99),
        }
    }
}

struct Measured {
    tally: Tally,
    /// What the first request showed (model, route policy).
    probe: String,
    /// Checks made on the target beyond the load (Sovereign with all policies: the guardrail
    /// refused a card number, the team budget was charged).
    checks: Value,
    /// The share of all cores that processes other than the target, the upstream and the load
    /// generator used during the measured run.
    others_share: f64,
    /// CPU per answered request of the target's processes (the peer and its children); none
    /// for the upstream alone.
    target_cpu_us: Option<f64>,
    /// CPU per answered request of the upstream and the load generator together (the harness:
    /// the stub or nginx, this client or wrk).
    harness_cpu_us: f64,
    /// The share of all cores nobody used during the measured run: well above zero, the target
    /// waited (on its disk, on wake-ups) rather than ran out of processor.
    idle_share: f64,
}

/// The upstream process every target ends at.
enum Upstream {
    Stub(Server),
    Nginx(nginx::Nginx),
}

impl Upstream {
    fn url(&self) -> &str {
        match self {
            Upstream::Stub(s) => &s.url,
            Upstream::Nginx(n) => &n.url,
        }
    }

    fn pid(&self) -> u32 {
        match self {
            Upstream::Stub(s) => s.pid(),
            Upstream::Nginx(n) => n.pid(),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Upstream::Stub(_) => "bench stub",
            Upstream::Nginx(_) => "nginx",
        }
    }
}

/// The keys and the upstream every target shares.
struct Shared<'a> {
    args: &'a PeersArgs,
    cache: PathBuf,
    dir: PathBuf,
    upstream: Upstream,
    secret: String,
    hash: String,
    admin_secret: String,
    admin_hash: String,
}

pub fn run(args: &PeersArgs) -> anyhow::Result<()> {
    if args.duration.is_nan() || args.duration <= 0.0 || args.connections == 0 {
        bail!("--duration and --connections must be positive");
    }
    servers::require_bin(&args.bin)?;
    let dir = std::env::temp_dir().join(format!("sovereign-bench-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let routing = dir.join("routing.yaml");
    std::fs::write(&routing, sovereign::demo::DEMO_ROUTING)
        .with_context(|| format!("writing {}", routing.display()))?;
    let upstream = match args.upstream {
        UpstreamKind::Stub => Upstream::Stub(Server::start(
            "stub upstream",
            &std::env::current_exe().context("locating sovereign-bench itself")?,
            &["--stub-listen", "127.0.0.1:0"],
            dir.join("stub.log"),
            &args.server_log,
        )?),
        UpstreamKind::Nginx => Upstream::Nginx(nginx::Nginx::start(
            &dir,
            &stub::chat_completion(MODEL).to_string(),
        )?),
    };
    let (secret, hash) = servers::keygen(&args.bin)?;
    let (admin_secret, admin_hash) = servers::keygen(&args.bin)?;
    let shared = Shared {
        args,
        cache: install::cache_dir(args.peers_cache.as_deref())?,
        dir: dir.clone(),
        upstream,
        secret,
        hash,
        admin_secret,
        admin_hash,
    };
    println!(
        "sovereign-bench peers: closed loop ({}), {} connections, {} s measured per target after \
         {} s warm-up, {} client thread(s), upstream: {} at {}; peers cached in {}",
        match args.load {
            LoadKind::Client => "the bench's client",
            LoadKind::Wrk => "wrk",
        },
        args.connections,
        args.duration,
        args.warmup,
        args.client_threads,
        shared.upstream.label(),
        shared.upstream.url(),
        shared.cache.display()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .thread_name("bench-client")
        .enable_all()
        .build()?;
    let client = load::client(args.connections)?;
    let load_start = servers::loadavg().unwrap_or(-1.0);
    let mut rows = Vec::new();
    // The all-policies gateway stays up after its row for the Messages row (the same process).
    let mut all_gateway: Option<Running> = None;
    for which in Which::ALL {
        if which.skipped(&args.skip) {
            continue;
        }
        let kept = if which == Which::SovereignMessages {
            all_gateway.take()
        } else {
            None
        };
        let started = match kept {
            Some(Running::Gateway(gw)) => messages::target(
                which.name(),
                &gw.url,
                &shared.secret,
                "auto-router",
                args.max_tokens,
            )
            .map(|t| (Running::Gateway(gw), t)),
            _ => start(&shared, which),
        };
        let outcome = match started {
            Err(e) => Err(format!("did not start: {e:#}")),
            Ok((mut running, target)) => {
                let measured = rt
                    .block_on(measure(&shared, &client, which, &mut running, &target))
                    .map_err(|e| format!("{e:#}"));
                if which == Which::SovereignAll {
                    all_gateway = Some(running);
                }
                measured
            }
        };
        match &outcome {
            Ok(m) => println!(
                "  {:<24} {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms, {} non-200",
                which.name(),
                m.tally.rps,
                m.tally.p50_ms,
                m.tally.p99_ms,
                m.tally.errors
            ),
            Err(e) => println!("  {:<24} NOT MEASURED: {e}", which.name()),
        }
        rows.push(Row { which, outcome });
    }
    drop(all_gateway);
    rt.shutdown_timeout(Duration::from_secs(1));
    let load_end = servers::loadavg().unwrap_or(-1.0);

    let upstream = shared.upstream.label();
    report::table(&rows, upstream, (load_start, load_end));
    let versus = report::messages_versus_chat(&rows);
    let translation = if args.translation_iterations > 0 {
        println!();
        messages::print_translation_cost(args.translation_iterations)?
    } else {
        Value::Null
    };
    let mut summary = report::summary(args, upstream, &rows, (load_start, load_end));
    summary["messages_vs_chat"] = versus;
    summary["messages_translation"] = translation;
    println!("{}", serde_json::to_string(&summary)?);
    let failed = rows.iter().any(|r| r.outcome.is_err());
    if failed || args.keep_logs {
        println!("configs and logs kept in {}", dir.display());
    } else {
        drop(shared);
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

/// Starts the target's process (installing a peer first if needed) and says where to send what.
fn start(s: &Shared, which: Which) -> anyhow::Result<(Running, Target)> {
    let body = |model: &str| -> anyhow::Result<Bytes> {
        Ok(Bytes::from(serde_json::to_vec(&json!({
            "model": model,
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": s.args.max_tokens,
        }))?))
    };
    let target =
        |url: &str, authorization: Option<String>, model: &str| -> anyhow::Result<Target> {
            Ok(Target {
                name: which.name(),
                uri: format!("{url}/v1/chat/completions").parse()?,
                authorization,
                headers: Vec::new(),
                body: body(model)?,
                stream: false,
            })
        };
    let bearer = Some(format!("Bearer {}", s.secret));
    Ok(match which {
        Which::Direct => (Running::Upstream, target(s.upstream.url(), None, MODEL)?),
        Which::SovereignMessages => {
            // Only when the all-policies row did not leave its gateway running (`run`).
            let gw = start_gateway(s, true)?;
            let t = messages::target(
                which.name(),
                &gw.url,
                &s.secret,
                "auto-router",
                s.args.max_tokens,
            )?;
            (Running::Gateway(gw), t)
        }
        Which::SovereignAll | Which::SovereignNone => {
            let all = which == Which::SovereignAll;
            let gw = start_gateway(s, all)?;
            let model = if all { "auto-router" } else { MODEL };
            let t = target(&gw.url, bearer, model)?;
            (Running::Gateway(gw), t)
        }
        Which::LitellmRs => {
            // Anonymous: its keys need its database (`install::litellm_rs`).
            let peer = install::litellm_rs(&s.cache, &s.dir, s.upstream.url(), MODEL)?;
            let t = target(&peer.url, None, MODEL)?;
            (Running::Peer(peer), t)
        }
        Which::Portkey => {
            let peer = install::portkey(&s.cache, &s.dir)?;
            let mut t = target(&peer.url, Some(format!("Bearer {UPSTREAM_KEY}")), MODEL)?;
            t.headers = vec![
                ("x-portkey-provider", "openai".into()),
                ("x-portkey-custom-host", format!("{}/v1", s.upstream.url())),
            ];
            (Running::Peer(peer), t)
        }
        Which::Litellm => {
            // The master key: the same random secret as Sovereign's key.
            let peer = install::litellm(&s.cache, &s.dir, s.upstream.url(), MODEL, &s.secret)?;
            let t = target(&peer.url, bearer, MODEL)?;
            (Running::Peer(peer), t)
        }
    })
}

/// `sovereign serve` with every policy on (`all`) or none, in its own data directory.
fn start_gateway(s: &Shared, all: bool) -> anyhow::Result<Server> {
    let name = if all { "all" } else { "none" };
    let url = s.upstream.url();
    let base = servers::gateway_config(url, &s.hash, all.then_some("routing.yaml"));
    let mut text = format!("data_dir = \"data-{name}\"\n{base}");
    if all {
        let line = format!("base_url = \"{url}/v1\"\n");
        text = text
            .replace(PLAN_UNLIMITED, PLAN_LIMITED)
            .replace(IP_UNLIMITED, IP_LIMITED)
            // A price on every model, so the budget reserves and settles real money.
            .replace(
                &line,
                &format!("{line}input_cost_per_mtok = 0.5\noutput_cost_per_mtok = 1.5\n"),
            );
        anyhow::ensure!(
            text.contains(PLAN_LIMITED)
                && text.contains(IP_LIMITED)
                && text.contains("input_cost_per_mtok"),
            "the bench config's plan, access or model tables moved (servers::gateway_config)"
        );
        text.push_str(&format!(
            "\n{GUARDRAIL}\n[journal]\ndurability = \"durable\"\n"
        ));
        if s.args.journal_preallocate > 0 {
            text.push_str(&format!(
                "preallocate_bytes = {}\n",
                s.args.journal_preallocate
            ));
        }
        let pool = match s.args.pools {
            Some(Pools::Warm) => "pool = \"warm\"\n",
            Some(Pools::Fresh) => "pool = \"fresh\"\n",
            None => "",
        };
        text = text
            .replace("[routing]\n", &format!("[routing]\n{pool}"))
            .replace("[guardrail]\n", &format!("[guardrail]\n{pool}"));
    } else {
        text.push_str("\n[journal]\nenabled = false\n");
    }
    // An admin key, to give the team its budget through the admin API (`measure`).
    text.push_str(&format!(
        "\n[[keys]]\nname = \"bench-admin\"\nteam = \"bench\"\nrole = \"admin\"\nhash = \"{}\"\n",
        s.admin_hash
    ));
    let config = s.dir.join(format!("gateway-{name}.toml"));
    std::fs::write(&config, text).with_context(|| format!("writing {}", config.display()))?;
    let config_arg = config.display().to_string();
    Server::start(
        "gateway",
        &s.args.bin,
        &["serve", "--config", &config_arg],
        s.dir.join(format!("gateway-{name}.log")),
        &s.args.server_log,
    )
}

/// Probe until ready, then warm up and measure one target.
async fn measure(
    s: &Shared<'_>,
    client: &HttpClient,
    which: Which,
    running: &mut Running,
    target: &Target,
) -> anyhow::Result<Measured> {
    let probe = probe::ready(client, target, running, which.ready_within()).await?;
    let base = target
        .uri
        .to_string()
        .replace("/v1/chat/completions", "")
        .replace(messages::PATH, "");
    let all = matches!(which, Which::SovereignAll | Which::SovereignMessages);
    if all {
        probe::admin(
            client,
            &s.admin_secret,
            "PATCH",
            &format!("{base}/v1/admin/teams/bench"),
            Some(json!({"budget": 1_000_000.0, "token_cap_per_day": 1_000_000_000_000_u64})),
        )
        .await
        .context("giving the team a budget")?;
        probe::pii_refused(client, target).await?;
    }
    let workers = s.args.connections;
    let script = s.dir.join("wrk.lua");
    let phase = async |secs: f64| -> anyhow::Result<Tally> {
        if s.args.load == LoadKind::Wrk {
            let (script, target) = (script.clone(), target.clone());
            let threads = s.args.client_threads.max(1);
            return tokio::task::spawn_blocking(move || {
                wrk::run(&script, &target, threads, workers, secs)
            })
            .await?;
        }
        let d = Duration::from_secs_f64(secs);
        match tokio::time::timeout(
            d + Duration::from_secs(30),
            load::closed_loop(client, target, workers, d),
        )
        .await
        {
            Ok(r) => Ok(Tally::from(&r?)),
            Err(_) => bail!("requests still unanswered 30 s after the run's end"),
        }
    };
    if s.args.warmup > 0.0 {
        let r = phase(s.args.warmup).await?;
        if r.errors > 0 {
            eprintln!(
                "warm-up {}: {} non-200, first: {}",
                which.name(),
                r.errors,
                r.first_error.as_deref().unwrap_or("")
            );
        }
    }
    let before = Cpu::now(running.pid(), s.upstream.pid());
    let tally = phase(s.args.duration).await?;
    let after = Cpu::now(running.pid(), s.upstream.pid());
    running.check_alive()?;
    let checks = if all {
        let team = probe::admin(
            client,
            &s.admin_secret,
            "GET",
            &format!("{base}/v1/admin/teams/bench"),
            None,
        )
        .await?;
        json!({"pii_card_refused": true, "team_spend": team["spend"]})
    } else {
        Value::Null
    };
    let ok = tally.ok.max(1) as f64;
    let target_cpu = after.target.saturating_sub(before.target);
    let harness =
        after.upstream.saturating_sub(before.upstream) + after.me.saturating_sub(before.me);
    let ours = target_cpu + harness;
    let total = after.total.saturating_sub(before.total).as_secs_f64();
    let busy = after.busy.saturating_sub(before.busy);
    Ok(Measured {
        others_share: if total > 0.0 {
            busy.saturating_sub(ours).as_secs_f64() / total
        } else {
            0.0
        },
        target_cpu_us: running
            .pid()
            .map(|_| (target_cpu.as_secs_f64() * 1e6 / ok).round()),
        harness_cpu_us: (harness.as_secs_f64() * 1e6 / ok).round(),
        idle_share: if total > 0.0 {
            1.0 - busy.as_secs_f64() / total
        } else {
            0.0
        },
        tally,
        probe,
        checks,
    })
}

/// CPU used so far by the target's processes, the upstream, this process (and the wrk runs it
/// waited for) and the whole machine.
struct Cpu {
    target: Duration,
    upstream: Duration,
    me: Duration,
    busy: Duration,
    total: Duration,
}

impl Cpu {
    fn now(target: Option<u32>, upstream: u32) -> Cpu {
        let c = |pid| servers::cpu_time(pid).unwrap_or_default();
        let (busy, total) = servers::machine_cpu().unwrap_or_default();
        Cpu {
            target: target
                .map(|p| family(p).into_iter().map(c).sum())
                .unwrap_or_default(),
            upstream: c(upstream),
            // With `--load wrk` each run of wrk is a child this process waited for.
            me: c(std::process::id()) + servers::waited_children_cpu_time().unwrap_or_default(),
            busy,
            total,
        }
    }
}

/// A process and its descendants (`/proc/PID/task/TID/children`).
fn family(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while let Some(&p) = all.get(i) {
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for task in tasks.flatten() {
                let children =
                    std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
                all.extend(
                    children
                        .split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
        i += 1;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::probe::chat_completion;
    use super::report::ratio;
    use super::*;

    #[test]
    fn a_chat_completion_is_recognised_and_an_error_is_not() {
        let ok = json!({"object": "chat.completion", "model": "m",
                        "choices": [{"message": {"role": "assistant", "content": "hi"}}]});
        assert_eq!(chat_completion(&ok).as_deref(), Ok("m"));
        assert!(chat_completion(&json!({"error": {"message": "no"}})).is_err());
        let empty = json!({"object": "chat.completion", "choices": [{"message": {"content": ""}}]});
        assert!(chat_completion(&empty).is_err());
    }

    #[test]
    fn ratios_need_both_figures() {
        assert_eq!(ratio(Some(200.0), 100.0), Some(2.0));
        assert_eq!(ratio(None, 100.0), None);
        assert_eq!(ratio(Some(200.0), 0.0), None);
    }

    #[test]
    fn the_gateway_config_still_has_the_tables_the_all_policies_config_replaces() {
        let base = servers::gateway_config("http://127.0.0.1:9", "sha256:00", None);
        assert!(base.contains(PLAN_UNLIMITED));
        assert!(base.contains(IP_UNLIMITED));
        assert!(base.contains("base_url = \"http://127.0.0.1:9/v1\"\n"));
    }
}

//! The `sovereign` command line: parses arguments and starts the library's servers.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use tokio::net::TcpListener;

use sovereign::config::Config;
use sovereign::simulator::{Behaviour, FailMode};
use sovereign::{Gateway, auth, demo, journal, run_simulator, shutdown_signal};

/// mimalloc rather than glibc's malloc: allocation was a fifth of a request's instructions
/// (bench/README.md, "Profile").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "sovereign",
    version,
    about = "Sovereign Gateway: an OpenAI-compatible gateway for self-hosted models"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway with a configuration file.
    Serve {
        #[arg(long)]
        config: PathBuf,
    },
    /// Run the gateway on embedded defaults in front of a built-in simulated model fleet.
    Demo {
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// Where the demo keeps its files (its generated config, later its store).
        #[arg(long, default_value = "sovereign-data")]
        data_dir: PathBuf,
        /// Serve HTTPS with optional client certificates; a demo PKI is written under
        /// `<data-dir>/tls/` (CA, server, a client certificate per role, revoked, expired, CRL).
        #[arg(long)]
        tls: bool,
    },
    /// Run the simulated model fleet alone (an OpenAI-compatible server), e.g. for benchmarks.
    Simulate {
        #[arg(long, default_value = "127.0.0.1:9000")]
        listen: SocketAddr,
        /// Delay before each response's headers, in milliseconds.
        #[arg(long, default_value_t = 0)]
        latency_ms: u64,
        /// Delay between two streamed tokens, in milliseconds.
        #[arg(long, default_value_t = 0)]
        token_interval_ms: u64,
    },
    /// Validate a configuration file and print every error with its path.
    CheckConfig { file: PathBuf },
    /// Generate a new API key: prints the secret and the `hash` line for the config file.
    Keygen,
    /// The activity journal.
    Journal {
        #[command(subcommand)]
        command: JournalCommand,
    },
    /// Policy components (Wasm).
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Load a router component as the gateway would (compile, world check, smoke call, under the
    /// production limits) and run golden inputs through it, printing each decision. Exit code 0
    /// when every case passes, 1 otherwise. Candidates: the demo fleet, or `--config`'s models.
    Test {
        /// The router component (.wasm).
        file: PathBuf,
        /// The routing document given to the router as its `policy` setting.
        #[arg(long)]
        document: Option<PathBuf>,
        /// Golden cases, JSON Lines (docs/POLICIES.md, "Testing a policy"); default: a built-in set.
        #[arg(long)]
        golden: Option<PathBuf>,
        /// A gateway config: its chat models are the candidates and its `[routing]` limits apply.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Deadline per call in ms (default: the config's, else 5).
        #[arg(long)]
        deadline_ms: Option<u64>,
        /// Memory cap in MiB (default: the config's, else 32).
        #[arg(long)]
        memory_mb: Option<u64>,
        /// `fresh` or `warm` (default: the config's, else fresh).
        #[arg(long)]
        pool: Option<String>,
    },
}

#[derive(Subcommand)]
enum JournalCommand {
    /// Verify every chain in DIR (hash chain, seq, links, signed checkpoints). Exit code 0 when
    /// everything verifies, 1 otherwise; the report names the first bad entry.
    Verify {
        dir: PathBuf,
        /// Check against these signed checkpoints (e.g. an exported checkpoints file) instead of
        /// the ones in DIR.
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// The operator's public key (`<signing key>.pub`): checkpoints must be signed with it.
        #[arg(long)]
        public_key: Option<PathBuf>,
    },
    /// Print the transparency log's verifier key (signed-note format), from a gateway config or
    /// from a signing key and an origin.
    Key {
        #[arg(long, conflicts_with_all = ["signing_key", "origin"])]
        config: Option<PathBuf>,
        #[arg(long, requires = "origin")]
        signing_key: Option<PathBuf>,
        #[arg(long)]
        origin: Option<String>,
    },
    /// Fetch one request's evidence from a gateway into OUT: its entry (`entry.jsonl`), its
    /// inclusion proof (`proof.json`) and the signed checkpoint it is proved in
    /// (`checkpoint.txt`). The key is read from SOVEREIGN_API_KEY (an auditor's or an admin's).
    FetchProof {
        #[arg(long)]
        url: String,
        #[arg(long)]
        request_id: String,
        #[arg(long)]
        out: PathBuf,
    },
    /// Fetch the gateway's checkpoint now (`checkpoint.txt`) and the consistency proof from the
    /// checkpoint OLD (kept earlier) to it (`consistency.json`) into OUT; check them with
    /// `verify-consistency OLD OUT/checkpoint.txt OUT/consistency.json`. Key: SOVEREIGN_API_KEY.
    FetchConsistency {
        #[arg(long)]
        url: String,
        old: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
    /// Check the evidence in DIR offline against the log's verifier key (a file or the line).
    /// Exit code 0 when the entry is in the signed tree, 1 otherwise.
    VerifyProof {
        dir: PathBuf,
        #[arg(long)]
        key: String,
    },
    /// Check offline that the checkpoint OLD is a prefix of NEW with the consistency proof PROOF
    /// (`GET /v1/activity/consistency?from=<OLD's size>&to=<NEW's size>`).
    VerifyConsistency {
        old: PathBuf,
        new: PathBuf,
        proof: PathBuf,
        #[arg(long)]
        key: String,
    },
}

fn main() -> ExitCode {
    // The document extraction child (`sovereign_documents::extract_in_child` runs the gateway's
    // own binary so): stdin → stdout, before logging or the runtime exist.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.len() == 1 && args[0] == sovereign_documents::EXTRACT_SUBCOMMAND {
        return ExitCode::from(sovereign_documents::child_main(
            std::io::stdin().lock(),
            std::io::stdout().lock(),
        ));
    }
    passive_openmp();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::CheckConfig { file } => match Config::load(&file) {
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
        },
        Command::Keygen => {
            use std::io::Write as _;
            let secret = auth::generate_secret();
            // Written, not printed: `sovereign keygen | head -1` closes the pipe after the key,
            // which is no error of ours.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "key {secret}")
                .and_then(|()| writeln!(out, "hash = \"{}\"", auth::hash_for_config(&secret)));
            ExitCode::SUCCESS
        }
        Command::Journal {
            command:
                JournalCommand::Verify {
                    dir,
                    checkpoint,
                    public_key,
                },
        } => match verify_journal(&dir, checkpoint.as_deref(), public_key.as_deref()) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
        Command::Journal { command } => match tlog_command(command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("FAIL {e:#}");
                ExitCode::from(1)
            }
        },
        Command::Policy {
            command: PolicyCommand::Test { .. },
        } => {
            let Command::Policy { command } = cli.command else {
                return ExitCode::from(2);
            };
            match runtime().and_then(|rt| rt.block_on(policy_test(command))) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        command => match runtime().and_then(|rt| rt.block_on(serve_command(command))) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
    }
}

/// `sovereign journal verify`: prints the report; true when everything verified.
fn verify_journal(
    dir: &std::path::Path,
    checkpoint: Option<&std::path::Path>,
    public_key: Option<&std::path::Path>,
) -> anyhow::Result<bool> {
    let key = public_key.map(journal::read_public_key).transpose()?;
    let report = journal::verify_dir(dir, checkpoint, key.as_ref())?;
    print!("{report}");
    Ok(report.is_ok())
}

/// The transparency-log subcommands of `sovereign journal` (docs/JOURNAL.md, "Checking one
/// request").
fn tlog_command(command: JournalCommand) -> anyhow::Result<()> {
    use journal::tlog::{audit, note};
    match command {
        JournalCommand::Verify { .. } => Ok(()),
        JournalCommand::Key {
            config,
            signing_key,
            origin,
        } => {
            let (key_path, origin) = match (config, signing_key, origin) {
                (Some(file), ..) => {
                    let config = Config::load(&file).map_err(|e| anyhow::anyhow!("{e}"))?;
                    let settings = config.journal.ok_or_else(|| {
                        anyhow::anyhow!("the journal is disabled in {}", file.display())
                    })?;
                    (settings.open.signing_key, settings.open.origin)
                }
                (None, Some(key), Some(origin)) => (key, origin),
                _ => anyhow::bail!("give --config, or --signing-key and --origin"),
            };
            note::check_origin(&origin).map_err(|e| anyhow::anyhow!("origin {e}"))?;
            let text = std::fs::read_to_string(&key_path)?;
            let seed = hex::decode(text.trim())
                .ok()
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .ok_or_else(|| anyhow::anyhow!("{}: not 64 hex digits", key_path.display()))?;
            let key = ed25519_dalek::SigningKey::from_bytes(&seed);
            println!("{}", note::verifier_key(&origin, &key.verifying_key()));
            Ok(())
        }
        JournalCommand::FetchProof {
            url,
            request_id,
            out,
        } => {
            let api_key = std::env::var("SOVEREIGN_API_KEY").map_err(|_| {
                anyhow::anyhow!("set SOVEREIGN_API_KEY to an auditor's or an admin's key")
            })?;
            runtime()?.block_on(audit::fetch_evidence(&url, &api_key, &request_id, &out))?;
            println!("fetched {request_id} into {}", out.display());
            Ok(())
        }
        JournalCommand::FetchConsistency { url, old, out } => {
            let api_key = std::env::var("SOVEREIGN_API_KEY").map_err(|_| {
                anyhow::anyhow!("set SOVEREIGN_API_KEY to an auditor's or an admin's key")
            })?;
            let old_note = std::fs::read_to_string(&old)?;
            let (from, to) =
                runtime()?.block_on(audit::fetch_consistency(&url, &api_key, &old_note, &out))?;
            println!(
                "fetched the consistency proof from {from} to {to} entries into {}",
                out.display()
            );
            Ok(())
        }
        JournalCommand::VerifyProof { dir, key } => {
            let vkey = audit::read_verifier_key(&key)?;
            println!("{}", audit::verify_evidence(&dir, &vkey)?);
            Ok(())
        }
        JournalCommand::VerifyConsistency {
            old,
            new,
            proof,
            key,
        } => {
            let vkey = audit::read_verifier_key(&key)?;
            let proof: audit::ConsistencyProof = serde_json::from_slice(&std::fs::read(&proof)?)?;
            let (a, b) = audit::verify_consistent(
                &std::fs::read_to_string(&old)?,
                &std::fs::read_to_string(&new)?,
                &proof,
                &vkey,
            )?;
            println!(
                "OK {}: the tree of {} entries is a prefix of the tree of {}",
                a.origin, a.size, b.size
            );
            Ok(())
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

async fn serve_command(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Serve { config } => {
            let config = Config::load(&config).map_err(|e| anyhow::anyhow!("{e}"))?;
            let listener = bind(config.server.listen).await?;
            let shutdown = shutdown_signal();
            let gateway = Gateway::new(config).await?;
            if let Some(secret) = gateway.take_bootstrap_admin_secret() {
                let mut out = std::io::stdout().lock();
                writeln!(
                    out,
                    "The store had no admin key; created one. It is shown only now:\nkey admin {secret}"
                )?;
            }
            announce(&listener, gateway.tls().is_some())?;
            gateway.serve(listener, shutdown).await
        }
        Command::Demo {
            listen,
            data_dir,
            tls,
        } => {
            let fleet = bind("127.0.0.1:0".parse()?).await?;
            let fleet_url = format!("http://{}", fleet.local_addr()?);
            let (stop_fleet, fleet_stopped) = tokio::sync::oneshot::channel::<()>();
            let fleet_task = tokio::spawn(run_simulator(fleet, Behaviour::default(), async {
                let _ = fleet_stopped.await;
            }));

            let listener = bind(listen).await?;
            let keys = demo::DemoKeys::generate();
            let data_dir = std::path::absolute(&data_dir)?;
            let pki = if tls {
                Some(demo::DemoTls::generate(&data_dir)?)
            } else {
                None
            };
            let text = demo::demo_config(
                listener.local_addr()?,
                &fleet_url,
                &keys,
                &data_dir,
                pki.as_ref(),
            );
            let path = demo::write_files(&data_dir, &text)?;
            let config = Config::load(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
            tracing::info!(config = %path.display(), fleet = %fleet_url, "demo configuration written");
            let shutdown = shutdown_signal();
            let gateway = Gateway::new(config).await?;
            let mut out = std::io::stdout().lock();
            if let Some(pki) = &pki {
                writeln!(out, "tls ca {}", pki.ca().display())?;
            }
            for (name, _, secret) in &keys.keys {
                writeln!(out, "key {name} {secret}")?;
            }
            drop(out);
            // Documents and retrieval need the model files: say loudly when they are missing.
            match gateway.state().0.library.as_ref().map(|l| l.readiness()) {
                Some(Ok(())) => eprintln!(
                    "documents: ready (/v1/documents/upload, /v1/rag/query; embedding model {} in process)",
                    sovereign::rag::BUILTIN_MODEL
                ),
                Some(Err(why)) => eprintln!(
                    "\n*** documents and retrieval are UNAVAILABLE: {why}\n*** uploads and queries answer 503 until the model is installed\n"
                ),
                None => {}
            }
            announce(&listener, gateway.tls().is_some())?;
            let result = gateway.serve(listener, shutdown).await;
            let _ = stop_fleet.send(());
            let _ = fleet_task.await;
            result
        }
        Command::Simulate {
            listen,
            latency_ms,
            token_interval_ms,
        } => {
            let listener = bind(listen).await?;
            let shutdown = shutdown_signal();
            announce(&listener, false)?;
            let behaviour = Behaviour {
                latency_ms,
                token_interval_ms,
                fail: FailMode::None,
                finish_with_last_token: false,
                no_usage: false,
            };
            run_simulator(listener, behaviour, shutdown).await
        }
        Command::CheckConfig { .. }
        | Command::Keygen
        | Command::Journal { .. }
        | Command::Policy { .. } => Ok(()),
    }
}

/// The in-process embedding engine (documents, retrieval) uses OpenMP, whose default spin-waiting
/// burns idle cores between calls: a query embedding cost 390 CPU ms instead of 44 on a loaded
/// 2-core machine (host/retrieval/README.md). libgomp reads `OMP_WAIT_POLICY` only when the process
/// starts, so when it is unset the binary re-executes itself (same pid, same arguments and file
/// descriptors) with `passive`; an operator's own setting is kept.
fn passive_openmp() {
    #[cfg(unix)]
    if std::env::var_os("OMP_WAIT_POLICY").is_none()
        && let Ok(exe) = std::env::current_exe()
    {
        use std::os::unix::process::CommandExt;
        // `exec` returns only when it failed; the gateway then runs with libgomp's default.
        let _ = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("OMP_WAIT_POLICY", "passive")
            .exec();
    }
}

/// `sovereign policy test`: true when every case passed.
async fn policy_test(command: PolicyCommand) -> anyhow::Result<bool> {
    use sovereign::policy::{self, CallLimits, Candidate, HostConfig, PolicyHost, RouterPolicy};
    let PolicyCommand::Test {
        file,
        document,
        golden,
        config,
        deadline_ms,
        memory_mb,
        pool,
    } = command;
    let wasm = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let mut limits = CallLimits::default();
    let models = match &config {
        Some(path) => {
            let c = Config::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
            if let Some(r) = &c.routing {
                limits = CallLimits {
                    deadline: r.deadline,
                    memory_bytes: r.memory_bytes,
                    pool: r.pool,
                    warm_max_calls: r.warm_max_calls,
                };
            }
            c.models
        }
        None => demo::fleet_models()?,
    };
    if let Some(ms) = deadline_ms {
        limits.deadline = std::time::Duration::from_millis(ms);
    }
    if let Some(mb) = memory_mb {
        limits.memory_bytes = usize::try_from(mb << 20)?;
    }
    if let Some(p) = pool {
        limits.pool = match p.as_str() {
            "fresh" => policy::PoolMode::Fresh,
            "warm" => policy::PoolMode::Warm,
            other => anyhow::bail!("--pool must be `fresh` or `warm`, not `{other}`"),
        };
    }
    let candidates: Vec<Candidate> = models
        .iter()
        .filter(|m| m.kind == sovereign::config::ModelKind::Chat)
        .map(|m| Candidate {
            model: m.clone(),
            healthy: true,
            latency_p50_ms: None,
        })
        .collect();
    let mut settings = std::collections::HashMap::new();
    if let Some(doc) = &document {
        let text =
            std::fs::read_to_string(doc).with_context(|| format!("reading {}", doc.display()))?;
        settings.insert("policy".to_string(), text);
    }
    let cases = match &golden {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            policy::golden::parse_jsonl(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => policy::golden::builtin(),
    };
    let host = PolicyHost::new(HostConfig::default())?;
    let started = std::time::Instant::now();
    let name = file.display().to_string();
    let loaded = RouterPolicy::load(&host, &name, wasm, settings, limits, candidates.clone()).await;
    let router = match loaded {
        Ok(r) => r,
        Err(e) => {
            println!("FAIL load: {e}");
            return Ok(false);
        }
    };
    println!(
        "loaded {} (sha256 {}, world {}) in {:.0?}: deadline {:?}, memory {} MiB, pool {}; {} candidates",
        name,
        router.sha256(),
        policy::ROUTER_WORLD,
        started.elapsed(),
        limits.deadline,
        limits.memory_bytes >> 20,
        limits.pool.as_str(),
        candidates.len()
    );
    let outcomes = policy::golden::run(&router, &cases, &candidates).await;
    let failed = outcomes.iter().filter(|o| !o.passed()).count();
    for o in &outcomes {
        println!("{o}");
    }
    println!(
        "{} of {} cases passed",
        outcomes.len() - failed,
        outcomes.len()
    );
    Ok(failed == 0)
}

async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))
}

/// The line tests and scripts wait for: the server accepts connections from now on.
fn announce(listener: &TcpListener, tls: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let scheme = if tls { "https" } else { "http" };
    writeln!(out, "listening on {scheme}://{}", listener.local_addr()?)?;
    out.flush()?;
    Ok(())
}

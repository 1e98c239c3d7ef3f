//! `sovereign policy test`: a router component loaded as the gateway would load it, then golden
//! cases run through it, each decision printed (docs/POLICIES.md, "Testing a policy"). A
//! component of the tool or retrieval world is tested by `policy_worlds`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Subcommand;

use sovereign::config::Config;
use sovereign::demo;

#[derive(Subcommand)]
pub enum PolicyCommand {
    /// Load a policy component as the gateway would (compile, world check, smoke call, under the
    /// production limits) and run golden inputs through it, printing each decision. Exit code 0
    /// when every case passes, 1 otherwise. The world (router, tool or retrieval) is the one the
    /// component exports. Router candidates: the demo fleet, or `--config`'s models.
    Test {
        /// The policy component (.wasm).
        file: PathBuf,
        /// Tool and retrieval policies: a file whose text is the policy's `settings`.
        #[arg(long)]
        settings: Option<PathBuf>,
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

/// Runs a policy subcommand: 0 when every case passed, 1 otherwise.
pub fn run(command: PolicyCommand) -> ExitCode {
    super::verdict(super::block_on(test(command)))
}

/// `sovereign policy test`: true when every case passed.
async fn test(command: PolicyCommand) -> anyhow::Result<bool> {
    use sovereign::policy::{self, CallLimits, Candidate, HostConfig, PolicyHost, RouterPolicy};
    let PolicyCommand::Test {
        file,
        settings: settings_file,
        document,
        golden,
        config,
        deadline_ms,
        memory_mb,
        pool,
    } = command;
    let wasm = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    if let Some(passed) = other_worlds(&wasm, settings_file.as_ref(), golden.as_ref()).await? {
        return Ok(passed);
    }
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
        .filter(|m| m.kind == sovereign::domain::ModelKind::Chat)
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

/// A component of the tool or retrieval world tested as such; `None` when it is of neither (a
/// router, or not a policy: the router's load says why).
async fn other_worlds(
    wasm: &[u8],
    settings: Option<&PathBuf>,
    golden: Option<&PathBuf>,
) -> anyhow::Result<Option<bool>> {
    use sovereign::policy::{HostConfig, PolicyHost};
    let read = |p: Option<&PathBuf>| -> anyhow::Result<Option<String>> {
        p.map(|p| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display())))
            .transpose()
    };
    let (settings, golden) = (read(settings)?, read(golden)?);
    let host = PolicyHost::new(HostConfig::default())?;
    if let Some(passed) =
        super::policy_worlds::test_tool(&host, wasm, settings.clone(), golden.as_deref()).await?
    {
        return Ok(Some(passed));
    }
    super::policy_worlds::test_retrieval(&host, wasm, settings, golden.as_deref()).await
}

//! The peers themselves: LiteLLM's proxy (PyPI), Portkey's gateway (npm) and litellm-rs's gateway
//! (crates.io, a Rust peer), each installed at a pinned version into the cache directory on first
//! use and reused afterwards, then started as a child process on a free port in front of the
//! bench's upstream. A started peer logs to a file in the run's temporary directory and is
//! stopped with its whole process group on drop.

use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::Value;

/// The versions the figures in bench/README.md were measured with. LiteLLM 1.109 and later need
/// proxy packages (`litellm-proxy`, newer `litellm-proxy-extras`) the registry does not carry.
pub const LITELLM_VERSION: &str = "1.108.0";
pub const PORTKEY_VERSION: &str = "1.15.2";
/// The Rust peer (TensorZero) has no gateway on the registries this machine reaches; this
/// one is a Rust gateway that installs from crates.io (`cargo install`, a release build of a
/// large crate: about an hour here the first time, on two cores shared with other builds).
pub const LITELLM_RS_VERSION: &str = "0.9.0";

/// `--peers-cache`, else `$XDG_CACHE_HOME/sovereign-bench/peers`, else
/// `~/.cache/sovereign-bench/peers`.
pub fn cache_dir(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = arg {
        return Ok(dir.to_path_buf());
    }
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            PathBuf::from(std::env::var_os("HOME").context("HOME is not set: pass --peers-cache")?)
                .join(".cache")
        }
    };
    Ok(base.join("sovereign-bench").join("peers"))
}

/// A started peer: its URL, its log, and the process group it leads.
pub struct Peer {
    pub url: String,
    pub log: PathBuf,
    child: Child,
}

impl Peer {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the peer has exited, with the end of its log.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("exited ({status}): {}", log_tail(&self.log));
        }
        Ok(())
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // The peer leads its own process group (`spawn`): end every process in it (LiteLLM's
        // server may fork), politely first.
        let group = format!("-{}", self.child.id());
        let kill = |signal: &str| {
            let _ = Command::new("kill")
                .args([signal, "--", &group])
                .stderr(Stdio::null())
                .status();
        };
        kill("-TERM");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        kill("-KILL");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Installs LiteLLM's proxy if needed and starts it with one model, `model`, served by the
/// OpenAI-compatible upstream at `upstream` (one worker, no database). Requests must carry
/// `master_key` (LiteLLM refuses to start without one; without a database it is the only key).
pub fn litellm(
    cache: &Path,
    dir: &Path,
    upstream: &str,
    model: &str,
    master_key: &str,
) -> anyhow::Result<Peer> {
    let venv = cache.join("litellm");
    let marker = venv.join(".sovereign-bench-installed");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(LITELLM_VERSION) {
        let log = cache.join("litellm-install.log");
        println!(
            "installing LiteLLM {LITELLM_VERSION} into {} (first use; log {})",
            venv.display(),
            log.display()
        );
        if !venv.join("bin").join("pip").is_file() {
            let venv_arg = venv.display().to_string();
            run_logged("python3", &["-m", "venv", &venv_arg], &log)?;
        }
        let pip = venv.join("bin").join("pip").display().to_string();
        run_logged(
            &pip,
            &["install", &format!("litellm[proxy]=={LITELLM_VERSION}")],
            &log,
        )?;
        std::fs::write(&marker, LITELLM_VERSION)
            .with_context(|| format!("writing {}", marker.display()))?;
    }
    let config = dir.join("litellm.yaml");
    std::fs::write(
        &config,
        format!(
            "# Written by sovereign-bench peers: one model, straight to the bench's upstream.\n\
             model_list:\n  - model_name: {model}\n    litellm_params:\n      model: openai/{model}\n      \
             api_base: {upstream}/v1\n      api_key: sk-bench-upstream\n\
             litellm_settings:\n  drop_params: true\n\
             general_settings:\n  master_key: {master_key}\n"
        ),
    )
    .with_context(|| format!("writing {}", config.display()))?;
    let port = free_port()?.to_string();
    let bin = venv.join("bin").join("litellm");
    let config_arg = config.display().to_string();
    let mut cmd = Command::new(&bin);
    cmd.args([
        "--config",
        &config_arg,
        "--host",
        "127.0.0.1",
        "--port",
        &port,
        "--num_workers",
        "1",
    ])
    // Quiet, and nothing fetched from the network at start (the model price map is the one in
    // the package) or sent (telemetry).
    .env("LITELLM_LOG", "ERROR")
    .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    .env("LITELLM_TELEMETRY", "False")
    .env_remove("DATABASE_URL")
    .env_remove("LITELLM_MASTER_KEY");
    spawn(cmd, &port, dir.join("litellm.log"))
}

/// Installs Portkey's gateway if needed and starts its Node server (headless: no console).
/// Requests choose the upstream with `x-portkey-provider` and `x-portkey-custom-host`.
pub fn portkey(cache: &Path, dir: &Path) -> anyhow::Result<Peer> {
    let prefix = cache.join("portkey");
    let package = prefix.join("node_modules/@portkey-ai/gateway");
    if installed_npm_version(&package).as_deref() != Some(PORTKEY_VERSION) {
        let log = cache.join("portkey-install.log");
        println!(
            "installing Portkey's gateway {PORTKEY_VERSION} into {} (first use; log {})",
            prefix.display(),
            log.display()
        );
        std::fs::create_dir_all(&prefix)
            .with_context(|| format!("creating {}", prefix.display()))?;
        let prefix_arg = prefix.display().to_string();
        run_logged(
            "npm",
            &[
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                &prefix_arg,
                &format!("@portkey-ai/gateway@{PORTKEY_VERSION}"),
            ],
            &log,
        )?;
    }
    let port = free_port()?;
    let server = package.join("build/start-server.js").display().to_string();
    let mut cmd = Command::new("node");
    cmd.args([&server, &format!("--port={port}"), "--headless"]);
    spawn(cmd, &port.to_string(), dir.join("portkey.log"))
}

/// Builds litellm-rs's gateway if needed (`cargo install --locked`, its own lock file, into the
/// cache) and starts it with one OpenAI-compatible provider, the upstream at `upstream`, serving
/// `model`. Configured as its development example is: no database (its API keys live in one),
/// so anonymous access; rate limits, cache and metrics off; its default prompt-injection
/// guardrail on, as shipped. Workers: one per core, its default.
pub fn litellm_rs(cache: &Path, dir: &Path, upstream: &str, model: &str) -> anyhow::Result<Peer> {
    let root = cache.join("litellm-rs");
    let bin = root.join("bin").join("gateway");
    let marker = root.join(".sovereign-bench-installed");
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(LITELLM_RS_VERSION) {
        let log = cache.join("litellm-rs-install.log");
        println!(
            "building litellm-rs {LITELLM_RS_VERSION} into {} (first use, a release build of a \
             large crate: up to an hour on two cores; log {})",
            root.display(),
            log.display()
        );
        let root_arg = root.display().to_string();
        let target_arg = cache.join("litellm-rs-target").display().to_string();
        run_logged(
            "cargo",
            &[
                "install",
                "--locked",
                "--root",
                &root_arg,
                "--target-dir",
                &target_arg,
                "--version",
                LITELLM_RS_VERSION,
                // Its `gateway` binary needs `storage`; `sqlite` is the lighter of the two
                // back ends that bring it (no database is configured at run time).
                "--features",
                "sqlite",
                "--bin",
                "gateway",
                "litellm-rs",
            ],
            &log,
        )?;
        std::fs::write(&marker, LITELLM_RS_VERSION)
            .with_context(|| format!("writing {}", marker.display()))?;
    }
    let port = free_port()?;
    let config = dir.join("litellm-rs.yaml");
    std::fs::write(&config, litellm_rs_config(upstream, model, port))
        .with_context(|| format!("writing {}", config.display()))?;
    let mut cmd = Command::new(&bin);
    cmd.args(["--config", &config.display().to_string(), "serve"])
        .env("RUST_LOG", "error");
    spawn(cmd, &port.to_string(), dir.join("litellm-rs.log"))
}

/// litellm-rs's configuration (its `config/gateway.dev.yaml.example`, the provider pointed at the
/// bench's upstream).
fn litellm_rs_config(upstream: &str, model: &str, port: u16) -> String {
    format!(
        "# Written by sovereign-bench peers: one model, straight to the bench's upstream.
schema_version: \"1.0\"
server:
  host: \"127.0.0.1\"
  port: {port}
  dev_mode: true
providers:
  - name: \"bench-upstream\"
    provider_type: \"openai\"
    api_key: \"{UPSTREAM_KEY}\"
    base_url: \"{upstream}/v1\"
    endpoint_access: \"private_network\"
    timeout: 30
    max_retries: 0
    # The deployment's own limits (1,000 requests and 100,000 tokens a minute by default) out of
    # the way, as the other rows' are.
    rpm: 1000000000
    tpm: 4000000000
    max_concurrent_requests: 100000
    # A model name its OpenAI catalog does not know must name one that it does, for the
    # capabilities (chat); no price (`unpriced_model_policy` below).
    settings:
      model_identity_mappings:
        {model}:
          capability_catalog_model: gpt-4o-mini
          pricing_model: null
    models:
      - \"{model}\"
    enabled: true
router:
  strategy: \"round_robin\"
storage:
  database:
    url: \"sqlite::memory:\"
    enabled: false
    auto_migrate: false
  redis:
    url: \"redis://127.0.0.1:1\"
    enabled: false
  vector_db: null
auth:
  enable_jwt: false
  enable_api_key: false
  allow_anonymous: true
monitoring:
  metrics:
    enabled: false
  tracing:
    enabled: false
cache:
  enabled: false
pricing:
  source: \"embedded://model_prices_extended\"
  unpriced_model_policy: allow_unpriced
  unpriced_fallback_cost_per_1k_tokens: 0.0
rate_limit:
  enabled: false
",
        UPSTREAM_KEY = super::UPSTREAM_KEY,
    )
}

/// The version in an installed npm package's `package.json`.
fn installed_npm_version(package: &Path) -> Option<String> {
    let text = std::fs::read_to_string(package.join("package.json")).ok()?;
    let json: Value = serde_json::from_str(&text).ok()?;
    Some(json.get("version")?.as_str()?.to_string())
}

/// Runs an installer to completion, its output appended to `log`.
fn run_logged(program: &str, args: &[&str], log: &Path) -> anyhow::Result<()> {
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    writeln!(out, "$ {program} {}", args.join(" "))?;
    let status = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .status()
        .with_context(|| format!("running {program} (is it installed?)"))?;
    if !status.success() {
        bail!(
            "`{program} {}` failed ({status}): {}",
            args.join(" "),
            log_tail(log)
        );
    }
    Ok(())
}

/// Starts `cmd` in its own process group, stdout and stderr to `log`; the peer listens on
/// `127.0.0.1:port` once ready (the caller polls).
fn spawn(mut cmd: Command, port: &str, log: PathBuf) -> anyhow::Result<Peer> {
    let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))?;
    Ok(Peer {
        url: format!("http://127.0.0.1:{port}"),
        log,
        child,
    })
}

/// A port free right now on 127.0.0.1 (the peers take `--port`, not port 0).
fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The last lines of a log, for an error message.
pub fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    format!("{tail}\n(log: {})", log.display())
}

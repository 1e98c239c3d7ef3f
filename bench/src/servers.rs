//! The two servers under test, started from the real `sovereign` binary as child processes:
//! `sovereign simulate` (the upstream) and `sovereign serve` in front of it. Each announces itself
//! with `listening on http://ADDR` on stdout; we wait for that line (with a deadline), send the
//! rest of its stdout nowhere and its stderr to a log file, and kill the process on drop.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, bail};

const START_DEADLINE: Duration = Duration::from_secs(30);

/// A started `sovereign` process.
pub struct Server {
    pub name: &'static str,
    pub url: String,
    pub log: PathBuf,
    child: Child,
}

impl Server {
    pub fn start(
        name: &'static str,
        bin: &Path,
        args: &[&str],
        log: PathBuf,
        rust_log: &str,
    ) -> anyhow::Result<Server> {
        Server::start_within(name, bin, args, log, rust_log, START_DEADLINE)
    }

    /// [`Server::start`], waiting up to `within` for it to listen (a gateway verifying a large
    /// journal at open takes longer).
    pub fn start_within(
        name: &'static str,
        bin: &Path,
        args: &[&str],
        log: PathBuf,
        rust_log: &str,
        within: Duration,
    ) -> anyhow::Result<Server> {
        let stderr = std::fs::File::create(&log)
            .with_context(|| format!("creating log file {}", log.display()))?;
        let mut child = Command::new(bin)
            .args(args)
            .env("RUST_LOG", rust_log)
            // Back ends come from each config file alone, not from the bench's environment.
            .env_remove("SOVEREIGN_STORE_URL")
            .env_remove("SOVEREIGN_REDIS_URL")
            .env_remove("SOVEREIGN_SHARED_NAMESPACE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {} {}", bin.display(), args.join(" ")))?;
        let stdout = child.stdout.take().context("child stdout")?;
        let (tx, rx) = mpsc::channel::<String>();
        // Reads stdout for the whole life of the process so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let mut server = Server {
            name,
            url: String::new(),
            log,
            child,
        };
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(url) = line.strip_prefix("listening on ") {
                        server.url = url.trim().to_string();
                        return Ok(server);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    bail!(
                        "{name} did not print `listening on` within {within:?}; see {}",
                        server.log.display()
                    )
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let tail = std::fs::read_to_string(&server.log).unwrap_or_default();
                    bail!("{name} exited before listening:\n{tail}")
                }
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails if the process has exited (e.g. crashed during a run).
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "{} exited during the benchmark ({status}); see {}",
                self.name,
                self.log.display()
            );
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh API key from `sovereign keygen`: (secret, config hash).
pub fn keygen(bin: &Path) -> anyhow::Result<(String, String)> {
    let out = Command::new(bin)
        .arg("keygen")
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {} keygen", bin.display()))?;
    if !out.status.success() {
        bail!("{} keygen failed: {}", bin.display(), out.status);
    }
    let text = String::from_utf8(out.stdout).context("keygen output is not UTF-8")?;
    let mut secret = None;
    let mut hash = None;
    for line in text.lines() {
        if let Some(s) = line.strip_prefix("key ") {
            secret = Some(s.trim().to_string());
        } else if let Some(h) = line.strip_prefix("hash = ") {
            hash = Some(h.trim().trim_matches('"').to_string());
        }
    }
    match (secret, hash) {
        (Some(s), Some(h)) => Ok((s, h)),
        _ => bail!("unexpected keygen output:\n{text}"),
    }
}

/// The `sovereign` binary the bench starts, or an error saying how to build it.
pub fn require_bin(bin: &std::path::Path) -> anyhow::Result<()> {
    anyhow::ensure!(
        bin.is_file(),
        "{} not found: build it with `cargo build --release -p sovereign -p sovereign-bench` \
         (from the repository root) or pass --bin PATH",
        bin.display()
    );
    Ok(())
}

/// A gateway config: the demo fleet at `sim_url`, one `member` key, listening on port 0; with
/// `routing` (a path relative to the config), the built-in rules router with that document.
pub fn gateway_config(sim_url: &str, key_hash: &str, routing: Option<&str>) -> String {
    let mut t = String::from(
        "# Written by sovereign-bench: the gateway in front of `sovereign simulate`.\n\
         sovereign_id = \"bench-gw-1\"\nregion = \"sa-riyadh-1\"\ndefault_model = \"jais-30b-chat\"\n\n\
         [server]\nlisten = \"127.0.0.1:0\"\n\n",
    );
    if let Some(doc) = routing {
        let _ = writeln!(
            t,
            "[routing]\ndocument = \"{doc}\"\ncache_dir = \"policy-cache\"\n"
        );
    }
    // The fleet `sovereign simulate` serves, from the gateway crate itself, so the two agree.
    for model in sovereign::simulator::fleet::demo_fleet() {
        let langs: Vec<String> = model.languages.iter().map(|l| format!("\"{l}\"")).collect();
        let _ = writeln!(
            t,
            "[[models]]\nid = \"{}\"\nfamily = \"{}\"\nkind = \"{}\"\n\
             languages = [{}]\nregion = \"{}\"\nlocal = {}\nbase_url = \"{sim_url}/v1\"\n",
            model.id,
            model.family,
            model.kind.as_str(),
            langs.join(", "),
            model.region,
            model.local,
        );
    }
    let _ = writeln!(
        t,
        "[access]\nip_requests_per_minute = 0\n\n\
         [plans.enterprise]\nrequests_per_minute = 0\nburst = 0\ntokens_per_day = 0\n\n\
         [[teams]]\nid = \"bench\"\nname = \"Benchmark\"\nplan = \"enterprise\"\n\n\
         [[keys]]\nname = \"bench-member\"\nteam = \"bench\"\nrole = \"member\"\nhash = \"{key_hash}\""
    );
    t
}

/// CPU time (user + system) a process has used so far, from `/proc/PID/stat`. Linux only; `None`
/// elsewhere. Assumes the usual 100 clock ticks per second (`getconf CLK_TCK`).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    // utime and stime: fields 14 and 15.
    stat_ticks(&format!("/proc/{pid}/stat"), 14)
}

/// CPU time (user + system) this process's running threads named `name` have used so far, as
/// [`cpu_time`] counts it; `None` when no such thread runs.
pub fn thread_cpu_time(name: &str) -> Option<Duration> {
    let mut total = None;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let path = task.path();
        if std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim_end() == name) {
            let used = stat_ticks(&path.join("stat").to_string_lossy(), 14)?;
            total = Some(total.unwrap_or(Duration::ZERO) + used);
        }
    }
    total
}

/// CPU time (user + system) of this process's children that have exited and been waited for,
/// as [`cpu_time`] counts it.
pub fn waited_children_cpu_time() -> Option<Duration> {
    // cutime and cstime: fields 16 and 17.
    stat_ticks("/proc/self/stat", 16)
}

/// The sum of fields `first` and `first + 1` (1-based, as proc(5) numbers them) of a stat file,
/// clock ticks as a duration.
fn stat_ticks(path: &str, first: usize) -> Option<Duration> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The command name (field 2) may contain spaces; fields after it start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace().skip(first - 3);
    let a: u64 = fields.next()?.parse().ok()?;
    let b: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((a + b) * 10))
}

/// Machine-wide CPU time so far, from the first line of `/proc/stat`: (busy, total), all cores
/// together. With [`cpu_time`] of our three processes it tells how much other processes took
/// during a run (a noisy neighbour makes latency figures meaningless).
pub fn machine_cpu() -> Option<(Duration, Duration)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4)?;
    let ticks = |t: u64| Duration::from_millis(t * 10);
    Some((ticks(total - idle), ticks(total)))
}

/// The CPUs this process may run on (`Cpus_allowed_list` in `/proc/self/status`, e.g. `0-1`),
/// which the servers it starts inherit: `taskset -c 0 sovereign-bench …` keeps them off the
/// other cores (bench/README.md, "Replicas").
pub fn cpus_allowed() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// Whether this process may run on fewer CPUs than the machine has online (`taskset`). Counts
/// the CPUs of [`cpus_allowed`] (`std::thread::available_parallelism` would also count cgroup
/// quotas, which are not pinning).
pub fn pinned() -> bool {
    let online = std::fs::read_to_string("/proc/stat")
        .map(|s| {
            s.lines()
                .filter(|l| {
                    l.strip_prefix("cpu")
                        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
                })
                .count()
        })
        .unwrap_or(0);
    cpus_allowed().is_some_and(|list| count_cpus(&list) < online)
}

/// How many CPUs a list such as `0-1,3` names (0 if it does not parse).
fn count_cpus(list: &str) -> usize {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => match (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => usize::from(part.trim().parse::<usize>().is_ok()),
        })
        .sum()
}

/// The 1-minute load average.
pub fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::count_cpus;

    #[test]
    fn cpu_lists_are_counted_as_taskset_writes_them() {
        assert_eq!(count_cpus("0"), 1);
        assert_eq!(count_cpus("0-1"), 2);
        assert_eq!(count_cpus("0-3,6,8-9"), 7);
        assert_eq!(count_cpus("x"), 0);
    }
}

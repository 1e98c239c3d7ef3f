//! Services the tests start for themselves: a private PostgreSQL server for this test process
//! (issue 17), never the machine's own on 5432, and a private `redis-server` per test that needs
//! one ([`Redis`]). It is started once, on first use: `initdb` in a
//! fresh temporary directory, `pg_ctl start` on a free port; a watchdog stops it and removes the
//! directory when the process is gone. Each test takes a fresh database on it, so tests stay
//! independent and run in parallel.
//!
//! `initdb` refuses to run as root: as root, the binaries run as the `postgres` user. Without
//! the server binaries (`/usr/lib/postgresql/<version>/bin`) the PostgreSQL tests are skipped
//! with a message — unless `SOVEREIGN_REQUIRE_POSTGRES` is set (CI), where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where Debian puts the server binaries, one directory per major version.
const PG_ROOT: &str = "/usr/lib/postgresql";
/// Set (to anything) where a missing PostgreSQL must fail the tests rather than skip them.
const REQUIRE_ENV: &str = "SOVEREIGN_REQUIRE_POSTGRES";

/// The private server: its port on 127.0.0.1.
#[derive(Debug)]
pub struct Postgres {
    port: u16,
}

impl Postgres {
    /// The process's server, started on first use; `None` (after saying why) when PostgreSQL is
    /// not installed and not required.
    pub fn get() -> Option<&'static Postgres> {
        static SERVER: OnceLock<Option<Postgres>> = OnceLock::new();
        SERVER
            .get_or_init(|| {
                if !Path::new(PG_ROOT).exists() && std::env::var_os(REQUIRE_ENV).is_none() {
                    eprintln!(
                        "skipped: no PostgreSQL server binaries under {PG_ROOT} \
                         (install `postgresql`, or set {REQUIRE_ENV} to make this a failure)"
                    );
                    return None;
                }
                Some(start())
            })
            .as_ref()
    }

    /// The URL of `database` on this server.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// A new, empty database of this test's own; its URL.
    pub async fn fresh_database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("t_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let (client, conn) = tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to the test server: {e}"));
        let task = tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e:?}"));
        drop(client);
        let _ = task.await;
        self.url(&name)
    }
}

/// The newest `bin` directory under [`PG_ROOT`].
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(PG_ROOT)
        .unwrap_or_else(|e| panic!("{PG_ROOT}: {e} ({REQUIRE_ENV} is set)"))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let version = path.file_name()?.to_str()?.parse().ok()?;
            path.join("bin/initdb")
                .exists()
                .then(|| (version, path.join("bin")))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .unwrap_or_else(|| panic!("no {PG_ROOT}/<version>/bin/initdb"))
        .1
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `program` from `bin`, as the `postgres` user when we are root.
fn pg_command(bin: &Path, program: &str, root: bool) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(program));
        c
    } else {
        Command::new(bin.join(program))
    }
}

fn run(mut c: Command, what: &str, log: Option<&Path>) {
    let out = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if !out.status.success() {
        let log = log
            .and_then(|l| std::fs::read_to_string(l).ok())
            .unwrap_or_default();
        panic!(
            "{what} failed ({}):\n{}{}\n{log}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("a free port: {e}"))
}

/// `initdb`, then `pg_ctl start` (retried on another port if the free one was taken meanwhile),
/// then the watchdog.
fn start() -> Postgres {
    let bin = bin_dir();
    let root = is_root();
    let dir = std::env::temp_dir().join(format!("sovereign-it-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    if root {
        let mut chown = Command::new("chown");
        chown.arg("postgres:postgres").arg(&dir);
        run(chown, "chown postgres", None);
    }
    let data = dir.join("data");
    let log = dir.join("log");
    let mut initdb = pg_command(&bin, "initdb", root);
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
    run(initdb, "initdb", None);

    let mut port = 0;
    for attempt in 0..3 {
        port = free_port();
        let mut pg_ctl = pg_command(&bin, "pg_ctl", root);
        pg_ctl
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(&log)
            .arg("-o")
            .arg(format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                dir.display()
            ));
        pg_ctl.args(["-w", "-t", "60", "start"]);
        let ok = pg_ctl
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            break;
        }
        if attempt == 2 {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("pg_ctl start failed three times:\n{log}");
        }
    }

    // When this process is gone, however it ended: stop the server, remove its directory.
    let stop = {
        let pg_ctl = bin.join("pg_ctl");
        let as_postgres = if root { "runuser -u postgres -- " } else { "" };
        format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
             {as_postgres}{pg_ctl} stop -m immediate -D '{data}' >/dev/null 2>&1; rm -rf '{dir}'",
            pid = std::process::id(),
            pg_ctl = pg_ctl.display(),
            data = data.display(),
            dir = dir.display(),
        )
    };
    // In the background of a shell that returns at once (so it is nobody's zombie), in a process
    // group of its own (so a Ctrl-C to the test run does not kill it before it cleans up).
    let mut watchdog = Command::new("sh");
    watchdog
        .args(["-c", &format!("( {stop} ) &")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut watchdog, 0);
    let started = watchdog.status();
    assert!(
        started.as_ref().is_ok_and(|s| s.success()),
        "the PostgreSQL watchdog: {started:?}"
    );
    Postgres { port }
}

/// A `redis-server` of the test's own on a free loopback port, nothing on disk; killed on drop.
/// `None` (after saying why) without `redis-server`, unless [`REQUIRE_ENV`] is set (CI).
pub struct Redis {
    port: u16,
    child: std::process::Child,
}

impl Redis {
    pub fn start() -> Option<Redis> {
        let exists = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok();
        if !exists {
            assert!(
                std::env::var_os(REQUIRE_ENV).is_none(),
                "redis-server not found ({REQUIRE_ENV} is set)"
            );
            eprintln!("skipped: no redis-server (Debian: apt-get install redis-server)");
            return None;
        }
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("redis-server: {e}"));
        let redis = Redis { port, child };
        // Up when it accepts a connection; a start that fails shows as the panic below.
        for _ in 0..500 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(redis);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("redis-server did not listen on {port} within 5 s");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

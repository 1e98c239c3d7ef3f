//! `--upstream nginx`: the issue's own upstream, nginx (Debian's package) answering every request
//! with the stub's canned chat completion (`return 200`), one process without a master, no
//! access log. Beside it the bench's stub is a Rust server with a JSON parser; nginx costs the
//! shared cores less per request, so more of them are left to the target being measured.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// How long nginx may take to accept its first connection.
const START_DEADLINE: Duration = Duration::from_secs(10);

pub(super) struct Nginx {
    pub(super) url: String,
    log: PathBuf,
    child: Child,
}

impl Nginx {
    /// Starts `nginx` from `PATH` in `dir`, answering `answer` (JSON) to every request.
    pub(super) fn start(dir: &Path, answer: &str) -> anyhow::Result<Nginx> {
        anyhow::ensure!(
            !answer.contains(['\'', '$', '\\']),
            "the canned answer cannot be quoted in nginx's configuration"
        );
        let root = dir.join("nginx");
        std::fs::create_dir_all(root.join("tmp"))
            .with_context(|| format!("creating {}", root.display()))?;
        // A free port: bound, read, released, then given to nginx (which cannot print it).
        let addr: SocketAddr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let tmp = root.join("tmp");
        let t = tmp.display();
        let log = root.join("error.log");
        let conf = root.join("nginx.conf");
        let mut f =
            std::fs::File::create(&conf).with_context(|| format!("writing {}", conf.display()))?;
        write!(
            f,
            "daemon off;\nmaster_process off;\nworker_processes 1;\n\
             error_log {log} warn;\npid {pid};\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  tcp_nodelay on;\n  keepalive_requests 1000000000;\n\
             \x20 client_body_temp_path {t}/body;\n  proxy_temp_path {t}/proxy;\n\
             \x20 fastcgi_temp_path {t}/fastcgi;\n  uwsgi_temp_path {t}/uwsgi;\n\
             \x20 scgi_temp_path {t}/scgi;\n\
             \x20 server {{\n    listen {addr};\n\
             \x20   location / {{ default_type application/json; return 200 '{answer}'; }}\n  }}\n}}\n",
            log = log.display(),
            pid = root.join("nginx.pid").display(),
        )?;
        drop(f);
        let stderr = std::fs::File::create(root.join("stderr.log"))?;
        let child = Command::new("nginx")
            .arg("-e")
            .arg(&log)
            .arg("-p")
            .arg(&root)
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .context("starting nginx (Debian: `apt-get install nginx-light`)")?;
        let mut nginx = Nginx {
            url: format!("http://{addr}"),
            log,
            child,
        };
        let deadline = Instant::now() + START_DEADLINE;
        while TcpStream::connect(addr).is_err() {
            if let Some(status) = nginx.child.try_wait()? {
                let err = std::fs::read_to_string(root.join("stderr.log")).unwrap_or_default();
                bail!("nginx exited at start ({status}): {err}");
            }
            if Instant::now() >= deadline {
                bail!(
                    "nginx did not listen on {addr} within {START_DEADLINE:?}; see {}",
                    nginx.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(nginx)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! `[server]`: the listener, the serving threads and the transport limits (body size,
//! connections, header and body read timeouts, shutdown grace).

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

/// More serving threads than this is a typo, not a machine.
const MAX_THREADS: u32 = 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawServer {
    listen: String,
    max_body_bytes: u64,
    max_connections: u32,
    header_read_timeout_ms: u64,
    body_read_timeout_ms: u64,
    shutdown_grace_ms: u64,
    /// Serving threads (`server::lanes`); unset: one per CPU; 0: connections are tasks on the
    /// shared work-stealing runtime instead.
    threads: Option<u32>,
}

impl Default for RawServer {
    fn default() -> Self {
        RawServer {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 4 * 1024 * 1024,
            max_connections: 10_000,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            shutdown_grace_ms: 30_000,
            threads: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub shutdown_grace: Duration,
    /// Serving threads; 0 serves on the shared runtime.
    pub threads: usize,
}

/// `None` when `listen` is not an address (the error is reported).
pub(super) fn validate(s: &RawServer, err: &mut impl FnMut(String, &str)) -> Option<ServerConfig> {
    let listen = match s.listen.parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            err("server.listen".into(), "not an address of the form IP:PORT");
            None
        }
    };
    if s.max_body_bytes == 0 || s.max_body_bytes > 1 << 30 {
        err(
            "server.max_body_bytes".into(),
            "must be between 1 and 1 GiB",
        );
    }
    if s.max_connections == 0 {
        err("server.max_connections".into(), "must be at least 1");
    }
    for (name, v) in [
        ("header_read_timeout_ms", s.header_read_timeout_ms),
        ("body_read_timeout_ms", s.body_read_timeout_ms),
    ] {
        if v == 0 {
            err(format!("server.{name}"), "must be at least 1");
        }
    }
    if s.threads.is_some_and(|t| t > MAX_THREADS) {
        err(
            "server.threads".into(),
            &format!("must be at most {MAX_THREADS}"),
        );
    }
    let threads = match s.threads {
        Some(t) => t as usize,
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    Some(ServerConfig {
        listen: listen?,
        max_body_bytes: usize::try_from(s.max_body_bytes).unwrap_or(usize::MAX),
        max_connections: s.max_connections as usize,
        header_read_timeout: Duration::from_millis(s.header_read_timeout_ms),
        body_read_timeout: Duration::from_millis(s.body_read_timeout_ms),
        shutdown_grace: Duration::from_millis(s.shutdown_grace_ms),
        threads,
    })
}

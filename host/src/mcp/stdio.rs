//! One upstream MCP server over stdio (the MCP stdio transport: newline-delimited JSON-RPC on the
//! child's stdin and stdout, stderr free for its logs), declared only in the config file. One
//! process per server, shared by every caller: requests are multiplexed by JSON-RPC id and
//! `initialize` is sent once per process. The process lives under `sandbox.rs`'s caps.
//!
//! Three threads per process (so its pipes belong to no serving lane's runtime): a writer fed
//! by a bounded queue, a reader that hands each answer to the request waiting for its id, and
//! one that drains stderr to the log. When the process exits (a crash, a cap, a line longer than
//! an answer may be), every request in flight gets `UpstreamError::Exited`, and the next request
//! starts it again after a backoff (100 ms, doubling to 30 s; back to 100 ms once a process has
//! lived a minute). The server's own requests to the client are refused (`ping` answered), its
//! notifications dropped. `stop` kills it at shutdown; a dropped process is killed too.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex as StdMutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::failure::UpstreamError;
use super::sandbox::Spec;
use super::wire::{self, Answer};

/// Requests queued for the child's stdin at most.
const MAX_QUEUED: usize = 1_024;
/// The longest stderr line logged (bytes; the rest is cut).
const MAX_LOG_LINE: usize = 1_024;
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A process that lived this long resets the backoff.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

type Reply = Result<Value, UpstreamError>;

/// The requests waiting for an answer of one process.
#[derive(Default)]
struct Pending {
    /// False once the process is gone: no request waits on it any more.
    open: bool,
    waiting: HashMap<u64, oneshot::Sender<Reply>>,
}

/// One running process.
struct Process {
    outbox: SyncSender<Vec<u8>>,
    pending: Arc<StdMutex<Pending>>,
    child: Arc<StdMutex<Child>>,
    started: Instant,
}

impl Process {
    fn alive(&self) -> bool {
        lock(&self.pending).open
    }

    fn kill(&self) {
        let _ = lock(&self.child).kill();
    }

    /// One request and its answer, under `deadline`.
    async fn ask(&self, id: u64, method: &str, params: Value, deadline: Duration) -> Reply {
        let (tx, rx) = oneshot::channel();
        {
            let mut p = lock(&self.pending);
            if !p.open {
                return Err(UpstreamError::Exited("before the request was sent".into()));
            }
            p.waiting.insert(id, tx);
        }
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.send(&line) {
            lock(&self.pending).waiting.remove(&id);
            return Err(UpstreamError::Unavailable(
                "its input queue is full or closed".into(),
            ));
        }
        match tokio::time::timeout(deadline, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(UpstreamError::Exited(
                "while the request was in flight".into(),
            )),
            Err(_) => {
                lock(&self.pending).waiting.remove(&id);
                let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": id, "reason": "deadline"}});
                self.send(&cancel);
                Err(UpstreamError::Timeout(deadline.as_millis()))
            }
        }
    }

    /// Queues one message for stdin; false when the queue is full or the writer gone.
    fn send(&self, message: &Value) -> bool {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.outbox.try_send(line).is_ok()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The process slot: the running one, and when the next may start.
#[derive(Default)]
struct Slot {
    process: Option<Arc<Process>>,
    /// Consecutive short-lived processes.
    failures: u32,
    retry_at: Option<Instant>,
}

pub struct StdioLink {
    server: String,
    spec: Spec,
    slot: tokio::sync::Mutex<Slot>,
    ids: AtomicU64,
    stopped: AtomicBool,
}

impl StdioLink {
    pub fn new(server: String, spec: Spec) -> StdioLink {
        StdioLink {
            server,
            spec,
            slot: tokio::sync::Mutex::new(Slot::default()),
            ids: AtomicU64::new(1),
            stopped: AtomicBool::new(false),
        }
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// One request to the server (started first if it is not running), under `deadline`.
    pub async fn request(&self, method: &str, params: Value, deadline: Duration) -> Reply {
        let started = Instant::now();
        let process = tokio::time::timeout(deadline, self.process(deadline))
            .await
            .map_err(|_| UpstreamError::Timeout(deadline.as_millis()))??;
        let left = deadline.saturating_sub(started.elapsed());
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        process.ask(id, method, params, left).await
    }

    /// Kills the process (shutdown); no other is started.
    pub async fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        if let Some(p) = self.slot.lock().await.process.take() {
            p.kill();
        }
    }

    /// The running, initialized process: this one, or a new one after the backoff.
    async fn process(&self, deadline: Duration) -> Result<Arc<Process>, UpstreamError> {
        let mut slot = self.slot.lock().await;
        if let Some(p) = &slot.process {
            if p.alive() {
                return Ok(p.clone());
            }
            let lived = p.started.elapsed();
            slot.process = None;
            self.failed(&mut slot, lived >= HEALTHY_AFTER);
        }
        if self.stopped.load(Ordering::Relaxed) {
            return Err(UpstreamError::Unavailable("the gateway is stopping".into()));
        }
        if let Some(at) = slot.retry_at {
            tokio::time::sleep_until(at.into()).await;
        }
        match self.start(deadline).await {
            Ok(p) => {
                slot.process = Some(p.clone());
                Ok(p)
            }
            Err(e) => {
                self.failed(&mut slot, false);
                Err(e)
            }
        }
    }

    /// A process ended (or could not start): the next may start after the backoff.
    fn failed(&self, slot: &mut Slot, healthy: bool) {
        slot.failures = if healthy {
            0
        } else {
            slot.failures.saturating_add(1)
        };
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << slot.failures.saturating_sub(1).min(10))
            .min(MAX_BACKOFF);
        slot.retry_at = Some(Instant::now() + backoff);
        tracing::warn!(server = %self.server, backoff_ms = backoff.as_millis() as u64,
            "MCP stdio server is down; it is started again on the next request after the backoff");
    }

    /// Starts the process, its threads, and `initialize`s it.
    async fn start(&self, deadline: Duration) -> Result<Arc<Process>, UpstreamError> {
        let mut child = self.spec.spawn().map_err(|e| {
            tracing::error!(server = %self.server, error = %e, "MCP stdio server could not start");
            UpstreamError::Unreachable
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(UpstreamError::Unreachable);
        };
        tracing::info!(server = %self.server, pid = child.id(), "MCP stdio server started");
        let (outbox, queue) = sync_channel(MAX_QUEUED);
        let process = Arc::new(Process {
            outbox,
            pending: Arc::new(StdMutex::new(Pending {
                open: true,
                waiting: HashMap::new(),
            })),
            child: Arc::new(StdMutex::new(child)),
            started: Instant::now(),
        });
        let spawned = spawn_threads(&self.server, &process, stdin, stdout, stderr, queue);
        if let Err(e) = spawned {
            process.kill();
            tracing::error!(server = %self.server, error = %e, "MCP stdio server's threads could not start");
            return Err(UpstreamError::Unreachable);
        }
        let init = json!({
            "protocolVersion": wire::LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "sovereign-gateway", "version": env!("CARGO_PKG_VERSION")},
        });
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let answered = process.ask(id, "initialize", init, deadline).await;
        let known = answered.as_ref().ok().and_then(|r| {
            r.get("protocolVersion")
                .and_then(Value::as_str)
                .filter(|v| wire::HANDSHAKE_VERSIONS.contains(v) || *v == wire::MODERN)
        });
        if known.is_none() {
            process.kill();
            return Err(match answered {
                Err(e) => e,
                Ok(_) => UpstreamError::Malformed("initialize without a known version".into()),
            });
        }
        process.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Ok(process)
    }
}

/// The writer, reader and stderr threads of a process.
fn spawn_threads(
    server: &str,
    process: &Arc<Process>,
    mut stdin: ChildStdin,
    stdout: impl Read + Send + 'static,
    stderr: impl Read + Send + 'static,
    queue: Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    let name = |role: &str| format!("mcp-{role}-{server}");
    std::thread::Builder::new()
        .name(name("in"))
        .spawn(move || {
            for line in queue {
                if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
                    break;
                }
            }
        })?;
    let (server_name, pending, child, outbox) = (
        server.to_string(),
        process.pending.clone(),
        process.child.clone(),
        process.outbox.clone(),
    );
    std::thread::Builder::new()
        .name(name("out"))
        .spawn(move || read_answers(&server_name, stdout, &pending, &child, &outbox))?;
    let server_name = server.to_string();
    std::thread::Builder::new()
        .name(name("err"))
        .spawn(move || drain_stderr(&server_name, stderr))?;
    Ok(())
}

/// The reader: each line of stdout a JSON-RPC message; answers handed to their requests. At the
/// end (EOF, a read error, an oversized line) the process is killed and every waiter told.
fn read_answers(
    server: &str,
    stdout: impl Read,
    pending: &StdMutex<Pending>,
    child: &StdMutex<Child>,
    outbox: &SyncSender<Vec<u8>>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    let why = loop {
        line.clear();
        let limit = wire::MAX_ANSWER_BYTES as u64 + 1;
        match (&mut reader).take(limit).read_until(b'\n', &mut line) {
            Ok(0) => break "it closed its output".to_string(),
            Ok(_) if line.len() > wire::MAX_ANSWER_BYTES => {
                break format!("a message longer than {} bytes", wire::MAX_ANSWER_BYTES);
            }
            Ok(_) => {}
            Err(e) => break format!("reading its output failed ({e})"),
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            if !line.iter().all(u8::is_ascii_whitespace) {
                tracing::warn!(
                    server,
                    "MCP stdio server wrote a line that is not JSON; ignored"
                );
            }
            continue;
        };
        if let Some(method) = message.get("method").and_then(Value::as_str) {
            // The server's own request (answered: ping; refused: the rest) or a notification.
            if let Some(id) = message.get("id") {
                let answer = if method == "ping" {
                    json!({"jsonrpc": "2.0", "id": id, "result": {}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": wire::METHOD_NOT_FOUND, "message": "Method not found"}})
                };
                let mut bytes = answer.to_string().into_bytes();
                bytes.push(b'\n');
                let _ = outbox.try_send(bytes);
            }
            continue;
        }
        let id = match message.get("id") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.parse::<u64>().ok(),
            _ => None,
        };
        let Some(id) = id else { continue };
        let Some(waiter) = lock(pending).waiting.remove(&id) else {
            continue; // answered past its deadline
        };
        let reply = match wire::answer_of(message, id) {
            Some(Answer::Result(v)) if v.is_object() => Ok(v),
            Some(Answer::Result(_)) => Err(UpstreamError::Malformed(
                "the result is not an object".into(),
            )),
            Some(Answer::Error { code, message }) => Err(UpstreamError::Rpc { code, message }),
            None => Err(UpstreamError::Malformed(
                "an answer without a result".into(),
            )),
        };
        let _ = waiter.send(reply);
    };
    let waiting = {
        let mut p = lock(pending);
        p.open = false;
        std::mem::take(&mut p.waiting)
    };
    for (_, waiter) in waiting {
        let _ = waiter.send(Err(UpstreamError::Exited(why.clone())));
    }
    let status = {
        let mut c = lock(child);
        let _ = c.kill();
        c.wait()
    };
    match status {
        Ok(s) => tracing::warn!(server, reason = %why, status = %s, "MCP stdio server exited"),
        Err(e) => tracing::warn!(server, reason = %why, error = %e, "MCP stdio server exited"),
    }
}

/// stderr, a line at a time (cut to [`MAX_LOG_LINE`]), to the gateway's log.
fn drain_stderr(server: &str, stderr: impl Read) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LOG_LINE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::info!(server, stderr = %text, "MCP stdio server");
                }
            }
        }
    }
}

fn lock<T>(m: &StdMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

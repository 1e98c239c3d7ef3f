//! Load generation: an open-loop constant-rate schedule (latency counted from each request's
//! *scheduled* send time, so a stalled server is charged for the requests it delayed — no
//! coordinated omission) and a closed loop of C workers as fast as possible (`--max`).
//!
//! The client is kept cheap because it shares the machine's cores with both servers: one tokio
//! worker thread by default, hyper's HTTP/1.1 client with keep-alive and `TCP_NODELAY`, bodies
//! built once, and a pacing thread that sleeps (no spinning) between sends.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::{Semaphore, mpsc};

/// `http://` and `https://` alike (plain URIs pay nothing for the TLS half).
pub type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Latencies are recorded in nanoseconds, 3 significant digits, up to two minutes.
const MAX_NS: u64 = 120_000_000_000;

pub fn client(connections: usize) -> anyhow::Result<HttpClient> {
    let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth();
    Ok(client_with(connections, tls))
}

/// A client that also speaks HTTPS, trusting only `tls`'s roots (e.g. the demo PKI's CA).
pub fn client_with(connections: usize, tls: rustls::ClientConfig) -> HttpClient {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    http.set_keepalive(Some(Duration::from_secs(60)));
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(connections)
        .build(connector)
}

/// Where requests go and how.
#[derive(Clone)]
pub struct Target {
    pub name: &'static str,
    pub uri: Uri,
    pub authorization: Option<String>,
    /// Other request headers (a peer's routing headers, `peers/`).
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
    pub stream: bool,
}

impl Target {
    pub fn request(&self) -> anyhow::Result<Request<Full<Bytes>>> {
        let mut b = Request::post(self.uri.clone()).header("content-type", "application/json");
        if let Some(a) = &self.authorization {
            b = b.header("authorization", a.as_str());
        }
        for (name, value) in &self.headers {
            b = b.header(*name, value.as_str());
        }
        Ok(b.body(Full::new(self.body.clone()))?)
    }
}

/// What one measured phase recorded.
pub struct Recorder {
    /// From the scheduled send time to the measure point (open loop); equals `service` in the
    /// closed loop, where there is no schedule.
    pub latency: Histogram<u64>,
    /// From the moment the request was handed to the client to the measure point.
    pub service: Histogram<u64>,
    /// Streams only: from the scheduled send time to the end of the stream.
    pub complete: Histogram<u64>,
    pub ok: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Wall time the phase took (first scheduled send to last response).
    pub elapsed: Duration,
}

impl Recorder {
    pub fn new() -> anyhow::Result<Recorder> {
        let h = || Histogram::<u64>::new_with_bounds(1, MAX_NS, 3);
        Ok(Recorder {
            latency: h()?,
            service: h()?,
            complete: h()?,
            ok: 0,
            errors: 0,
            first_error: None,
            elapsed: Duration::ZERO,
        })
    }

    pub fn merge(&mut self, other: &Recorder) -> anyhow::Result<()> {
        self.latency.add(&other.latency)?;
        self.service.add(&other.service)?;
        self.complete.add(&other.complete)?;
        self.ok += other.ok;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.elapsed += other.elapsed;
        Ok(())
    }

    pub fn throughput(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 { self.ok as f64 / s } else { 0.0 }
    }

    fn error(&mut self, e: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(e);
        }
    }
}

/// The times one successful request produced.
struct Timing {
    /// When the measure point was reached: the whole body read (non-streaming) or the first body
    /// bytes (streaming).
    measured: Instant,
    /// When the whole body had been read.
    done: Instant,
}

/// Sends one request and reads the whole answer.
async fn exchange(client: &HttpClient, target: &Target) -> Result<Timing, String> {
    let req = target.request().map_err(|e| e.to_string())?;
    let resp: Response<Incoming> = client.request(req).await.map_err(|e| format!("{e:?}"))?;
    let status = resp.status();
    let mut body = resp.into_body();
    let mut first: Option<Instant> = None;
    let mut error_body = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading body: {e}"))?;
        if let Some(data) = frame.data_ref()
            && !data.is_empty()
        {
            if first.is_none() {
                first = Some(Instant::now());
            }
            if status != StatusCode::OK && error_body.len() < 2048 {
                error_body.extend_from_slice(data);
            }
        }
    }
    let done = Instant::now();
    if status != StatusCode::OK {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&error_body)
        ));
    }
    let Some(first) = first else {
        return Err("empty body".into());
    };
    Ok(Timing {
        measured: if target.stream { first } else { done },
        done,
    })
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

fn record(
    rec: &Mutex<Recorder>,
    result: Result<Timing, String>,
    scheduled: Instant,
    sent: Instant,
) {
    let Ok(mut r) = rec.lock() else { return };
    match result {
        Ok(t) => {
            r.ok += 1;
            r.latency
                .saturating_record(nanos(t.measured.saturating_duration_since(scheduled)));
            r.service
                .saturating_record(nanos(t.measured.saturating_duration_since(sent)));
            r.complete
                .saturating_record(nanos(t.done.saturating_duration_since(scheduled)));
        }
        Err(e) => r.error(e),
    }
}

/// One request, checked: used before a run to fail fast on a misconfiguration.
pub async fn preflight(client: &HttpClient, target: &Target) -> anyhow::Result<()> {
    exchange(client, target)
        .await
        .map(|_| ())
        .map_err(|e| anyhow::anyhow!("{} ({}): {e}", target.name, target.uri))
}

/// Open loop: `rate` requests per second for `duration`, at most `cap` in flight (a request
/// waiting for a slot is still timed from its scheduled send). A dedicated pacing thread sleeps
/// to each send time and hands the request to the runtime, so the schedule does not depend on
/// tokio's 1 ms timer wheel.
pub async fn open_loop(
    client: &HttpClient,
    target: &Target,
    rate: f64,
    duration: Duration,
    cap: usize,
) -> anyhow::Result<Recorder> {
    let rec = Arc::new(Mutex::new(Recorder::new()?));
    let slots = Arc::new(Semaphore::new(cap));
    let interval = Duration::from_secs_f64(1.0 / rate);
    let count = (duration.as_secs_f64() * rate).round() as u64;
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let handle = tokio::runtime::Handle::current();
    let start = Instant::now() + Duration::from_millis(2);

    let pacer = {
        let client = client.clone();
        let target = target.clone();
        let rec = rec.clone();
        std::thread::Builder::new()
            .name("pacer".into())
            .spawn(move || {
                for i in 0..count {
                    let scheduled = start + interval.mul_f64(i as f64);
                    let now = Instant::now();
                    if scheduled > now {
                        std::thread::sleep(scheduled - now);
                    }
                    let client = client.clone();
                    let target = target.clone();
                    let rec = rec.clone();
                    let slots = slots.clone();
                    let alive = alive_tx.clone();
                    handle.spawn(async move {
                        let Ok(_slot) = slots.acquire().await else {
                            return;
                        };
                        let sent = Instant::now();
                        let result = exchange(&client, &target).await;
                        record(&rec, result, scheduled, sent);
                        drop(alive);
                    });
                }
                drop(alive_tx);
            })
            .context("starting the pacing thread")?
    };

    // Every request task holds a sender: `recv` yields `None` once the pacer is done and the
    // last request has finished.
    let drained = tokio::time::timeout(duration + Duration::from_secs(30), alive_rx.recv()).await;
    let _ = pacer.join();
    if drained.is_err() {
        anyhow::bail!("requests still in flight 30 s after the run ended");
    }
    let mut r = take(&rec)?;
    r.elapsed = start.elapsed();
    Ok(r)
}

/// Closed loop: `workers` tasks, each sending its next request as soon as the last one answered,
/// for `duration`. Latency here is service time (there is no schedule).
pub async fn closed_loop(
    client: &HttpClient,
    target: &Target,
    workers: usize,
    duration: Duration,
) -> anyhow::Result<Recorder> {
    let rec = Arc::new(Mutex::new(Recorder::new()?));
    let start = Instant::now();
    let end = start + duration;
    let mut tasks = Vec::with_capacity(workers);
    for _ in 0..workers {
        let client = client.clone();
        let target = target.clone();
        let rec = rec.clone();
        tasks.push(tokio::spawn(async move {
            let mut last = Instant::now();
            while last < end {
                let sent = last;
                let result = exchange(&client, &target).await;
                record(&rec, result, sent, sent);
                last = Instant::now();
            }
            last
        }));
    }
    let mut finished = start;
    for t in tasks {
        finished = finished.max(t.await?);
    }
    let mut r = take(&rec)?;
    r.elapsed = finished - start;
    Ok(r)
}

fn take(rec: &Mutex<Recorder>) -> anyhow::Result<Recorder> {
    let mut guard = rec
        .lock()
        .map_err(|_| anyhow::anyhow!("recorder lock poisoned"))?;
    Ok(std::mem::replace(&mut *guard, Recorder::new()?))
}

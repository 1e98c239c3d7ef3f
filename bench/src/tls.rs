//! `--tls-compare`: what HTTPS costs (issue 16's benchmark), in one run.
//!
//! 1. Two gateways on the same upstream, one plain HTTP and one HTTPS (the demo PKI from
//!    `sovereign::demo`, `client_auth = "optional"`, the bearer key; session resumption on),
//!    under the same closed-loop load over keep-alive connections, their order swapped every
//!    round: throughput (goal: HTTPS ≥ 85% of plain) and p50/p99 of each.
//! 2. New connections against the HTTPS gateway, `--connections` workers each connecting as fast
//!    as it can: full handshakes per second (client resumption off: every handshake is full),
//!    then connections with one `GET /healthz` each, without and with resumption (the client
//!    keeps tickets), which shows what the server's session cache buys.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use hdrhistogram::Histogram;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::load::{self, Recorder, Target};
use crate::servers::{self, Server};
use crate::{Args, client_runtime, ms, start_gateway};

/// The goal in issue 16: HTTPS keep-alive throughput at least this share of plain HTTP's.
const GOAL_THROUGHPUT_RATIO: f64 = 0.85;

pub fn compare(
    args: &Args,
    mut sim: Server,
    secret: &str,
    hash: &str,
    dir: &Path,
) -> anyhow::Result<Value> {
    println!(
        "sovereign-bench --tls-compare: keep-alive throughput over HTTPS vs plain HTTP, then new TLS handshakes per second"
    );
    let pki = sovereign::demo::DemoTls::generate(dir)?;
    let ca = pki.ca();
    let mut gateways = Vec::new();
    for (name, extra) in [
        ("plain", String::new()),
        (
            "https",
            format!(
                "\n[tls]\ncert = {:?}\nkey = {:?}\nclient_auth = \"optional\"\nclient_ca = [{:?}]\nsession_resumption = true\n",
                pki.dir.join("server.pem").display().to_string(),
                pki.dir.join("server.key").display().to_string(),
                ca.display().to_string(),
            ),
        ),
    ] {
        let text = format!(
            "data_dir = \"data-{name}\"\n{}\n[journal]\nenabled = false\n{extra}",
            servers::gateway_config(&sim.url, hash, None)
        );
        gateways.push(start_gateway(args, dir, &format!("gateway-{name}"), &text)?);
    }
    let roots = roots(&ca)?;
    let rt = client_runtime(args)?;
    let result = rt.block_on(async {
        let keep_alive = throughput(args, &gateways, secret, &roots).await?;
        let https_addr: SocketAddr = gateways[1]
            .url
            .trim_start_matches("https://")
            .parse()
            .context("the HTTPS gateway's address")?;
        let handshakes = connections(args, https_addr, &roots).await?;
        sim.check_alive()?;
        for gw in &mut gateways {
            gw.check_alive()?;
        }
        Ok::<Value, anyhow::Error>(json!({"keep_alive": keep_alive, "new_connections": handshakes}))
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

fn roots(ca: &Path) -> anyhow::Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca)? {
        roots.add(c?)?;
    }
    Ok(roots)
}

fn client_config(
    roots: &rustls::RootCertStore,
    resumption: bool,
) -> anyhow::Result<rustls::ClientConfig> {
    let mut c = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots.clone())
    .with_no_client_auth();
    if !resumption {
        c.resumption = rustls::client::Resumption::disabled();
    }
    Ok(c)
}

/// Closed loop on each gateway, rounds alternating the order.
async fn throughput(
    args: &Args,
    gateways: &[Server],
    secret: &str,
    roots: &rustls::RootCertStore,
) -> anyhow::Result<Value> {
    let body = Bytes::from(serde_json::to_vec(&json!({
        "model": args.model.as_deref().unwrap_or("qwen2.5-coder-32b"),
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": args.max_tokens,
    }))?);
    let targets: Vec<Target> = gateways
        .iter()
        .map(|gw| -> anyhow::Result<Target> {
            Ok(Target {
                name: "gateway",
                uri: format!("{}/v1/chat/completions", gw.url).parse()?,
                authorization: Some(format!("Bearer {secret}")),
                headers: Vec::new(),
                body: body.clone(),
                stream: false,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let client = load::client_with(args.connections, client_config(roots, true)?);
    for t in &targets {
        load::preflight(&client, t).await?;
    }
    println!(
        "closed loop, {} keep-alive connections, {} s measured per gateway in {} round(s) after {} s warm-up",
        args.connections, args.duration, args.rounds, args.warmup
    );
    let run = async |t: &Target, secs: f64| {
        load::closed_loop(&client, t, args.connections, Duration::from_secs_f64(secs)).await
    };
    if args.warmup > 0.0 {
        for t in &targets {
            run(t, args.warmup).await?;
        }
    }
    let mut recs = [Recorder::new()?, Recorder::new()?];
    let per_round = args.duration / f64::from(args.rounds);
    for round in 0..args.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let r = run(&targets[i], per_round).await?;
            recs[i].merge(&r)?;
        }
    }
    let side = |r: &Recorder| {
        json!({
            "rps": (r.throughput() * 10.0).round() / 10.0,
            "p50_ms": ms(&r.service, 0.5),
            "p99_ms": ms(&r.service, 0.99),
            "errors": r.errors,
        })
    };
    let ratio = recs[1].throughput() / recs[0].throughput().max(f64::MIN_POSITIVE);
    println!(
        "{:<8} {:>10} {:>10} {:>10} {:>8}",
        "", "req/s", "p50 ms", "p99 ms", "errors"
    );
    for (name, r) in [("plain", &recs[0]), ("https", &recs[1])] {
        println!(
            "{name:<8} {:>10.0} {:>10.3} {:>10.3} {:>8}",
            r.throughput(),
            ms(&r.service, 0.5),
            ms(&r.service, 0.99),
            r.errors
        );
    }
    println!(
        "HTTPS throughput = {:.1}% of plain (goal ≥ {:.0}%): {}",
        ratio * 100.0,
        GOAL_THROUGHPUT_RATIO * 100.0,
        if ratio >= GOAL_THROUGHPUT_RATIO {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(json!({
        "plain": side(&recs[0]),
        "https": side(&recs[1]),
        "https_over_plain": (ratio * 1000.0).round() / 1000.0,
        "goal": GOAL_THROUGHPUT_RATIO,
    }))
}

/// What one kind of new-connection loop measured.
struct Connections {
    done: u64,
    /// Handshakes the server resumed (a session from its cache).
    resumed: u64,
    errors: u64,
    first_error: Option<String>,
    elapsed: Duration,
    latency: Histogram<u64>,
}

/// Full handshakes, then connections with one request each without and with resumption.
async fn connections(
    args: &Args,
    addr: SocketAddr,
    roots: &rustls::RootCertStore,
) -> anyhow::Result<Value> {
    let secs = (args.duration / 2.0).max(1.0);
    let workers = args.connections.min(16);
    println!(
        "new connections: {workers} workers, {secs:.0} s each; the gateway keeps a session cache (resumption on)"
    );
    let mut out = serde_json::Map::new();
    for (name, resumption, request) in [
        ("full_handshakes", false, false),
        ("full_handshake_and_request", false, true),
        ("resumed_handshake_and_request", true, true),
    ] {
        let mut config = client_config(roots, resumption)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        let c = connect_loop(
            addr,
            config,
            workers,
            Duration::from_secs_f64(secs),
            request,
        )
        .await?;
        let per_s = c.done as f64 / c.elapsed.as_secs_f64();
        let p = |q: f64| c.latency.value_at_quantile(q) as f64 / 1e6;
        println!(
            "{name:<32} {per_s:>8.0}/s  p50 {:.3} ms  p99 {:.3} ms  resumed {}/{}  errors {}{}",
            p(0.5),
            p(0.99),
            c.resumed,
            c.done,
            c.errors,
            c.first_error
                .as_deref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        );
        out.insert(
            name.into(),
            json!({"per_s": per_s.round(), "p50_ms": p(0.5), "p99_ms": p(0.99), "resumed": c.resumed, "done": c.done, "errors": c.errors}),
        );
    }
    Ok(Value::Object(out))
}

async fn connect_loop(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    workers: usize,
    duration: Duration,
    request: bool,
) -> anyhow::Result<Connections> {
    let start = Instant::now();
    let end = start + duration;
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let connector = tokio_rustls::TlsConnector::from(config.clone());
        tasks.push(tokio::spawn(async move {
            let mut latency = Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 3)?;
            let (mut done, mut resumed, mut errors, mut first_error) = (0u64, 0u64, 0u64, None);
            while Instant::now() < end {
                let t0 = Instant::now();
                match one_connection(&connector, addr, request).await {
                    Ok(was_resumed) => {
                        done += 1;
                        resumed += u64::from(was_resumed);
                        latency.saturating_record(
                            u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX),
                        );
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e.to_string());
                    }
                }
            }
            Ok::<_, anyhow::Error>((done, resumed, errors, first_error, latency))
        }));
    }
    let mut total = Connections {
        done: 0,
        resumed: 0,
        errors: 0,
        first_error: None,
        elapsed: Duration::ZERO,
        latency: Histogram::new_with_bounds(1_000, 60_000_000_000, 3)?,
    };
    for t in tasks {
        let (done, resumed, errors, first, latency) = t.await??;
        total.done += done;
        total.resumed += resumed;
        total.errors += errors;
        if total.first_error.is_none() {
            total.first_error = first;
        }
        total.latency.add(&latency)?;
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

/// One connection (and request); whether its handshake was a resumption.
async fn one_connection(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    request: bool,
) -> anyhow::Result<bool> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let mut tls = connector
        .connect(ServerName::IpAddress(addr.ip().into()), tcp)
        .await?;
    let resumed = tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    if request {
        tls.write_all(b"GET /healthz HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n")
            .await?;
        let mut buf = Vec::with_capacity(512);
        tls.read_to_end(&mut buf).await?;
        anyhow::ensure!(
            buf.starts_with(b"HTTP/1.1 200"),
            "healthz did not answer 200"
        );
    }
    Ok(resumed)
}

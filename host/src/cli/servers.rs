//! The servers the binary runs: `sovereign serve` (the gateway from a configuration file),
//! `sovereign demo` (the gateway on generated defaults in front of the simulated fleet, keys
//! printed) and `sovereign simulate` (the fleet alone); each prints `listening on …` once it
//! accepts connections, the line tests and scripts wait for.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use tokio::net::TcpListener;

use sovereign::config::Config;
use sovereign::simulator::{Behaviour, FailMode};
use sovereign::{Gateway, demo, run_simulator, shutdown_signal};

/// `sovereign serve --config FILE`: the gateway until a shutdown signal.
pub async fn serve(config: PathBuf) -> anyhow::Result<()> {
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

/// `sovereign demo`: a simulated fleet on a free port, the gateway in front of it on `listen`
/// with its generated config, keys (and with `tls`, a PKI) under `data_dir`.
pub async fn demo(listen: SocketAddr, data_dir: PathBuf, tls: bool) -> anyhow::Result<()> {
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
    match gateway.state().library().map(|l| l.readiness()) {
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

/// `sovereign simulate`: the simulated fleet alone, with the given delays.
pub async fn simulate(
    listen: SocketAddr,
    latency_ms: u64,
    token_interval_ms: u64,
) -> anyhow::Result<()> {
    let listener = bind(listen).await?;
    let shutdown = shutdown_signal();
    announce(&listener, false)?;
    let behaviour = Behaviour {
        latency_ms,
        token_interval_ms,
        fail: FailMode::None,
        ..Behaviour::default()
    };
    run_simulator(listener, behaviour, shutdown).await
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

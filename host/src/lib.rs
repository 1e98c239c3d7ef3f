//! Sovereign Gateway: an OpenAI-compatible gateway in front of language models that run on
//! infrastructure the customer controls. The binary (`main.rs`) parses the command line and calls
//! [`run`]; tests start the same [`run`] on port 0.

pub mod auth;
pub mod config;
pub mod demo;
pub mod http;
pub mod metrics;
pub mod policy;
pub mod routing;
pub mod simulator;
pub mod upstream;

use std::future::Future;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::http::serve::{ServeOptions, serve};

/// Serves the gateway on `listener` until `shutdown` resolves, then drains in-flight requests.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let opts = ServeOptions {
        max_connections: config.server.max_connections,
        header_read_timeout: config.server.header_read_timeout,
        shutdown_grace: config.server.shutdown_grace,
    };
    let state = http::AppState::new(config)?;
    serve(listener, http::router(state), opts, shutdown).await?;
    Ok(())
}

/// Serves the simulated model fleet on `listener` until `shutdown` resolves.
pub async fn run_simulator(
    listener: TcpListener,
    behaviour: simulator::Behaviour,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let app = simulator::router(simulator::fleet::demo_fleet(), behaviour);
    let opts = ServeOptions {
        max_connections: 100_000,
        header_read_timeout: std::time::Duration::from_secs(30),
        shutdown_grace: std::time::Duration::from_secs(5),
    };
    serve(listener, app, opts, shutdown).await?;
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutdown signal received");
}

//! Sovereign Gateway: an OpenAI-compatible gateway in front of language models that run on
//! infrastructure the customer controls. The binary (`main.rs`) parses the command line, prepares
//! a [`Gateway`] (policies loaded, tokenizer built) and serves it; tests do the same on port 0.

pub mod auth;
pub mod config;
pub mod demo;
pub mod facts;
pub mod http;
pub mod journal;
pub mod metrics;
pub mod policy;
pub mod routing;
pub mod simulator;
pub mod store;
pub mod upstream;

use std::future::Future;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::http::serve::{ServeOptions, serve};

/// A gateway ready to serve: its policies compiled, checked and smoke-called, its facts engine
/// built. Preparing takes up to seconds; serving starts at once.
pub struct Gateway {
    state: http::AppState,
    opts: ServeOptions,
}

impl Gateway {
    pub async fn new(config: Config) -> anyhow::Result<Gateway> {
        let opts = ServeOptions {
            max_connections: config.server.max_connections,
            header_read_timeout: config.server.header_read_timeout,
            shutdown_grace: config.server.shutdown_grace,
        };
        let state = http::AppState::new(config).await?;
        Ok(Gateway { state, opts })
    }

    /// The shared state the server will run on (tests reach the journal through it).
    pub fn state(&self) -> &http::AppState {
        &self.state
    }

    /// Serves on `listener` until `shutdown` resolves, then drains in-flight requests; then
    /// closes the journal.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> anyhow::Result<()> {
        let state = self.state.clone();
        let served = serve(listener, http::router(self.state), self.opts, shutdown).await;
        state.shut_down().await;
        served?;
        Ok(())
    }
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

/// Resolves on SIGTERM or Ctrl-C (SIGINT). The handlers are installed when this is called, not
/// when the future is first polled, so a signal that arrives right after start-up is a graceful
/// shutdown rather than death by the signal's default action.
pub fn shutdown_signal() -> impl Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let term = signal(SignalKind::terminate());
        let int = signal(SignalKind::interrupt());
        async move {
            match (term, int) {
                (Ok(mut term), Ok(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    tracing::warn!("could not install signal handlers; stop with SIGKILL");
                    std::future::pending::<()>().await;
                }
            }
            tracing::info!("shutdown signal received");
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutdown signal received");
    }
}

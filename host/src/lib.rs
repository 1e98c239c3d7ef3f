//! Sovereign Gateway: an OpenAI-compatible gateway in front of language models that run on
//! infrastructure the customer controls. The binary (`main.rs`) parses the command line, prepares
//! a [`Gateway`] (policies loaded, tokenizer built) and serves it; tests do the same on port 0.

pub mod access;
pub mod admin;
pub mod api;
pub mod auth;
pub mod budget;
pub mod config;
pub mod console;
pub mod demo;
pub mod domain;
pub mod egress;
pub mod events;
pub mod facts;
pub mod journal;
pub mod mcp;
pub mod metrics;
pub mod pipeline;
pub mod policy;
pub mod rag;
pub mod residency;
pub mod routes;
pub mod routing;
pub mod server;
pub mod services;
pub mod shared;
pub mod simulator;
pub mod state;
pub mod store;
pub mod tls;
pub mod traces;
pub mod upstream;
pub mod webhooks;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::server::lanes::Lanes;
use crate::server::serve::{ServeOptions, serve};
use crate::server::tls::TlsListener;

/// A gateway ready to serve: its policies compiled, checked and smoke-called, its facts engine
/// built. Preparing takes up to seconds; serving starts at once.
pub struct Gateway {
    state: state::AppState,
    opts: ServeOptions,
    /// The HTTPS listener's material and reload, when `[tls]` is set.
    tls: Option<Arc<TlsListener>>,
}

impl Gateway {
    pub async fn new(config: Config) -> anyhow::Result<Gateway> {
        let opts = ServeOptions {
            max_connections: config.server.max_connections,
            header_read_timeout: config.server.header_read_timeout,
            shutdown_grace: config.server.shutdown_grace,
        };
        let tls = config.tls.clone();
        let state = state::AppState::new(config).await?;
        Gateway::assemble(state, opts, tls)
    }

    /// [`Gateway::new`] with test doubles (clocks).
    pub async fn with_parts(config: Config, parts: state::Parts) -> anyhow::Result<Gateway> {
        let opts = ServeOptions {
            max_connections: config.server.max_connections,
            header_read_timeout: config.server.header_read_timeout,
            shutdown_grace: config.server.shutdown_grace,
        };
        let tls = config.tls.clone();
        let state = state::AppState::with_parts(config, parts).await?;
        Gateway::assemble(state, opts, tls)
    }

    fn assemble(
        state: state::AppState,
        opts: ServeOptions,
        tls: Option<config::TlsConfig>,
    ) -> anyhow::Result<Gateway> {
        // The TLS counters live with every other counter; the material was checked when the
        // config was read (and is read again here, so what is on disk now serves).
        let tls = match tls {
            Some(t) => Some(TlsListener::new(&t, state.metrics().clone())?),
            None => None,
        };
        Ok(Gateway { state, opts, tls })
    }

    /// The HTTPS listener's state when `[tls]` is set (tests reload through it).
    pub fn tls(&self) -> Option<Arc<TlsListener>> {
        self.tls.clone()
    }

    /// The admin key start-up created because the store had none: show it once, then forget it.
    pub fn take_bootstrap_admin_secret(&self) -> Option<String> {
        self.state.take_bootstrap_admin_secret()
    }

    /// The shared state the server runs on (tests reach its events and journal through it).
    pub fn state(&self) -> &state::AppState {
        &self.state
    }

    /// Serves on `listener` until `shutdown` resolves, then drains in-flight requests; then
    /// closes the journal.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> anyhow::Result<()> {
        let lanes = match self.state.config().server.threads {
            0 => None,
            // Lane `i` calls upstreams through pool `1 + i` (`Upstreams::new`).
            n => Some(Lanes::start(n, |lane| upstream::use_pool(1 + lane))?),
        };
        let upkeep = tokio::spawn({
            let state = self.state.clone();
            async move {
                let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
                let mut minutes = 0u64;
                loop {
                    tick.tick().await;
                    state.access().prune();
                    if let Some(library) = state.library() {
                        library.reconcile().await;
                    }
                    // Replicas: the stored MCP servers and allowlists, each minute, so a notice
                    // missed (or none sent: PostgreSQL without Redis) is caught up within one.
                    if state.replicated()
                        && let Err(e) = state.mcp_servers().reload().await
                    {
                        tracing::warn!(error = %e, "reloading the MCP servers failed");
                    }
                    // Stored responses past their retention, at start and then hourly.
                    if minutes.is_multiple_of(60) {
                        api::responses::purge(&state).await;
                    }
                    minutes += 1;
                }
            }
        });
        // Other replicas' changes (revocations, team changes), applied as they arrive.
        let changes = self.state.shared().listen().map(|mut heard| {
            let state = self.state.clone();
            tokio::spawn(async move {
                while let Some(notice) = heard.recv().await {
                    state.hear(notice).await;
                }
            })
        });
        // Replicas: this replica's journal copied into the shared store, behind the writer.
        let journal_index = tokio::spawn(self.state.clone().index_journal());
        // The ingestion queue's workers (uploads answered at once are ingested here).
        let ingestion = pipeline::library::ingestion::start(&self.state);
        let reload = self.tls.as_ref().map(TlsListener::watch);
        let result = serve(
            listener,
            routes::router(self.state.clone()),
            self.opts,
            self.tls.clone(),
            lanes.as_ref(),
            shutdown,
        )
        .await;
        upkeep.abort();
        journal_index.abort();
        if let Some(i) = ingestion {
            i.abort();
        }
        if let Some(c) = changes {
            c.abort();
        }
        if let Some(r) = reload {
            r.abort();
        }
        // Drained: every settled charge is committed and the journal closed before the process
        // may exit.
        self.state.budgets().charger().flush().await;
        self.state.shut_down().await;
        // The journal is closed: its last entries go to the shared store too.
        if let Err(e) = self.state.index_journal_now().await {
            tracing::warn!(error = %e, "copying the journal's last entries failed; they are copied at the next start");
        }
        // Last: tasks the requests spawned ran on the lanes until the state was closed.
        if let Some(lanes) = lanes {
            lanes.stop().await;
        }
        result?;
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
    serve(listener, app, opts, None, None, shutdown).await?;
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

//! The HTTPS side of the listener: the TLS handshake under a deadline (a client that sends
//! nothing, or dribbles its ClientHello, is cut off and frees its slot), the verified client
//! certificate handed to every request of the connection, and the material in force swapped
//! whole on reload — SIGHUP, or a change to any of its files — without touching open
//! connections. A broken new file keeps the old material serving, says why in the log and
//! raises `sovereign_tls_reload_failing` in `/metrics`; it never stops the gateway.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::config::TlsConfig;
use crate::metrics::Metrics;
use crate::tls::{PeerCert, ServerMaterial, ServerSpec, TlsErrors};

/// The TLS listener's state: the spec, the material in force, counters.
pub struct TlsListener {
    spec: ServerSpec,
    current: ArcSwap<ServerMaterial>,
    handshake_timeout: Duration,
    reload_poll: Option<Duration>,
    metrics: Arc<Metrics>,
}

/// A connection after its handshake.
pub struct Accepted {
    pub stream: TlsStream<TcpStream>,
    /// The client certificate, verified by the handshake; `None` when none was presented.
    pub peer: Option<Arc<PeerCert>>,
    /// ALPN chose HTTP/2.
    pub h2: bool,
}

impl TlsListener {
    /// Loads the material (already checked when the config was read; read again here so the
    /// listener serves what is on disk now).
    pub fn new(config: &TlsConfig, metrics: Arc<Metrics>) -> Result<Arc<TlsListener>, TlsErrors> {
        let material = config.spec.load()?;
        note_material(&metrics, &material);
        Ok(Arc::new(TlsListener {
            spec: config.spec.clone(),
            current: ArcSwap::from_pointee(material),
            handshake_timeout: config.handshake_timeout,
            reload_poll: config.reload_poll,
            metrics,
        }))
    }

    /// Reads the files again and, when they make good material, puts it in force for new
    /// handshakes; else keeps the old one.
    pub fn reload(&self) -> Result<(), TlsErrors> {
        match self.spec.load() {
            Ok(material) => {
                note_material(&self.metrics, &material);
                tracing::info!(subject = %material.subject, "TLS material reloaded");
                self.current.store(Arc::new(material));
                Metrics::inc(&self.metrics.tls_reloads_total);
                self.metrics.tls_reload_failing.store(0, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "TLS reload refused; the previous material stays in force");
                Metrics::inc(&self.metrics.tls_reload_failures_total);
                self.metrics.tls_reload_failing.store(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Reloads on SIGHUP and, unless polling is off, when any file's size or modification time
    /// changes. Runs until the task is aborted.
    pub fn watch(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            #[cfg(unix)]
            let mut hup =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
            let mut seen = me.stamps();
            let mut tick =
                tokio::time::interval(me.reload_poll.unwrap_or(Duration::from_secs(3600)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                #[cfg(unix)]
                let hangup = async {
                    match hup.as_mut() {
                        Some(h) => {
                            h.recv().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                #[cfg(not(unix))]
                let hangup = std::future::pending::<()>();
                tokio::select! {
                    () = hangup => {
                        tracing::info!("SIGHUP: reloading the TLS material");
                        seen = me.stamps();
                        let _ = me.reload();
                    }
                    _ = tick.tick(), if me.reload_poll.is_some() => {
                        let now = me.stamps();
                        if now != seen {
                            seen = now;
                            let _ = me.reload();
                        }
                    }
                }
            }
        })
    }

    /// Size and modification time of every file (a missing file is its own stamp).
    fn stamps(&self) -> Vec<Option<(u64, SystemTime)>> {
        self.spec
            .files()
            .iter()
            .map(|p| {
                std::fs::metadata(p)
                    .ok()
                    .map(|m| (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
            })
            .collect()
    }

    /// The handshake with the material in force, within the handshake timeout. `None` (counted
    /// and logged at debug) when it times out or fails.
    pub async fn accept(&self, tcp: TcpStream) -> Option<Accepted> {
        let acceptor = TlsAcceptor::from(self.current.load().config.clone());
        let peer_addr = tcp.peer_addr().ok();
        let stream = match tokio::time::timeout(self.handshake_timeout, acceptor.accept(tcp)).await
        {
            Err(_) => {
                Metrics::inc(&self.metrics.tls_handshake_timeouts_total);
                tracing::debug!(peer = ?peer_addr, "TLS handshake timed out");
                return None;
            }
            Ok(Err(e)) => {
                Metrics::inc(&self.metrics.tls_handshake_failures_total);
                tracing::debug!(peer = ?peer_addr, error = %e, "TLS handshake failed");
                return None;
            }
            Ok(Ok(s)) => s,
        };
        let conn = stream.get_ref().1;
        let h2 = conn.alpn_protocol() == Some(b"h2");
        let peer = match conn.peer_certificates().and_then(|c| c.first()) {
            None => None,
            Some(der) => match PeerCert::from_der(der) {
                Some(p) => Some(Arc::new(p)),
                None => {
                    // Verified, yet unreadable for its identity facts (a malformed SAN): it
                    // must not fall back to "no certificate".
                    Metrics::inc(&self.metrics.tls_handshake_failures_total);
                    tracing::debug!(peer = ?peer_addr, "client certificate has unreadable names");
                    return None;
                }
            },
        };
        Metrics::inc(&self.metrics.tls_handshakes_total);
        Some(Accepted { stream, peer, h2 })
    }
}

fn note_material(metrics: &Metrics, material: &ServerMaterial) {
    metrics.tls_server_cert_not_after_seconds.store(
        u64::try_from(material.not_after).unwrap_or(0),
        Ordering::Relaxed,
    );
}

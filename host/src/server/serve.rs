//! The accept loop: HTTP/1.1 and HTTP/2 on hyper, with the hardening a gateway on the path of
//! every token needs: `TCP_NODELAY` on every accepted socket (Nagle + delayed ACK otherwise add
//! ~40 ms per response), a cap on open connections, a timeout on reading request headers (slow
//! clients are cut off), and graceful shutdown (stop accepting, let in-flight requests finish
//! within a grace period). With TLS, the handshake (under its own deadline) comes first and
//! ALPN picks the protocol; the client certificate rides on every request of the connection.
//! Requests hyper cannot parse get the error shape too (`parse_errors`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use super::lanes::Lanes;
use super::parse_errors::ErrorBodies;
use super::tls::TlsListener;

#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub shutdown_grace: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains connections. Each accepted
/// connection runs on one of `lanes` when given, else as a task on the runtime this runs on.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    opts: ServeOptions,
    tls: Option<Arc<TlsListener>>,
    lanes: Option<&Lanes>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(opts.max_connections));
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .keep_alive(true);
    builder.http2().timer(TokioTimer::new());
    tokio::pin!(shutdown);

    loop {
        // Wait for a free connection slot first: at the cap, new connections wait in the
        // kernel's backlog instead of being accepted and starved.
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and friends: back off briefly rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let svc = app
            .clone()
            .map_request(move |mut req: http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                req
            });
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let header_read_timeout = opts.header_read_timeout;
        let tls = tls.clone();
        let conn = move |stream: tokio::net::TcpStream| async move {
            let result = match tls {
                None => {
                    if !sniffed_in_time(&stream, header_read_timeout).await {
                        return drop(permit);
                    }
                    let conn = builder.serve_connection_with_upgrades(
                        TokioIo::new(ErrorBodies::new(stream)),
                        TowerToHyperService::new(svc),
                    );
                    watcher.watch(conn).await
                }
                Some(tls) => {
                    let Some(accepted) = tls.accept(stream).await else {
                        return drop(permit);
                    };
                    let peer_cert = accepted.peer;
                    let svc = svc.map_request(move |mut req: http::Request<Incoming>| {
                        if let Some(c) = &peer_cert {
                            req.extensions_mut().insert(c.clone());
                        }
                        req
                    });
                    // ALPN decided the protocol, so no sniffing (and no unbounded wait in it).
                    let builder = if accepted.h2 {
                        builder.http2_only()
                    } else {
                        builder.http1_only()
                    };
                    let conn = builder.serve_connection_with_upgrades(
                        TokioIo::new(ErrorBodies::new(accepted.stream)),
                        TowerToHyperService::new(svc),
                    );
                    watcher.watch(conn).await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            drop(permit);
        };
        match lanes {
            Some(lanes) => lanes.run(stream, conn),
            None => drop(tokio::spawn(conn(stream))),
        }
    }

    drop(listener);
    tracing::info!(
        connections = graceful.count(),
        "shutting down: draining connections"
    );
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("all connections closed"),
        () = tokio::time::sleep(opts.shutdown_grace) => {
            tracing::warn!(grace = ?opts.shutdown_grace, "grace period over; closing remaining connections");
        }
    }
    Ok(())
}

const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Waits until hyper-util's HTTP version detection can decide (the bytes received are the whole
/// HTTP/2 preface or stop matching it), within the header-read timeout. That detection has no
/// time limit of its own and runs before hyper's header timer starts (hyperium/hyper#3756), so a
/// connection sending nothing, or a prefix of the preface, would otherwise hold its slot forever.
async fn sniffed_in_time(stream: &tokio::net::TcpStream, limit: Duration) -> bool {
    let sniff = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            let n = stream.peek(&mut buf).await?;
            if n == 0 {
                return Ok::<bool, std::io::Error>(false); // closed before saying anything
            }
            if n == buf.len() || buf[..n] != H2_PREFACE[..n] {
                return Ok(true);
            }
            // A prefix of the preface: `peek` returns at once while no new bytes come, so wait
            // a little before looking again. Real clients send the preface in one segment.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    matches!(tokio::time::timeout(limit, sniff).await, Ok(Ok(true)))
}

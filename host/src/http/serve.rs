//! The accept loop: HTTP/1.1 and HTTP/2 on hyper, with the hardening a gateway on the path of
//! every token needs: `TCP_NODELAY` on every accepted socket (Nagle + delayed ACK otherwise add
//! ~40 ms per response), a cap on open connections, a timeout on reading request headers (slow
//! clients are cut off), and graceful shutdown (stop accepting, let in-flight requests finish
//! within a grace period).

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

#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub shutdown_grace: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains connections.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    opts: ServeOptions,
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
        tokio::spawn(async move {
            // The HTTP version sniffing below reads before hyper's own header timer starts, so a
            // connection that never sends a byte would hold its slot forever: it gets the same
            // limit for its first byte.
            let mut first = [0u8; 1];
            match tokio::time::timeout(header_read_timeout, stream.peek(&mut first)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return drop(permit),
            }
            let conn = builder.serve_connection_with_upgrades(
                TokioIo::new(stream),
                TowerToHyperService::new(svc),
            );
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            drop(permit);
        });
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

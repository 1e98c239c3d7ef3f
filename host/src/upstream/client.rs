//! The HTTP client of one model: hyper's pooled HTTP/1.1 client over a TCP connector (no Nagle)
//! and rustls (the model's own CA bundle and client certificate, or the system's trust store),
//! the two under the model's connect timeout together. Requests are built by hand in
//! [`super::Upstreams::post`]: a higher level client (reqwest, used before) parsed the URL twice
//! and ran a redirect layer on every call, ~7 % of an all-policies request's instructions
//! (bench/README.md, "seventh step"). The MCP gateway's upstream calls use the same client
//! with the SSRF guard as its resolver ([`pooled`]).

use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::Uri;
use http_body_util::Full;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls_platform_verifier::BuilderVerifierExt;
use tower::Service;

use crate::domain::ModelConfig;

pub type HttpClient<R = GaiResolver> = Client<Connector<R>, Full<Bytes>>;

/// Idle pooled connections are closed after this long.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Most idle connections kept per upstream host (enough for every concurrent request).
const POOL_MAX_IDLE_PER_HOST: usize = 1024;

/// Builds `pools` clients of the model, each with its own connection pool and the same
/// connector; fails on unreadable TLS material.
pub fn build(model: &ModelConfig, pools: usize) -> anyhow::Result<Vec<HttpClient>> {
    let tls = match &model.tls {
        // The model's own CA bundle (and client certificate): no system trust store.
        Some(spec) => spec
            .load()
            .map_err(|e| anyhow::anyhow!("model `{}`: tls: {e}", model.id))?,
        None if model.base_url.scheme() == "https" => system_trust()?,
        // Never used: plain HTTP needs no trust store, and a host without one still starts.
        None => no_trust()?,
    };
    let builder = builder(POOL_IDLE_TIMEOUT);
    let connector = connector(HttpConnector::new(), tls, model.timeouts.connect);
    Ok((0..pools.max(1))
        .map(|_| builder.build(connector.clone()))
        .collect())
}

/// One pooled client whose connections are resolved by `resolver`, made within `connect` (TCP
/// and TLS) and closed after `idle` unused.
pub fn pooled<R>(resolver: R, tls: ClientConfig, connect: Duration, idle: Duration) -> HttpClient<R>
where
    R: Service<Name> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = SocketAddr>,
    R::Error: Into<BoxError>,
    R::Future: Send,
{
    builder(idle).build(connector(
        HttpConnector::new_with_resolver(resolver),
        tls,
        connect,
    ))
}

/// A pool that keeps up to [`POOL_MAX_IDLE_PER_HOST`] idle connections, each for `idle`.
fn builder(idle: Duration) -> hyper_util::client::legacy::Builder {
    let mut builder = Client::builder(TokioExecutor::new());
    builder
        .pool_idle_timeout(idle)
        .pool_max_idle_per_host(POOL_MAX_IDLE_PER_HOST)
        .pool_timer(TokioTimer::new());
    builder
}

/// TCP without Nagle, then TLS when the URI is `https`; the configuration's ALPN (`http/1.1`) is
/// offered as it is.
fn connector<R>(mut tcp: HttpConnector<R>, tls: ClientConfig, timeout: Duration) -> Connector<R> {
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    Connector {
        inner: HttpsConnector::from((tcp, tls)),
        timeout,
    }
}

/// `https` upstreams without a `tls` table: the system's trust store, TLS 1.3 and 1.2, ALPN
/// `http/1.1` (as with a private CA).
pub fn system_trust() -> anyhow::Result<ClientConfig> {
    let mut config = ClientConfig::builder_with_provider(crate::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_platform_verifier()?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A configuration that trusts nothing, for `http` base URLs.
pub fn no_trust() -> anyhow::Result<ClientConfig> {
    Ok(ClientConfig::builder_with_provider(crate::tls::provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth())
}

/// TCP and TLS under one deadline, as the model's `connect_timeout_ms` promises.
#[derive(Clone)]
pub struct Connector<R = GaiResolver> {
    inner: HttpsConnector<HttpConnector<R>>,
    timeout: Duration,
}

/// The connection is not made within the connect timeout (the innermost cause `classify` finds).
#[derive(Debug, thiserror::Error)]
#[error("no connection within {0:?}")]
pub struct ConnectTimedOut(Duration);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<R> Service<Uri> for Connector<R>
where
    R: Service<Name> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = SocketAddr>,
    R::Error: Into<BoxError>,
    R::Future: Send,
{
    type Response = MaybeHttpsStream<TokioIo<tokio::net::TcpStream>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connect = self.inner.call(uri);
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, connect).await {
                Ok(r) => r,
                Err(_) => Err(ConnectTimedOut(timeout).into()),
            }
        })
    }
}

//! The outbound clients' resolver: system resolution with every address checked by the SSRF
//! guard, and how a caller recognises, in a request error, that the guard refused it.

use std::net::SocketAddr;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use hyper_util::client::legacy::connect::dns::Name;

use super::{Refused, check_ip, check_name};

/// An outbound client's resolver: system resolution, then every address checked; a name that
/// resolves only to refused addresses fails the connection with [`Refused`]. It serves reqwest's
/// clients (`reqwest::ClientBuilder::dns_resolver`: webhooks) and hyper's
/// (`HttpConnector::new_with_resolver`: MCP upstreams).
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_loopback: bool,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl GuardedResolver {
    /// The addresses of `host` the guard allows.
    async fn allowed(self, host: String) -> Result<Vec<SocketAddr>, BoxError> {
        check_name(&host)?;
        let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
        let mut refused = None;
        let allowed: Vec<SocketAddr> = found
            .into_iter()
            .filter(|a| match check_ip(a.ip(), self.allow_loopback) {
                Ok(()) => true,
                Err(e) => {
                    refused = Some(e);
                    false
                }
            })
            .collect();
        if allowed.is_empty() {
            return Err(match refused {
                Some(e) => Box::new(e),
                None => format!("{host} did not resolve").into(),
            });
        }
        Ok(allowed)
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let found = self.allowed(name.as_str().to_string());
        Box::pin(async move {
            let addrs: reqwest::dns::Addrs = Box::new(found.await?.into_iter());
            Ok(addrs)
        })
    }
}

impl tower::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let found = self.allowed(name.as_str().to_string());
        Box::pin(async move { Ok(found.await?.into_iter()) })
    }
}

/// Whether a request error came from the guard (the destination is refused, not down).
pub fn refused_in(e: &(dyn std::error::Error + 'static)) -> Option<Refused> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(r) = err.downcast_ref::<Refused>() {
            return Some(r.clone());
        }
        cur = err.source();
    }
    None
}

//! The outbound client's resolver: system resolution with every address checked by the SSRF
//! guard, and how a caller recognises, in a request error, that the guard refused it.

use std::net::SocketAddr;

use super::{Refused, check_ip, check_name};

/// An outbound client's resolver (`reqwest::ClientBuilder::dns_resolver`): system resolution,
/// then every address checked; a name that resolves only to refused addresses fails the
/// connection with [`Refused`].
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_loopback: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_loopback = self.allow_loopback;
        let host = name.as_str().to_string();
        Box::pin(async move {
            check_name(&host)?;
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match check_ip(a.ip(), allow_loopback) {
                    Ok(()) => true,
                    Err(e) => {
                        refused = Some(e);
                        false
                    }
                })
                .collect();
            if allowed.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> = match refused {
                    Some(e) => Box::new(e),
                    None => format!("{host} did not resolve").into(),
                };
                return Err(e);
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
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

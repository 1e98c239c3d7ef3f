//! Where deliveries may go: the SSRF guard. A destination is `http`/`https` without credentials
//! in the URL; every address it resolves to is checked at connection time (the resolver below is
//! the client's, so a name that later resolves elsewhere is checked again, and redirects are not
//! followed). Refused always: link-local (169.254.0.0/16 with the cloud metadata address,
//! fe80::/10), cloud metadata addresses and names, unspecified, multicast, broadcast. Loopback only
//! when `[webhooks] allow_loopback` is set. Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7)
//! are allowed: on a customer's own infrastructure, that is where receivers live
//! (`docs/DECISIONS.md`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

/// Longest destination URL accepted.
pub const MAX_URL_LEN: usize = 2_048;

/// Names of cloud metadata services, refused whatever they resolve to.
const METADATA_NAMES: &[&str] = &["metadata.google.internal", "metadata", "instance-data"];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the URL is not valid: {0}")]
    Invalid(String),
    #[error("the URL must use http or https")]
    Scheme,
    #[error("the URL must not contain credentials")]
    Credentials,
    #[error("the destination {0} is a link-local, metadata or otherwise unroutable address")]
    Forbidden(String),
    #[error(
        "the destination {0} is a loopback address (allowed only with [webhooks] allow_loopback = true)"
    )]
    Loopback(String),
}

/// Checks a destination URL as given (the address checks run again at each connection).
pub fn check_url(raw: &str, allow_loopback: bool) -> Result<Url, Refused> {
    if raw.len() > MAX_URL_LEN {
        return Err(Refused::Invalid(format!(
            "longer than {MAX_URL_LEN} characters"
        )));
    }
    let url = Url::parse(raw).map_err(|e| Refused::Invalid(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused::Scheme);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::Credentials);
    }
    match url.host() {
        None => return Err(Refused::Invalid("no host".into())),
        Some(Host::Ipv4(ip)) => check_ip(IpAddr::V4(ip), allow_loopback)?,
        Some(Host::Ipv6(ip)) => check_ip(IpAddr::V6(ip), allow_loopback)?,
        Some(Host::Domain(name)) => check_name(name)?,
    }
    Ok(url)
}

fn check_name(name: &str) -> Result<(), Refused> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if METADATA_NAMES.contains(&name.as_str()) {
        return Err(Refused::Forbidden(name));
    }
    Ok(())
}

/// Whether a delivery may connect to `ip`.
pub fn check_ip(ip: IpAddr, allow_loopback: bool) -> Result<(), Refused> {
    let ip = match ip {
        // IPv4-mapped and -compatible IPv6 addresses are the IPv4 address they carry.
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    if ip.is_loopback() {
        return if allow_loopback {
            Ok(())
        } else {
            Err(Refused::Loopback(ip.to_string()))
        };
    }
    let forbidden = match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    };
    if forbidden {
        Err(Refused::Forbidden(ip.to_string()))
    } else {
        Ok(())
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_unspecified()
        || ip.is_link_local() // 169.254.0.0/16, with 169.254.169.254 (AWS, GCP, Azure, …)
        || ip.is_multicast()
        || ip.is_broadcast()
        || o[0] == 0 // "this network"
        || ip == Ipv4Addr::new(100, 100, 100, 200) // Alibaba Cloud metadata
        || o[0] >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    ip.is_unspecified()
        || ip.is_multicast()
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) // AWS metadata over IPv6
}

/// The delivery client's resolver: system resolution, then every address checked; a name that
/// resolves only to refused addresses fails the connection with [`Refused`].
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_link_local_and_loopback_are_refused() {
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fe80::1]/",
            "http://[fd00:ec2::254]/",
            "http://100.100.100.200/",
            "http://0.0.0.0:8080/",
            "http://[::ffff:169.254.169.254]/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://224.0.0.1/",
        ] {
            assert!(
                matches!(check_url(url, true), Err(Refused::Forbidden(_))),
                "{url}"
            );
        }
        assert!(matches!(
            check_url("http://127.0.0.1:9/x", false),
            Err(Refused::Loopback(_))
        ));
        assert!(matches!(
            check_url("http://[::1]:9/x", false),
            Err(Refused::Loopback(_))
        ));
        assert!(check_url("http://127.0.0.1:9/x", true).is_ok());
    }

    #[test]
    fn ordinary_and_private_destinations_are_allowed() {
        for url in [
            "https://hooks.example.com/x",
            "http://10.0.0.5:8080/hook",
            "http://192.168.1.10/",
        ] {
            assert!(check_url(url, false).is_ok(), "{url}");
        }
        assert_eq!(check_url("ftp://example.com/", false), Err(Refused::Scheme));
        assert_eq!(
            check_url("https://u:p@example.com/", false),
            Err(Refused::Credentials)
        );
        assert!(matches!(
            check_url("not a url", false),
            Err(Refused::Invalid(_))
        ));
    }
}

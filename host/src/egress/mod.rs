//! Egress: where the gateway's own outbound calls may go — the SSRF guard, for webhook
//! deliveries today and for any other caller that connects to an address a user gave (an MCP
//! client, a fetched URL). A destination is `http`/`https` without credentials in the URL; every
//! address it resolves to is checked at connection time (`resolver::GuardedResolver` is the
//! client's resolver, so a name that later resolves elsewhere is checked again; the caller's client
//! follows no redirects). Refused always: link-local (169.254.0.0/16 with the cloud metadata
//! address, fe80::/10), cloud metadata addresses and names, unspecified, multicast, broadcast —
//! also when an IPv6 address carries the IPv4 one (mapped, compatible, NAT64, 6to4). Loopback only
//! when the caller allows it (`[webhooks] allow_loopback`). Private ranges (10/8, 172.16/12,
//! 192.168/16, fc00::/7) are allowed: on a customer's own infrastructure, that is where receivers
//! live (`docs/DECISIONS.md`). Knows no other module of the gateway.

mod resolver;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

pub use resolver::{GuardedResolver, refused_in};

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

/// Whether a host name may be connected to at all (metadata names are refused by name).
fn check_name(name: &str) -> Result<(), Refused> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if METADATA_NAMES.contains(&name.as_str()) {
        return Err(Refused::Forbidden(name));
    }
    Ok(())
}

/// Whether an outbound call may connect to `ip`.
pub fn check_ip(ip: IpAddr, allow_loopback: bool) -> Result<(), Refused> {
    let ip = match ip {
        // An IPv6 address that carries an IPv4 one reaches it: it is that address.
        IpAddr::V6(v6) => embedded_v4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
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

/// The IPv4 address an IPv6 address stands for, where the IPv6 form is a way to reach it:
/// IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated but routed by some
/// stacks), NAT64 (`64:ff9b::a.b.c.d`, RFC 6052, and the local-use `64:ff9b:1::/48` of RFC 8215
/// in its /96 form), 6to4 (`2002:AABB:CCDD::/16`, RFC 3056). `::` and `::1` are themselves.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let compatible = s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1);
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || s[..3] == [0x64, 0xff9b, 1];
    if compatible || nat64 {
        return Some(low);
    }
    if s[0] == 0x2002 {
        let [a, b] = s[1].to_be_bytes();
        let [c, d] = s[2].to_be_bytes();
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    None
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
            // The metadata address and other refused IPv4 ranges inside IPv6 (issue 49).
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[64:ff9b::169.254.169.254]/",
            "http://[::a9fe:a9fe]/",
            "http://[::169.254.169.254]/",
            "http://[64:ff9b:1::a9fe:a9fe]/",
            "http://[2002:a9fe:a9fe::1]/",
            "http://[::ffff:100.100.100.200]/",
            "http://[64:ff9b::e000:1]/",
            "http://[::ffff:0.0.0.0]/",
            "http://[64:ff9b::ffff:ffff]/",
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
        // Loopback inside IPv6 is loopback.
        for url in [
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[2002:7f00:1::]/",
        ] {
            assert!(
                matches!(check_url(url, false), Err(Refused::Loopback(_))),
                "{url}"
            );
        }
    }

    #[test]
    fn ordinary_addresses_inside_ipv6_are_allowed() {
        for url in [
            "http://[64:ff9b::a00:5]/", // NAT64 of 10.0.0.5
            "http://[::ffff:93.184.216.34]/",
            "http://[2002:5db8:d822::1]/",
            "http://[2001:db8::a9fe:a9fe]/", // a documentation prefix, not an embedding
            "http://[fd12:3456::1]/",
        ] {
            assert!(check_url(url, false).is_ok(), "{url}");
        }
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

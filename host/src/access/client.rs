//! The client's address: the socket peer, unless the peer is a reverse proxy the operator
//! trusts, in which case the right-most `X-Forwarded-For` address that is not itself a trusted
//! proxy (the left-most entries are whatever the client wrote, so they are never believed).

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;
use ipnet::IpNet;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let peer = canonical(peer.ip());
    if !is_trusted(peer, trusted) {
        return peer;
    }
    let mut client = peer;
    for value in headers.get_all(X_FORWARDED_FOR).iter().rev() {
        let Ok(value) = value.to_str() else {
            return client;
        };
        for hop in value.rsplit(',') {
            let Ok(ip) = hop.trim().parse::<IpAddr>() else {
                return client;
            };
            client = canonical(ip);
            if !is_trusted(client, trusted) {
                return client;
            }
        }
    }
    client
}

/// Whether `ip` is inside one of `nets` (an empty allow-list allows every address).
pub fn allowed(ip: IpAddr, nets: &[IpNet]) -> bool {
    nets.is_empty() || nets.iter().any(|n| n.contains(&ip))
}

fn is_trusted(ip: IpAddr, trusted: &[IpNet]) -> bool {
    trusted.iter().any(|n| n.contains(&ip))
}

/// IPv4-mapped IPv6 (`::ffff:192.0.2.1`, what a dual-stack socket reports) as plain IPv4, so
/// IPv4 allow-lists match it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nets(v: &[&str]) -> Vec<IpNet> {
        v.iter().map(|s| s.parse().unwrap()).collect()
    }

    fn xff(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(X_FORWARDED_FOR, v.parse().unwrap());
        h
    }

    #[test]
    fn untrusted_peers_are_the_client_whatever_they_claim() {
        let peer: SocketAddr = "203.0.113.9:5000".parse().unwrap();
        let ip = client_ip(peer, &xff("10.1.1.1"), &nets(&["10.0.0.0/8"]));
        assert_eq!(ip, "203.0.113.9".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn trusted_proxies_are_skipped_right_to_left() {
        let peer: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        let trusted = nets(&["10.0.0.0/8"]);
        // Client-written spoof on the left, real client, then a second trusted proxy.
        let h = xff("1.2.3.4, 198.51.100.7, 10.0.0.3");
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        // Garbage stops the walk at the last good address.
        assert_eq!(
            client_ip(peer, &xff("nonsense"), &trusted),
            "10.0.0.2".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn allow_lists_match_v4_v6_and_mapped_addresses() {
        let list = nets(&["192.0.2.0/24", "2001:db8::/32"]);
        assert!(allowed("192.0.2.200".parse().unwrap(), &list));
        assert!(allowed("2001:db8::5".parse().unwrap(), &list));
        assert!(!allowed("198.51.100.1".parse().unwrap(), &list));
        assert!(allowed("198.51.100.1".parse().unwrap(), &[]));
        let mapped: SocketAddr = "[::ffff:192.0.2.1]:1".parse().unwrap();
        assert!(allowed(client_ip(mapped, &HeaderMap::new(), &[]), &list));
    }
}

//! `[access]` and `[plans.*]`: who may call from where (trusted proxies, the per-address rate,
//! the rotation grace) and each plan's default rate and tokens per day.

use std::time::Duration;

use serde::Deserialize;

use crate::domain::Plan;

/// `[access]`: who may call from where, and how often.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawAccess {
    /// CIDRs of reverse proxies whose `X-Forwarded-For` is believed; empty: the client address
    /// is always the socket peer.
    trusted_proxies: Vec<String>,
    /// Per client address, before authentication; 0 turns the per-address limit off.
    ip_requests_per_minute: u32,
    ip_burst: u32,
    /// How long a rotated key keeps working unless the rotate call says otherwise.
    rotation_grace_seconds: u64,
}

impl Default for RawAccess {
    fn default() -> Self {
        RawAccess {
            trusted_proxies: Vec::new(),
            ip_requests_per_minute: 60_000,
            ip_burst: 5_000,
            rotation_grace_seconds: 3_600,
        }
    }
}

/// `[plans.<name>]`: a plan's defaults; 0 means unlimited.
#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    requests_per_minute: u32,
    burst: u32,
    tokens_per_day: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawPlans {
    development: RawPlan,
    professional: RawPlan,
    enterprise: RawPlan,
}

impl Default for RawPlans {
    fn default() -> Self {
        RawPlans {
            development: RawPlan {
                requests_per_minute: 60,
                burst: 20,
                tokens_per_day: 200_000,
            },
            professional: RawPlan {
                requests_per_minute: 600,
                burst: 100,
                tokens_per_day: 5_000_000,
            },
            enterprise: RawPlan {
                requests_per_minute: 6_000,
                burst: 1_000,
                tokens_per_day: 0,
            },
        }
    }
}

/// Who may call from where, and how often (`[access]`).
#[derive(Debug, Clone)]
pub struct AccessConfig {
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Per client address; `None` when off.
    pub ip_limit: Option<RateLimit>,
    pub rotation_grace: Duration,
}

/// A request rate: `per_minute` sustained, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_minute: std::num::NonZeroU32,
    pub burst: std::num::NonZeroU32,
}

/// A plan's defaults for its teams and their keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// Per key; `None`: unlimited.
    pub rate: Option<RateLimit>,
    /// Per key and per team, unless they set their own; `None`: unlimited.
    pub tokens_per_day: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
pub struct Plans {
    pub development: PlanLimits,
    pub professional: PlanLimits,
    pub enterprise: PlanLimits,
}

impl Plans {
    pub fn get(&self, plan: Plan) -> PlanLimits {
        match plan {
            Plan::Development => self.development,
            Plan::Professional => self.professional,
            Plan::Enterprise => self.enterprise,
        }
    }
}

pub(in crate::config) fn validate(
    a: &RawAccess,
    err: &mut impl FnMut(String, &str),
) -> AccessConfig {
    let mut trusted_proxies = Vec::new();
    for (i, c) in a.trusted_proxies.iter().enumerate() {
        match parse_cidr(c) {
            Some(net) => trusted_proxies.push(net),
            None => err(
                format!("access.trusted_proxies[{i}]"),
                "must be an IPv4/IPv6 address or CIDR such as 10.0.0.0/8",
            ),
        }
    }
    AccessConfig {
        trusted_proxies,
        ip_limit: rate_limit(a.ip_requests_per_minute, a.ip_burst),
        rotation_grace: Duration::from_secs(a.rotation_grace_seconds),
    }
}

/// `[plans]` has nothing to report: 0 means unlimited.
pub(in crate::config) fn plans(raw: RawPlans) -> Plans {
    let plan = |p: RawPlan| PlanLimits {
        rate: rate_limit(p.requests_per_minute, p.burst),
        tokens_per_day: (p.tokens_per_day > 0).then_some(p.tokens_per_day),
    };
    Plans {
        development: plan(raw.development),
        professional: plan(raw.professional),
        enterprise: plan(raw.enterprise),
    }
}

/// `requests_per_minute`, `burst` as written; 0 for either means no limit.
fn rate_limit(per_minute: u32, burst: u32) -> Option<RateLimit> {
    Some(RateLimit {
        per_minute: std::num::NonZeroU32::new(per_minute)?,
        burst: std::num::NonZeroU32::new(burst)?,
    })
}

/// A CIDR, or a bare address meaning just that address.
pub fn parse_cidr(s: &str) -> Option<ipnet::IpNet> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .ok()
        .or_else(|| s.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
}

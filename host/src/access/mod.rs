//! Access: who is calling (API keys, cached in front of the store), from where (the client
//! address, allow-lists) and how often (request rates, tokens per day). The HTTP middleware asks,
//! in order: [`Access::check_address`] (before authentication), [`Access::authenticate`] (401),
//! then [`Access::admit`] (403 for the address, 429 for the rate, 429 for tokens per day).
//! Roles are checked per route group (`http`). Limits and their defaults: docs/LIMITS.md.

pub mod bootstrap;
mod certs;
mod client;
mod keys;
pub mod limits;
pub mod quota;

use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;

pub use client::{allowed as address_allowed, client_ip};
pub use keys::{CachedKey, KeyCache};
pub use limits::{LimitClock, RateStatus};
pub use quota::{QuotaExceeded, TokenQuota};

use crate::auth::{AuthError, hash_secret, secret_from_headers};
use crate::config::{AccessConfig, OnFailure, Plans, RateLimit};
use crate::domain::Role;
use crate::metrics::Metrics;
use crate::shared::{Change, Notice, Shared};
use crate::store::{CertIdentity, Clock, KeyInfo, KeyState, Plan, Store, Team, UnixMillis};
use crate::tls::PeerCert;

/// How a caller proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A bearer API key (`key_id` is the key's).
    Key,
    /// A verified client certificate mapped to a certificate identity (`key_id` is the
    /// identity's `cid_…`).
    Certificate,
}

impl Credential {
    /// The journal's `auth` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Credential::Key => "key",
            Credential::Certificate => "mtls",
        }
    }
}

/// Who is calling: resolved once per request, shared by every phase after authentication.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The store's key id (`key_…`), or the certificate identity's (`cid_…`): safe to log, list
    /// and journal; usage, limits and budgets are kept under it.
    pub key_id: String,
    pub credential: Credential,
    pub key_name: String,
    pub team_id: String,
    pub role: Role,
    pub plan: Plan,
    pub expires_at: Option<UnixMillis>,
    /// Set when the key was rotated: it stops then.
    pub grace_until: Option<UnixMillis>,
    pub allowlist: Vec<IpNet>,
    /// The key's request rate (its own, or its plan's); `None`: unlimited.
    pub rate: Option<RateLimit>,
    pub key_tokens_per_day: Option<u64>,
    pub team_tokens_per_day: Option<u64>,
    /// Regions the team may use; empty: all.
    pub allowed_regions: Vec<String>,
    /// Every request of the team is sensitive (local models only).
    pub sensitive_only: bool,
    /// Model ids the team may use; empty: all.
    pub allowed_models: Vec<String>,
}

impl Principal {
    /// Resolves a key and its team against the plans' defaults.
    pub fn resolve(key: &KeyInfo, team: &Team, plans: &Plans) -> Result<Principal, String> {
        let plan = plans.get(team.plan);
        let allowlist = key
            .ip_allowlist
            .iter()
            .map(|c| {
                crate::config::parse_cidr(c)
                    .ok_or_else(|| format!("key {}: bad CIDR {c:?}", key.id))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let rate = match key.rpm.and_then(std::num::NonZeroU32::new) {
            // A key's own rate keeps its plan's burst, but never more than a minute's worth.
            Some(per_minute) => Some(RateLimit {
                per_minute,
                burst: plan.rate.map_or(per_minute, |r| r.burst.min(per_minute)),
            }),
            None => plan.rate,
        };
        Ok(Principal {
            key_id: key.id.0.clone(),
            credential: Credential::Key,
            key_name: key.name.clone().unwrap_or_default(),
            team_id: team.id.0.clone(),
            role: key.role,
            plan: team.plan,
            expires_at: key.expires_at,
            grace_until: key.grace_until,
            allowlist,
            rate,
            key_tokens_per_day: key.tpd.or(plan.tokens_per_day),
            team_tokens_per_day: team.token_cap_per_day.or(plan.tokens_per_day),
            allowed_regions: team.allowed_regions.clone(),
            sensitive_only: team.sensitive_only,
            allowed_models: team.allowed_models.clone(),
        })
    }

    /// A certificate identity and its team, with the plan's limits (an identity has no limits of
    /// its own; its team's caps and budgets apply as for a key).
    pub fn for_certificate(identity: &CertIdentity, team: &Team, plans: &Plans) -> Principal {
        let plan = plans.get(team.plan);
        Principal {
            key_id: identity.id.clone(),
            credential: Credential::Certificate,
            key_name: identity.name.clone(),
            team_id: team.id.0.clone(),
            role: identity.role,
            plan: team.plan,
            expires_at: None,
            grace_until: None,
            allowlist: Vec::new(),
            rate: plan.rate,
            key_tokens_per_day: plan.tokens_per_day,
            team_tokens_per_day: team.token_cap_per_day.or(plan.tokens_per_day),
            allowed_regions: team.allowed_regions.clone(),
            sensitive_only: team.sensitive_only,
            allowed_models: team.allowed_models.clone(),
        }
    }

    /// Whether the key still authenticates at `now` (expiry and rotation grace).
    pub fn usable_at(&self, now: UnixMillis) -> bool {
        self.expires_at.is_none_or(|t| now < t) && self.grace_until.is_none_or(|t| now < t)
    }

    pub fn may(&self, roles: &[Role]) -> bool {
        self.role == Role::Admin || roles.contains(&self.role)
    }

    /// A principal with `role` and nothing else: no limits, no grants, no expiry (the uploader a
    /// queued document's worker acts for, and tests).
    pub fn bare(key: &str, team: &str, role: Role) -> Principal {
        Principal {
            key_id: key.into(),
            credential: Credential::Key,
            key_name: key.into(),
            team_id: team.into(),
            role,
            plan: Plan::Development,
            expires_at: None,
            grace_until: None,
            allowlist: Vec::new(),
            rate: None,
            key_tokens_per_day: None,
            team_tokens_per_day: None,
            allowed_regions: Vec::new(),
            sensitive_only: false,
            allowed_models: Vec::new(),
        }
    }
}

/// A shared GCRA decision in the terms of the `X-RateLimit-*` headers.
fn rate_status(rate: RateLimit, d: crate::shared::Decision) -> RateStatus {
    RateStatus {
        limit: rate.per_minute.get(),
        remaining: d.remaining,
        reset_after: d.reset_after,
        retry_after: d.retry_after,
    }
}

/// Why an authenticated request is not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 403: the client address is not in the key's allow-list.
    Address(IpAddr),
    /// 429: the key's request rate.
    Rate(RateStatus),
    /// 429: tokens per day.
    Tokens(QuotaExceeded),
    /// 503: the shared limits (Redis) did not answer and `[shared] on_failure = "closed"`.
    Unavailable(String),
}

impl Refusal {
    /// The limit a refusal is for, as `/metrics` names it (`None`: not a limit).
    pub fn limit(&self) -> Option<&'static str> {
        match self {
            Refusal::Rate(_) => Some("rpm"),
            Refusal::Tokens(_) => Some("tokens_per_day"),
            Refusal::Address(_) | Refusal::Unavailable(_) => None,
        }
    }
}

pub struct Access {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    limit_clock: LimitClock,
    cache: KeyCache,
    certs: certs::CertTable,
    addresses: Option<limits::AddressLimits>,
    pub quota: Arc<TokenQuota>,
    config: AccessConfig,
    plans: Plans,
    /// Request rates and changes shared with other replicas (`[shared]`).
    shared: Shared,
    metrics: Arc<Metrics>,
}

/// What the rest of `Access` needs besides the store: the shared back end, the counters, and
/// how long a cached key is trusted without news (`None`: until invalidated, one process).
pub struct AccessParts {
    pub shared: Shared,
    pub metrics: Arc<Metrics>,
    pub key_cache_ttl: Option<std::time::Duration>,
}

impl Access {
    pub async fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        limit_clock: LimitClock,
        config: AccessConfig,
        plans: Plans,
        parts: AccessParts,
    ) -> anyhow::Result<Access> {
        let quota = TokenQuota::load(store.as_ref(), clock.now_ms())
            .await?
            .share(&parts.shared)
            .await?;
        let certs = certs::CertTable::default();
        let _ = certs.replace(store.cert_identities().await?);
        let addresses = config
            .ip_limit
            .map(|rate| limits::AddressLimits::new(rate, limit_clock.clone()));
        Ok(Access {
            store,
            clock,
            limit_clock,
            cache: KeyCache::with_ttl(parts.key_cache_ttl),
            certs,
            addresses,
            quota: Arc::new(quota),
            config,
            plans,
            shared: parts.shared,
            metrics: parts.metrics,
        })
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn now_ms(&self) -> UnixMillis {
        self.clock.now_ms()
    }

    pub fn config(&self) -> &AccessConfig {
        &self.config
    }

    pub fn client_ip(&self, peer: std::net::SocketAddr, headers: &http::HeaderMap) -> IpAddr {
        client_ip(peer, headers, &self.config.trusted_proxies)
    }

    /// The per-address limit, before authentication; `None` when it is off. With Redis the
    /// bucket is every replica's; `Err` when Redis failed and the gateway fails closed.
    pub async fn check_address(&self, ip: IpAddr) -> Result<Option<RateStatus>, Refusal> {
        let Some(a) = &self.addresses else {
            return Ok(None);
        };
        let rate = a.rate();
        self.shared_rate(&format!("ip:{ip}"), rate, || a.check(ip))
            .await
            .map(Some)
    }

    /// One decision of a request-rate limit: Redis's when shared (every replica draws on one
    /// bucket), else (or when Redis fails open) this process's `local` limiter.
    async fn shared_rate(
        &self,
        scope: &str,
        rate: RateLimit,
        local: impl FnOnce() -> RateStatus,
    ) -> Result<RateStatus, Refusal> {
        let Shared::Redis(redis) = &self.shared else {
            return Ok(local());
        };
        match redis
            .gcra(scope, rate.per_minute.get(), rate.burst.get())
            .await
        {
            Ok(d) => Ok(rate_status(rate, d)),
            Err(e) => {
                Metrics::inc(&self.metrics.shared_failures_total);
                match self.shared.on_failure() {
                    OnFailure::Open => {
                        Metrics::inc(&self.metrics.shared_fail_open_total);
                        tracing::warn!(error = %e, "shared limits unavailable: this replica's own limits apply");
                        Ok(local())
                    }
                    OnFailure::Closed => {
                        tracing::warn!(error = %e, "shared limits unavailable: refusing (on_failure = closed)");
                        Err(Refusal::Unavailable(e.to_string()))
                    }
                }
            }
        }
    }

    /// Who is calling: the verified client certificate's identity, or the bearer key, or both
    /// (then they must name the same team, and the key is the caller). A certificate that maps
    /// to no identity is refused even with a key: the operator asked for certificates to mean
    /// something. Beside a mapped certificate, a bearer value that is not a gateway key
    /// (`sk-sov-…`) is a placeholder and ignored: the SDKs insist on some `api_key`.
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
        peer: Option<&PeerCert>,
    ) -> Result<Arc<CachedKey>, AuthError> {
        let Some(peer) = peer else {
            return self.authenticate_key(headers).await;
        };
        let sends_key = match secret_from_headers(headers) {
            Err(AuthError::Repeated) => return Err(AuthError::Repeated),
            secret => secret.is_ok_and(crate::auth::is_gateway_key),
        };
        let identity = self
            .certs
            .find(peer)
            .ok_or_else(|| AuthError::CertificateUnmapped(peer.subject.clone()))?;
        if sends_key {
            let key = self.authenticate_key(headers).await?;
            if key.principal.team_id != identity.team_id.0 {
                return Err(AuthError::TeamMismatch {
                    certificate: identity.team_id.0.clone(),
                    key: key.principal.team_id.clone(),
                });
            }
            return Ok(key);
        }
        self.authenticate_certificate(&identity).await
    }

    async fn authenticate_certificate(
        &self,
        identity: &CertIdentity,
    ) -> Result<Arc<CachedKey>, AuthError> {
        let hash = hash_secret(&format!("cert-identity:{}", identity.id));
        if let Some(hit) = self.cache.get(&hash) {
            return Ok(hit);
        }
        let generation = self.cache.generation();
        let team = self
            .store
            .team(identity.team_id.clone())
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?
            .ok_or_else(|| AuthError::CertificateUnmapped(identity.name.clone()))?;
        let principal = Principal::for_certificate(identity, &team, &self.plans);
        Ok(self.cache.fill(generation, hash, self.entry(principal)))
    }

    /// The key in the `Authorization` or `x-api-key` header: from the cache, else the store (then cached).
    async fn authenticate_key(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<Arc<CachedKey>, AuthError> {
        let secret = secret_from_headers(headers)?;
        let hash = hash_secret(secret);
        let now = self.clock.now_ms();
        if let Some(hit) = self.cache.get(&hash) {
            if !hit.principal.usable_at(now) {
                return Err(AuthError::Expired);
            }
            self.touch(&hit, now);
            return Ok(hit);
        }
        let generation = self.cache.generation();
        let key = self
            .store
            .key_by_hash(hash)
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?
            .ok_or(AuthError::Invalid)?;
        match key.state {
            KeyState::Active | KeyState::Rotating { .. } => {}
            KeyState::Expired => return Err(AuthError::Expired),
            KeyState::Revoked => return Err(AuthError::Revoked),
        }
        let team = self
            .store
            .team(key.team_id.clone())
            .await
            .map_err(|e| AuthError::Unavailable(e.to_string()))?
            .ok_or(AuthError::Invalid)?;
        let principal =
            Principal::resolve(&key, &team, &self.plans).map_err(AuthError::Unavailable)?;
        let entry = self.cache.fill(generation, hash, self.entry(principal));
        self.touch(&entry, now);
        Ok(entry)
    }

    /// A cache entry for a resolved principal, with its own request-rate limiter.
    fn entry(&self, principal: Principal) -> Arc<CachedKey> {
        let limiter = principal
            .rate
            .map(|r| limits::key_limiter(r, &self.limit_clock));
        Arc::new(CachedKey {
            principal: Arc::new(principal),
            limiter,
            last_touch: Default::default(),
            filled: std::time::Instant::now(),
        })
    }

    /// Records `last_used_at` in the store, off the request path, at most once a minute per key.
    fn touch(&self, key: &CachedKey, now: UnixMillis) {
        if key.touch_due(now) {
            let store = self.store.clone();
            let id = crate::store::KeyId(key.principal.key_id.clone());
            tokio::spawn(async move {
                if let Err(e) = store.touch_key(id, now).await {
                    tracing::debug!(error = %e, "recording a key's last use failed");
                }
            });
        }
    }

    /// Address allow-list, the key's request rate, tokens per day. The rate's status is returned
    /// for the response headers whether or not the request is admitted.
    pub async fn admit(
        &self,
        key: &CachedKey,
        ip: IpAddr,
    ) -> (Option<RateStatus>, Result<(), Refusal>) {
        let p = &key.principal;
        if !address_allowed(ip, &p.allowlist) {
            return (None, Err(Refusal::Address(ip)));
        }
        let now = self.clock.now_ms();
        let (key_cap, team_cap) = (p.key_tokens_per_day, p.team_tokens_per_day);
        let limited = match (&key.limiter, p.rate) {
            (Some(l), Some(r)) => Some((l, r)),
            _ => None,
        };
        let caps = key_cap.is_some() || team_cap.is_some();
        // Replicas: the rate decision and the day's token counts, in one round trip.
        let shared = match &self.shared {
            Shared::Redis(redis) if limited.is_some() || caps => {
                let rate = limited.map(|(_, r)| {
                    (
                        format!("key:{}", p.key_id),
                        r.per_minute.get(),
                        r.burst.get(),
                    )
                });
                let scopes = [format!("key:{}", p.key_id), format!("team:{}", p.team_id)];
                let tokens = caps.then(|| (scopes, quota::day_of(now)));
                match redis.admit(rate, tokens).await {
                    Ok(answer) => Some(answer),
                    Err(e) => {
                        Metrics::inc(&self.metrics.shared_failures_total);
                        if self.shared.on_failure() == OnFailure::Closed {
                            tracing::warn!(error = %e, "shared limits unavailable: refusing (on_failure = closed)");
                            return (None, Err(Refusal::Unavailable(e.to_string())));
                        }
                        Metrics::inc(&self.metrics.shared_fail_open_total);
                        tracing::warn!(error = %e, "shared limits unavailable: this replica's own limits apply");
                        None
                    }
                }
            }
            _ => None,
        };
        let (rate, used) = match shared {
            Some((decision, used)) => (
                limited.zip(decision).map(|((_, r), d)| rate_status(r, d)),
                used,
            ),
            None => (
                limited.map(|(l, r)| limits::check_key(l, r, &self.limit_clock)),
                None,
            ),
        };
        if let Some(s) = rate
            && !s.allowed()
        {
            return (rate, Err(Refusal::Rate(s)));
        }
        let tokens = match used {
            Some(used) => self
                .quota
                .check_shared(&p.key_id, key_cap, &p.team_id, team_cap, used, now),
            None => self
                .quota
                .check(&p.key_id, key_cap, &p.team_id, team_cap, now),
        };
        (rate, tokens.map_err(Refusal::Tokens))
    }

    /// After a key changed in the store (revoked, rotated, deleted): when this returns, no
    /// request authenticates with the old state here, and every other replica has been told.
    pub async fn invalidate_key(&self, key_id: &str) {
        self.apply(&Change::Key(key_id.to_owned()));
        self.publish(Change::Key(key_id.to_owned())).await;
    }

    /// After a team changed (plan, caps, regions).
    pub async fn invalidate_team(&self, team_id: &str) {
        self.apply(&Change::Team(team_id.to_owned()));
        self.publish(Change::Team(team_id.to_owned())).await;
    }

    /// After a team was deleted (its keys and certificate identities went with it in the store).
    pub async fn remove_team(&self, team_id: &str) {
        self.certs.remove_team(team_id);
        self.apply(&Change::Team(team_id.to_owned()));
        self.publish(Change::Team(team_id.to_owned())).await;
        self.publish(Change::CertIdentities).await;
    }

    /// After a certificate identity was stored: it authenticates from now on, on every replica.
    pub async fn add_cert_identity(&self, identity: CertIdentity) {
        self.certs.insert(identity);
        self.publish(Change::CertIdentities).await;
    }

    /// After a certificate identity was deleted from the store: when this returns, no request
    /// authenticates with it here, and every other replica has been told.
    pub async fn remove_cert_identity(&self, id: &str) {
        self.certs.remove(id);
        self.cache.invalidate(|p| p.key_id == id);
        self.publish(Change::CertIdentities).await;
    }

    /// Another replica's change (or a gap in hearing them): what this replica holds in memory
    /// is dropped or reloaded from the store.
    pub async fn hear(&self, notice: Notice) {
        Metrics::inc(&self.metrics.shared_changes_received_total);
        match notice {
            Notice::Changed(Change::CertIdentities) => self.reload_cert_identities().await,
            Notice::Changed(change) => self.apply(&change),
            Notice::Resync => {
                self.cache.invalidate(|_| true);
                self.reload_cert_identities().await;
            }
        }
    }

    fn apply(&self, change: &Change) {
        match change {
            Change::Key(id) => self.cache.invalidate(|p| p.key_id == *id),
            Change::Team(id) => self.cache.invalidate(|p| p.team_id == *id),
            Change::CertIdentities
            | Change::Webhooks
            | Change::Document { .. }
            | Change::Policies
            | Change::Guardrail
            | Change::Mcp => {}
        }
    }

    async fn reload_cert_identities(&self) {
        match self.store.cert_identities().await {
            Ok(all) => {
                let gone: Vec<String> = self.certs.replace(all);
                self.cache.invalidate(|p| gone.contains(&p.key_id));
            }
            Err(e) => tracing::warn!(error = %e, "reloading certificate identities failed"),
        }
    }

    async fn publish(&self, change: Change) {
        self.shared.announce(change, &self.metrics).await;
    }

    /// Periodic upkeep: forget addresses whose limit bucket is full again.
    pub fn prune(&self) {
        if let Some(a) = &self.addresses {
            a.prune();
        }
    }
}

//! Keys: what a key is ([`KeyInfo`], its [`KeyState`]), how one is made ([`NewKey`]) and what
//! making one answers ([`CreatedKey`], the only place the secret appears), and how both back ends
//! keep them ([`sql`], implemented once for both by [`impl_key_store!`]).

pub(crate) mod schema;
pub(crate) mod sql;

use std::fmt;

use futures_util::future::BoxFuture;

use super::{KeyId, Micros, StoreResult, TeamId, UnixMillis};
use crate::domain::Role;

/// Keys in the store (part of [`super::Store`]).
pub trait KeyStore: Send + Sync {
    /// Creates a key; the secret is in the answer and nowhere else (the store keeps its hash).
    fn create_key(&self, key: NewKey) -> BoxFuture<'_, StoreResult<CreatedKey>>;
    /// Adds a key known only by its hash (config-file keys, the bootstrap admin key); if a key
    /// with this hash exists already, returns it unchanged.
    fn import_key(
        &self,
        key: NewKey,
        hash: [u8; 32],
        prefix: String,
    ) -> BoxFuture<'_, StoreResult<KeyInfo>>;
    fn key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>>;
    /// The key with this secret hash, in whatever state it is (see [`KeyInfo::state`]).
    fn key_by_hash(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>>;
    /// The key with this secret hash only if it authenticates now (not revoked, not expired,
    /// not past its rotation grace); the check is in the query, against the store's clock.
    fn authenticate(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>>;
    /// Keys without secrets, oldest first; all teams' when `team` is `None`.
    fn keys(&self, team: Option<TeamId>) -> BoxFuture<'_, StoreResult<Vec<KeyInfo>>>;
    /// A new key for the same team and settings; the old one stays valid until now + `grace_ms`
    /// (0: it stops at once) and then never again.
    fn rotate_key(&self, id: KeyId, grace_ms: i64) -> BoxFuture<'_, StoreResult<CreatedKey>>;
    /// Changes the limits `limits` names (requests per minute, tokens per day, the key's own
    /// budget limit; its spend stays).
    fn update_key_limits(
        &self,
        id: KeyId,
        limits: KeyLimits,
    ) -> BoxFuture<'_, StoreResult<KeyInfo>>;
    /// When this returns, [`KeyStore::authenticate`] no longer finds the key. Idempotent.
    fn revoke_key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<KeyInfo>>;
    /// Records that the key was used at `at` (keeps the latest).
    fn touch_key(&self, id: KeyId, at: UnixMillis) -> BoxFuture<'_, StoreResult<()>>;
}

/// [`KeyStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_key_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::keys::{
                CreatedKey, KeyInfo, KeyLimits, KeyStore, NewKey, sql as steps,
            };
            use $crate::store::{KeyId, StoreResult, TeamId, UnixMillis};

            impl KeyStore for $store {
                fn create_key(&self, key: NewKey) -> BoxFuture<'_, StoreResult<CreatedKey>> {
                    $run!(self, |c, now| steps::create(&mut c, now, key))
                }

                fn import_key(
                    &self,
                    key: NewKey,
                    hash: [u8; 32],
                    prefix: String,
                ) -> BoxFuture<'_, StoreResult<KeyInfo>> {
                    $run!(self, |c, now| steps::import(&mut c, now, key, hash, prefix))
                }

                fn key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
                    $run!(self, |c, now| steps::get(&c, now, &id))
                }

                fn key_by_hash(
                    &self,
                    hash: [u8; 32],
                ) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
                    $run!(self, |c, now| steps::by_hash(&c, now, &hash))
                }

                fn authenticate(
                    &self,
                    hash: [u8; 32],
                ) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
                    $run!(self, |c, now| steps::authenticate(&c, now, &hash))
                }

                fn keys(&self, team: Option<TeamId>) -> BoxFuture<'_, StoreResult<Vec<KeyInfo>>> {
                    $run!(self, |c, now| steps::list(&c, now, team.as_ref()))
                }

                fn rotate_key(
                    &self,
                    id: KeyId,
                    grace_ms: i64,
                ) -> BoxFuture<'_, StoreResult<CreatedKey>> {
                    $run!(self, |c, now| steps::rotate(&mut c, now, id, grace_ms))
                }

                fn update_key_limits(
                    &self,
                    id: KeyId,
                    limits: KeyLimits,
                ) -> BoxFuture<'_, StoreResult<KeyInfo>> {
                    $run!(self, |c, now| steps::update_limits(&mut c, now, id, limits))
                }

                fn revoke_key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<KeyInfo>> {
                    $run!(self, |c, now| steps::revoke(&mut c, now, id))
                }

                fn touch_key(&self, id: KeyId, at: UnixMillis) -> BoxFuture<'_, StoreResult<()>> {
                    $run!(self, |c, _| steps::touch(&c, id, at))
                }
            }
        };
    };
}
pub(crate) use impl_key_store;

/// Whether a key authenticates now, and if not, why not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    Active,
    /// Replaced by rotation; still valid until `until` (the grace period).
    Rotating {
        until: UnixMillis,
    },
    /// Past `expires_at`, or past the rotation grace.
    Expired,
    Revoked,
}

impl KeyState {
    pub fn is_usable(self) -> bool {
        matches!(self, KeyState::Active | KeyState::Rotating { .. })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::Active => "active",
            KeyState::Rotating { .. } => "rotating",
            KeyState::Expired => "expired",
            KeyState::Revoked => "revoked",
        }
    }
}

/// A key as listed: everything but the secret and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    pub id: KeyId,
    pub team_id: TeamId,
    pub name: Option<String>,
    /// The secret's first characters (`sk-sov-` + 6 hex), so an owner can tell keys apart.
    pub prefix: String,
    pub role: Role,
    pub created_at: UnixMillis,
    pub last_used_at: Option<UnixMillis>,
    pub expires_at: Option<UnixMillis>,
    pub revoked_at: Option<UnixMillis>,
    /// Set by rotation: the key that replaced this one, and when this one stops.
    pub rotated_to: Option<KeyId>,
    pub grace_until: Option<UnixMillis>,
    /// IPv4/IPv6 CIDRs, as given (checked by the auth layer); empty allows every address.
    pub ip_allowlist: Vec<String>,
    /// Requests per minute; `None` takes the team's plan default.
    pub rpm: Option<u32>,
    /// Tokens per day; `None` takes the team's plan default.
    pub tpd: Option<u64>,
    /// The key's own spending limit; `None` is unlimited (the team's still applies).
    pub budget: Option<Micros>,
    /// Computed against the store's clock when the row was read.
    pub state: KeyState,
}

/// A change to a key's limits: `None` leaves a field as it is; `Some(None)` clears it (the plan's
/// default for `rpm` and `tpd`, no key budget).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyLimits {
    pub rpm: Option<Option<u32>>,
    pub tpd: Option<Option<u64>>,
    pub budget: Option<Option<Micros>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    pub team_id: TeamId,
    pub name: Option<String>,
    pub role: Role,
    pub expires_at: Option<UnixMillis>,
    pub ip_allowlist: Vec<String>,
    pub rpm: Option<u32>,
    pub tpd: Option<u64>,
    pub budget: Option<Micros>,
}

impl NewKey {
    /// A key with no limits of its own, no expiry and no address restriction.
    pub fn new(team_id: TeamId, role: Role) -> NewKey {
        NewKey {
            team_id,
            name: None,
            role,
            expires_at: None,
            ip_allowlist: Vec::new(),
            rpm: None,
            tpd: None,
            budget: None,
        }
    }
}

/// The answer to creating or rotating a key: the only place the secret ever appears.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedKey {
    pub info: KeyInfo,
    pub secret: String,
}

impl fmt::Debug for CreatedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreatedKey")
            .field("info", &self.info)
            .field("secret", &"<redacted>")
            .finish()
    }
}

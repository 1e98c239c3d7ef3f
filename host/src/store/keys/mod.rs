//! Keys: what a key is ([`KeyInfo`], its [`KeyState`]), how one is made ([`NewKey`]) and what
//! making one answers ([`CreatedKey`], the only place the secret appears), and how both back ends
//! keep them ([`sql`]).

pub(crate) mod sql;

use std::fmt;

use super::{KeyId, Micros, TeamId, UnixMillis};
use crate::domain::Role;

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

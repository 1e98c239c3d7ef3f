//! The values the store takes and returns: teams, keys (never their secrets, except once in
//! [`CreatedKey`]), usage records and aggregates, budget scopes, counters and reservations.
//! Money is [`Micros`]: integer millionths of the gateway's configured currency.

use std::fmt;

pub use crate::config::Plan;
use crate::config::Role;

use super::clock::UnixMillis;

/// Money in micro-units of the configured currency (1 USD = 1,000,000 micros): integers, so sums
/// never drift the way floats do. An `i64` holds over nine million million whole units.
pub type Micros = i64;

/// A team's id (`team_` + UUIDv7 hex): newtype so it is not mixed with other strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TeamId(pub String);

/// A key's id (`key_` + UUIDv7 hex): safe to log, list and journal; not the secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub String);

impl fmt::Display for TeamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn role_parse(s: &str) -> Option<Role> {
    match s {
        "admin" => Some(Role::Admin),
        "member" => Some(Role::Member),
        "auditor" => Some(Role::Auditor),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Team {
    pub id: TeamId,
    pub name: String,
    pub plan: Plan,
    /// Spending limit; `None` is unlimited. The counters are in [`BudgetState`].
    pub budget: Option<Micros>,
    /// Tokens (in + out) per UTC day; `None` takes the plan's default.
    pub token_cap_per_day: Option<u64>,
    /// Regions whose models the team may use; empty means every region.
    pub allowed_regions: Vec<String>,
    /// Every request of the team is sensitive: processed on local models only.
    pub sensitive_only: bool,
    /// Model ids the team may use; empty means every model.
    pub allowed_models: Vec<String>,
    pub created_at: UnixMillis,
    pub updated_at: UnixMillis,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewTeam {
    /// Set when importing a team declared in the config file (its id there); `None`: a new
    /// `team_` + UUIDv7 id.
    pub id: Option<TeamId>,
    pub name: String,
    pub plan: Plan,
    pub budget: Option<Micros>,
    pub token_cap_per_day: Option<u64>,
    pub allowed_regions: Vec<String>,
    pub sensitive_only: bool,
    pub allowed_models: Vec<String>,
}

/// A partial update: `None` leaves a field as it is; `Some(None)` clears an optional one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamPatch {
    pub name: Option<String>,
    pub plan: Option<Plan>,
    pub budget: Option<Option<Micros>>,
    pub token_cap_per_day: Option<Option<u64>>,
    pub allowed_regions: Option<Vec<String>>,
    pub sensitive_only: Option<bool>,
    pub allowed_models: Option<Vec<String>>,
}

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

/// One completed request, as charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    pub at: UnixMillis,
    pub team_id: TeamId,
    pub key_id: KeyId,
    /// The request's `user` field or `X-Actor-ID` header; else the key id.
    pub actor: String,
    pub model: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub spend: Micros,
    /// The request charged (its `X-Audit-Trace-ID`, the journal entry's `request_id`); `None`
    /// for work no request did. Kept by SQLite, where start-up looks charges up by it.
    pub request_id: Option<String>,
}

/// Filters for [`super::Store::usage`]; `from` is inclusive, `to` exclusive.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageFilter {
    pub team_id: Option<TeamId>,
    pub key_id: Option<KeyId>,
    pub model: Option<String>,
    pub from: Option<UnixMillis>,
    pub to: Option<UnixMillis>,
    /// Also per UTC day ([`UsageRow::day`]).
    pub by_day: bool,
}

/// Usage summed per key, model and actor (and UTC day, when asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub team_id: TeamId,
    pub key_id: KeyId,
    pub model: String,
    pub actor: String,
    pub requests: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub spend: Micros,
    /// The UTC day's start (Unix ms) with [`UsageFilter::by_day`].
    pub day: Option<UnixMillis>,
}

/// What a budget belongs to: a team, or one key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BudgetScope {
    Team(TeamId),
    Key(KeyId),
}

impl BudgetScope {
    /// The counter row's primary key: `team:<id>` or `key:<id>`.
    pub(crate) fn column(&self) -> String {
        match self {
            BudgetScope::Team(t) => format!("team:{t}"),
            BudgetScope::Key(k) => format!("key:{k}"),
        }
    }
}

/// A budget's counters. Invariant kept by the store: `spent + reserved <= limit` whenever a
/// reservation was admitted and settled at or below its amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetState {
    /// `None` is unlimited.
    pub limit: Option<Micros>,
    pub spent: Micros,
    pub reserved: Micros,
}

impl BudgetState {
    /// What is left to reserve; `None` when unlimited.
    pub fn remaining(&self) -> Option<Micros> {
        self.limit.map(|l| l - self.spent - self.reserved)
    }
}

/// An admitted reservation: held against every scope it was made on until settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReservationId(pub i64);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReserveOutcome {
    Reserved(ReservationId),
    /// The first scope that could not cover the amount; nothing was reserved anywhere.
    Insufficient(BudgetScope),
}

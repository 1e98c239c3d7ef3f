//! The values the store takes and returns: team and key ids, usage records and aggregates,
//! budget scopes, counters and reservations.
//! Money is [`Micros`]: integer millionths of the gateway's configured currency.

use std::fmt;

pub use crate::domain::Plan;
use crate::domain::Role;

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

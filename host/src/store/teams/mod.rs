//! Teams: what a team is ([`Team`]), how one is made ([`NewTeam`]) and changed ([`TeamPatch`]),
//! and how both back ends keep them ([`sql`]).

pub(crate) mod sql;

use super::{Micros, Plan, TeamId, UnixMillis};

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

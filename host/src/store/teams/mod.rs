//! Teams: what a team is ([`Team`]), how one is made ([`NewTeam`]) and changed ([`TeamPatch`]),
//! the calls on them ([`TeamStore`]), and how both back ends keep them ([`sql`], implemented once
//! for both by [`impl_team_store!`]).

pub(crate) mod schema;
pub(crate) mod sql;

use futures_util::future::BoxFuture;

use super::{Micros, Plan, StoreResult, TeamId, UnixMillis};

/// Teams in the store (part of [`super::Store`]).
pub trait TeamStore: Send + Sync {
    fn create_team(&self, team: NewTeam) -> BoxFuture<'_, StoreResult<Team>>;
    fn team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<Option<Team>>>;
    fn teams(&self) -> BoxFuture<'_, StoreResult<Vec<Team>>>;
    fn update_team(&self, id: TeamId, patch: TeamPatch) -> BoxFuture<'_, StoreResult<Team>>;
    /// Deletes the team, its keys (which stop authenticating at once) and its budget counters;
    /// usage history is kept. `false` when there was no such team.
    fn delete_team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<bool>>;
}

/// [`TeamStore`] for a back end, written once over its "run a step" macro (`store::sql`,
/// "Running a step").
macro_rules! impl_team_store {
    ($store:ty, $run:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::teams::{NewTeam, Team, TeamPatch, TeamStore, sql as steps};
            use $crate::store::{StoreResult, TeamId};

            impl TeamStore for $store {
                fn create_team(&self, team: NewTeam) -> BoxFuture<'_, StoreResult<Team>> {
                    $run!(self, |c, now| steps::create(&mut c, now, team))
                }

                fn team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<Option<Team>>> {
                    $run!(self, |c, _| steps::get(&c, &id))
                }

                fn teams(&self) -> BoxFuture<'_, StoreResult<Vec<Team>>> {
                    $run!(self, |c, _| steps::list(&c))
                }

                fn update_team(
                    &self,
                    id: TeamId,
                    patch: TeamPatch,
                ) -> BoxFuture<'_, StoreResult<Team>> {
                    $run!(self, |c, now| steps::update(&mut c, now, id, patch))
                }

                fn delete_team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<bool>> {
                    $run!(self, |c, _| steps::delete(&mut c, &id))
                }
            }
        };
    };
}
pub(crate) use impl_team_store;

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

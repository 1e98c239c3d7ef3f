//! Budget counters and reservations: their values are in [`super::types`] (`BudgetScope`,
//! `BudgetState`, `ReserveOutcome`); each back end reserves its own way, because exactness
//! across replicas needs PostgreSQL's row locks in scope order where SQLite's one writer needs
//! none (`sqlite/budgets.rs`, `postgres/budgets.rs`, the same function names and arguments).
//! What is written once is [`BudgetStore`]'s plumbing from method to step
//! ([`impl_budget_store!`]), and the tables, in both dialects ([`schema`]).

pub(crate) mod schema;

use futures_util::future::BoxFuture;

use super::{
    BudgetScope, BudgetState, Micros, ReservationId, ReserveOutcome, StoreResult, UnixMillis,
    UsageRecord,
};

/// Budget counters and reservations in the store (part of [`super::Store`]).
pub trait BudgetStore: Send + Sync {
    fn budget(&self, scope: BudgetScope) -> BoxFuture<'_, StoreResult<Option<BudgetState>>>;
    /// Atomically holds `amount` against every scope (all or none): admitted only if for each
    /// limited scope `spent + reserved + amount <= limit`. Unlimited scopes are still counted.
    fn reserve(
        &self,
        scopes: Vec<BudgetScope>,
        amount: Micros,
    ) -> BoxFuture<'_, StoreResult<ReserveOutcome>>;
    /// Releases the reservation and charges `actual` instead, on every scope it was made on.
    /// `actual` above the reserved amount is charged in full (spend is never under-recorded).
    fn settle(&self, id: ReservationId, actual: Micros) -> BoxFuture<'_, StoreResult<()>>;
    /// Settles the reservation at `usage.spend` and records `usage`, in one transaction: the
    /// usage report and the budget counters never disagree, whatever stops the process.
    fn complete(&self, id: ReservationId, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Settles every reservation made before `before` at its full amount (never under-charge):
    /// those left by a process that stopped mid-request. Returns how many there were.
    fn settle_stale(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>>;
}

/// [`BudgetStore`] for a back end, over its "run its own step" macro (`sqlite_own!`, `pg_own!`:
/// `c` is the back end's connection, passed as is) and its module of steps (`budgets`: `get`,
/// `reserve`, `settle`, `complete`, `settle_stale`).
macro_rules! impl_budget_store {
    ($store:ty, $run:ident, $steps:ident) => {
        const _: () = {
            use ::futures_util::future::BoxFuture;
            use $crate::store::budgets::BudgetStore;
            use $crate::store::{
                BudgetScope, BudgetState, Micros, ReservationId, ReserveOutcome, StoreResult,
                UnixMillis, UsageRecord,
            };

            impl BudgetStore for $store {
                fn budget(
                    &self,
                    scope: BudgetScope,
                ) -> BoxFuture<'_, StoreResult<Option<BudgetState>>> {
                    $run!(self, |c, _| $steps::get(c, &scope))
                }

                fn reserve(
                    &self,
                    scopes: Vec<BudgetScope>,
                    amount: Micros,
                ) -> BoxFuture<'_, StoreResult<ReserveOutcome>> {
                    $run!(self, |c, now| $steps::reserve(c, now, scopes, amount))
                }

                fn settle(
                    &self,
                    id: ReservationId,
                    actual: Micros,
                ) -> BoxFuture<'_, StoreResult<()>> {
                    $run!(self, |c, _| $steps::settle(c, id, actual))
                }

                fn complete(
                    &self,
                    id: ReservationId,
                    usage: UsageRecord,
                ) -> BoxFuture<'_, StoreResult<()>> {
                    $run!(self, |c, _| $steps::complete(c, id, &usage))
                }

                fn settle_stale(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
                    $run!(self, |c, _| $steps::settle_stale(c, before))
                }
            }
        };
    };
}
pub(crate) use impl_budget_store;

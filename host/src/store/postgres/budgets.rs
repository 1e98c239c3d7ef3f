//! Budget counters in PostgreSQL: reserve and settle, exact across replicas. A reservation first
//! locks its scopes' counter rows (`SELECT … ORDER BY scope FOR UPDATE`: one order for every
//! caller, so two reservations over the same scopes queue instead of deadlocking), then moves
//! each with a conditional `UPDATE … WHERE spent + reserved + amount <= limit`; a scope that
//! cannot cover the amount rolls the whole transaction back (all or none). While the rows are
//! locked no other transaction can change them, so no interleaving of callers — tasks, pooled
//! connections, replicas — holds more than the limit.
//!
//! Per back end on purpose: SQLite's single writer needs none of these locks
//! (`sqlite/budgets.rs`); reserve and settle run on every request, so each keeps its fewest
//! statements.

use std::collections::HashSet;

use deadpool_postgres::{GenericClient, Object};

use super::{execute, query, query_one, query_opt};
use crate::store::rules::check_not_negative;
use crate::store::{
    BudgetScope, BudgetState, Micros, ReservationId, ReserveOutcome, StoreError, StoreResult,
    UnixMillis, UsageRecord,
};

pub(super) async fn get<C: GenericClient>(
    c: &C,
    scope: &BudgetScope,
) -> StoreResult<Option<BudgetState>> {
    query_opt(
        c,
        "SELECT limit_micros, spent_micros, reserved_micros FROM budgets WHERE scope = $1",
        &[&scope.column()],
    )
    .await?
    .map(|r| {
        Ok(BudgetState {
            limit: r.try_get(0)?,
            spent: r.try_get(1)?,
            reserved: r.try_get(2)?,
        })
    })
    .transpose()
}

fn missing(scope: BudgetScope) -> StoreError {
    match scope {
        BudgetScope::Team(t) => StoreError::TeamNotFound(t),
        BudgetScope::Key(k) => StoreError::KeyNotFound(k),
    }
}

/// Locks the counter rows of `scopes` (those that exist) in scope order; returns their scopes.
pub(super) async fn lock<C: GenericClient>(c: &C, scopes: &[String]) -> StoreResult<Vec<String>> {
    query(
        c,
        "SELECT scope FROM budgets WHERE scope = ANY($1) ORDER BY scope FOR UPDATE",
        &[&scopes],
    )
    .await?
    .iter()
    .map(|r| Ok(r.try_get(0)?))
    .collect()
}

pub(super) async fn reserve(
    c: &mut Object,
    now: UnixMillis,
    mut scopes: Vec<BudgetScope>,
    amount: Micros,
) -> StoreResult<ReserveOutcome> {
    check_not_negative(amount, "amount")?;
    // Each scope once, in the caller's order (the first that cannot cover is the answer).
    let mut seen = HashSet::new();
    scopes.retain(|s| seen.insert(s.clone()));
    let columns: Vec<String> = scopes.iter().map(BudgetScope::column).collect();
    let tx = c.transaction().await?;
    let existing = lock(&tx, &columns).await?;
    for (scope, column) in scopes.iter().zip(&columns) {
        let moved = execute(
            &tx,
            "UPDATE budgets SET reserved_micros = reserved_micros + $2
             WHERE scope = $1
               AND (limit_micros IS NULL OR spent_micros + reserved_micros + $2 <= limit_micros)",
            &[column, &amount],
        )
        .await?;
        if moved == 0 {
            // Nothing reserved anywhere: all or none.
            tx.rollback().await?;
            return if existing.contains(column) {
                Ok(ReserveOutcome::Insufficient(scope.clone()))
            } else {
                Err(missing(scope.clone()))
            };
        }
    }
    let id: i64 = query_one(
        &tx,
        "INSERT INTO reservations (amount_micros, created_at) VALUES ($1, $2) RETURNING id",
        &[&amount, &now],
    )
    .await?
    .try_get(0)?;
    execute(
        &tx,
        "INSERT INTO reservation_scopes (reservation_id, scope)
         SELECT $1::BIGINT, unnest($2::TEXT[])",
        &[&id, &columns],
    )
    .await?;
    tx.commit().await?;
    Ok(ReserveOutcome::Reserved(ReservationId(id)))
}

pub(super) async fn settle(c: &mut Object, id: ReservationId, actual: Micros) -> StoreResult<()> {
    let tx = c.transaction().await?;
    settle_in(&tx, id, actual).await?;
    tx.commit().await?;
    Ok(())
}

/// Settles at `usage.spend` and records the usage row in one transaction.
pub(super) async fn complete(
    c: &mut Object,
    id: ReservationId,
    usage: &UsageRecord,
) -> StoreResult<()> {
    let tx = c.transaction().await?;
    super::usage::record(&tx, std::slice::from_ref(usage)).await?;
    settle_in(&tx, id, usage.spend).await?;
    tx.commit().await?;
    Ok(())
}

/// Settles every reservation made before `before` at its full amount; returns how many.
pub(super) async fn settle_stale(c: &mut Object, before: UnixMillis) -> StoreResult<u64> {
    let tx = c.transaction().await?;
    let stale: Vec<(i64, Micros)> = query(
        &tx,
        "SELECT id, amount_micros FROM reservations WHERE created_at < $1 ORDER BY id FOR UPDATE",
        &[&before],
    )
    .await?
    .iter()
    .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
    .collect::<StoreResult<_>>()?;
    // Every counter row they touch, locked at once in scope order (not reservation by
    // reservation, which could cross a concurrent reservation's order).
    let ids: Vec<i64> = stale.iter().map(|(id, _)| *id).collect();
    query(
        &tx,
        "SELECT scope FROM budgets WHERE scope IN
             (SELECT scope FROM reservation_scopes WHERE reservation_id = ANY($1))
         ORDER BY scope FOR UPDATE",
        &[&ids],
    )
    .await?;
    for (id, amount) in &stale {
        settle_in(&tx, ReservationId(*id), *amount).await?;
    }
    tx.commit().await?;
    Ok(u64::try_from(stale.len()).unwrap_or(u64::MAX))
}

/// The body of a settlement, inside the caller's transaction.
async fn settle_in<C: GenericClient>(tx: &C, id: ReservationId, actual: Micros) -> StoreResult<()> {
    check_not_negative(actual, "actual")?;
    // Locked: a second settlement of the same reservation waits, then finds it gone.
    let amount: Micros = query_opt(
        tx,
        "SELECT amount_micros FROM reservations WHERE id = $1 FOR UPDATE",
        &[&id.0],
    )
    .await?
    .ok_or(StoreError::ReservationNotFound(id.0))?
    .try_get(0)?;
    query(
        tx,
        "SELECT scope FROM budgets WHERE scope IN
             (SELECT scope FROM reservation_scopes WHERE reservation_id = $1)
         ORDER BY scope FOR UPDATE",
        &[&id.0],
    )
    .await?;
    // A scope deleted since (its team or key) simply has no row left to update.
    execute(
        tx,
        "UPDATE budgets SET reserved_micros = reserved_micros - $2,
             spent_micros = spent_micros + $3
         WHERE scope IN (SELECT scope FROM reservation_scopes WHERE reservation_id = $1)",
        &[&id.0, &amount, &actual],
    )
    .await?;
    execute(tx, "DELETE FROM reservations WHERE id = $1", &[&id.0]).await?;
    Ok(())
}

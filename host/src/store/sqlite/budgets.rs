//! Budget counters in SQLite: reserve and settle. A reservation is admitted by a conditional
//! `UPDATE … WHERE spent + reserved + amount <= limit` per scope inside one `IMMEDIATE`
//! transaction, so no interleaving of callers (threads, connections or processes on the same
//! file) can hold more than the limit: SQLite runs one write transaction at a time, and the
//! condition is checked and the counter moved in the same statement.
//!
//! Per back end on purpose: PostgreSQL must first lock the counter rows in scope order
//! (`postgres/budgets.rs`), which SQLite's single writer makes moot; reserve and settle run on
//! every request, so each back end keeps its fewest statements.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::store::rules::check_not_negative;
use crate::store::{
    BudgetScope, BudgetState, Micros, ReservationId, ReserveOutcome, StoreError, StoreResult,
    UnixMillis, UsageRecord,
};

pub(super) fn get(conn: &Connection, scope: &BudgetScope) -> StoreResult<Option<BudgetState>> {
    Ok(conn
        .prepare_cached(
            "SELECT limit_micros, spent_micros, reserved_micros FROM budgets WHERE scope = ?1",
        )?
        .query_row([scope.column()], |r| {
            Ok(BudgetState {
                limit: r.get(0)?,
                spent: r.get(1)?,
                reserved: r.get(2)?,
            })
        })
        .optional()?)
}

fn missing(scope: BudgetScope) -> StoreError {
    match scope {
        BudgetScope::Team(t) => StoreError::TeamNotFound(t),
        BudgetScope::Key(k) => StoreError::KeyNotFound(k),
    }
}

pub(super) fn reserve(
    conn: &mut Connection,
    now: UnixMillis,
    mut scopes: Vec<BudgetScope>,
    amount: Micros,
) -> StoreResult<ReserveOutcome> {
    check_not_negative(amount, "amount")?;
    scopes.dedup();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for scope in &scopes {
        let moved = tx
            .prepare_cached(
                "UPDATE budgets SET reserved_micros = reserved_micros + ?2
                 WHERE scope = ?1
                   AND (limit_micros IS NULL OR spent_micros + reserved_micros + ?2 <= limit_micros)",
            )?
            .execute(params![scope.column(), amount])?;
        if moved == 0 {
            // Dropping `tx` rolls back what earlier scopes reserved: all or none.
            return match get(&tx, scope)? {
                Some(_) => Ok(ReserveOutcome::Insufficient(scope.clone())),
                None => Err(missing(scope.clone())),
            };
        }
    }
    tx.prepare_cached("INSERT INTO reservations (amount_micros, created_at) VALUES (?1, ?2)")?
        .execute(params![amount, now])?;
    let id = tx.last_insert_rowid();
    for scope in &scopes {
        tx.prepare_cached(
            "INSERT INTO reservation_scopes (reservation_id, scope) VALUES (?1, ?2)",
        )?
        .execute(params![id, scope.column()])?;
    }
    tx.commit()?;
    Ok(ReserveOutcome::Reserved(ReservationId(id)))
}

pub(super) fn settle(conn: &mut Connection, id: ReservationId, actual: Micros) -> StoreResult<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    settle_in(&tx, id, actual)?;
    tx.commit()?;
    Ok(())
}

/// Settles at `usage.spend` and records the usage row in one transaction.
pub(super) fn complete(
    conn: &mut Connection,
    id: ReservationId,
    usage: &UsageRecord,
) -> StoreResult<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    super::usage::record(&tx, usage)?;
    settle_in(&tx, id, usage.spend)?;
    tx.commit()?;
    Ok(())
}

/// Settles every reservation made before `before` at its full amount; returns how many.
pub(super) fn settle_stale(conn: &mut Connection, before: UnixMillis) -> StoreResult<u64> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let stale: Vec<(i64, Micros)> = tx
        .prepare("SELECT id, amount_micros FROM reservations WHERE created_at < ?1 ORDER BY id")?
        .query_map([before], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, amount) in &stale {
        settle_in(&tx, ReservationId(*id), *amount)?;
    }
    tx.commit()?;
    Ok(u64::try_from(stale.len()).unwrap_or(u64::MAX))
}

/// The body of a settlement, inside the caller's transaction.
fn settle_in(tx: &Connection, id: ReservationId, actual: Micros) -> StoreResult<()> {
    check_not_negative(actual, "actual")?;
    let amount: Micros = tx
        .prepare_cached("SELECT amount_micros FROM reservations WHERE id = ?1")?
        .query_row([id.0], |r| r.get(0))
        .optional()?
        .ok_or(StoreError::ReservationNotFound(id.0))?;
    // A scope deleted since (its team or key) simply has no row left to update.
    tx.prepare_cached(
        "UPDATE budgets SET reserved_micros = reserved_micros - ?2,
             spent_micros = spent_micros + ?3
         WHERE scope IN (SELECT scope FROM reservation_scopes WHERE reservation_id = ?1)",
    )?
    .execute(params![id.0, amount, actual])?;
    tx.prepare_cached("DELETE FROM reservations WHERE id = ?1")?
        .execute([id.0])?;
    Ok(())
}

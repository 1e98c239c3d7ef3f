//! Usage in SQLite: one row per completed request, summed on query per key, model and actor.
//!
//! Per back end on purpose (the charge path's speed): here a batch is cached statements row by
//! row inside the group commit's transaction, on the writer thread that holds the connection (no
//! round trip); PostgreSQL sends a batch as arrays in one statement and locks the counters in
//! scope order (`postgres/usage.rs`).

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::store::rules::i64_of;
use crate::store::rules::{
    UsageArg, check_not_negative, spend_by_scope, usage_conditions, usage_day,
};
use crate::store::usage::{count, usage_row};
use crate::store::{KeyId, StoreResult, TeamId, UsageFilter, UsageRecord, UsageRow};

pub(super) fn record(conn: &Connection, u: &UsageRecord) -> StoreResult<()> {
    check_not_negative(u.spend, "spend")?;
    conn.prepare_cached(
        "INSERT INTO usage (at, team_id, key_id, actor, model, tokens_in, tokens_out, spend_micros,
                            request_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        u.at,
        u.team_id.0,
        u.key_id.0,
        u.actor,
        u.model,
        i64_of(u.tokens_in, "tokens_in")?,
        i64_of(u.tokens_out, "tokens_out")?,
        u.spend,
        u.request_id
    ])?;
    Ok(())
}

/// Records each usage row and adds its spend to its team's and key's counters, all in one
/// transaction (one fsync for the batch). Each counter moves once per batch, by the sum of its
/// rows (`rules::spend_by_scope`), with an equality on its key: one `UPDATE … WHERE scope = a OR
/// scope = b` per row made SQLite open a temporary b-tree for the `OR` on every row, ~26,000
/// instructions a request (bench/README.md).
pub(super) fn charge(conn: &mut Connection, batch: &[UsageRecord]) -> StoreResult<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    charge_in(&tx, batch)?;
    tx.commit()?;
    Ok(())
}

/// [`charge`], and the journal seq from which charges may be missing, in one transaction.
pub(super) fn charge_and_mark(
    conn: &mut Connection,
    batch: &[UsageRecord],
    from_seq: u64,
) -> StoreResult<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    charge_in(&tx, batch)?;
    tx.prepare_cached(
        "INSERT INTO charges_marker (id, from_seq) VALUES (1, ?1)
         ON CONFLICT (id) DO UPDATE SET from_seq = excluded.from_seq",
    )?
    .execute(params![i64_of(from_seq, "from_seq")?])?;
    tx.commit()?;
    Ok(())
}

/// The marker [`charge_and_mark`] left, if any.
pub(super) fn charges_marker(conn: &Connection) -> StoreResult<Option<u64>> {
    let seq: Option<i64> = conn
        .query_row(
            "SELECT from_seq FROM charges_marker WHERE id = 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(seq.map(|s| u64::try_from(s).unwrap_or(0)))
}

/// The usage rows of these requests (by request id).
pub(super) fn charged(conn: &Connection, requests: &[String]) -> StoreResult<Vec<UsageRecord>> {
    let mut st = conn.prepare_cached(
        "SELECT at, team_id, key_id, actor, model, tokens_in, tokens_out, spend_micros
         FROM usage WHERE request_id = ?1",
    )?;
    let mut out = Vec::new();
    for id in requests {
        let rows = st.query_map(params![id], |r| {
            Ok(UsageRecord {
                at: r.get(0)?,
                team_id: TeamId(r.get(1)?),
                key_id: KeyId(r.get(2)?),
                actor: r.get(3)?,
                model: r.get(4)?,
                tokens_in: count(r.get(5)?),
                tokens_out: count(r.get(6)?),
                spend: r.get(7)?,
                request_id: Some(id.clone()),
            })
        })?;
        for row in rows {
            out.push(row?);
        }
    }
    Ok(out)
}

/// [`charge`] inside a transaction the caller commits.
pub(super) fn charge_in(tx: &rusqlite::Transaction<'_>, batch: &[UsageRecord]) -> StoreResult<()> {
    let spend = spend_by_scope(batch)?;
    for u in batch {
        record(tx, u)?;
    }
    let mut move_counter =
        tx.prepare_cached("UPDATE budgets SET spent_micros = spent_micros + ?2 WHERE scope = ?1")?;
    for (scope, amount) in &spend {
        move_counter.execute(params![scope, amount])?;
    }
    Ok(())
}

pub(super) fn query(conn: &Connection, f: &UsageFilter) -> StoreResult<Vec<UsageRow>> {
    let (sql, args) = statement(f);
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_and_then(args.as_slice(), |r| usage_row(r))?;
    rows.collect()
}

/// The usage query with only the filters given (`rules::usage_conditions`).
fn statement(f: &UsageFilter) -> (String, Vec<&dyn rusqlite::ToSql>) {
    let (filtered, args) = usage_conditions(f, '?');
    let (day, by_day) = usage_day(f);
    let sql = format!(
        "SELECT team_id, key_id, model, actor, COUNT(*), SUM(tokens_in), SUM(tokens_out),
                SUM(spend_micros), {day}
         FROM usage {filtered}
         GROUP BY team_id, key_id, model, actor{by_day}
         ORDER BY 9, key_id, model, actor"
    );
    let args = args
        .into_iter()
        .map(|a| -> &dyn rusqlite::ToSql {
            match a {
                UsageArg::Text(s) => s,
                UsageArg::Time(t) => t,
            }
        })
        .collect();
    (sql, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(conn: &Connection, f: &UsageFilter) -> String {
        let (sql, args) = statement(f);
        let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = st
            .query_map(args.as_slice(), |r| r.get::<_, String>(3))
            .unwrap();
        rows.collect::<Result<Vec<_>, _>>().unwrap().join("; ")
    }

    #[test]
    fn a_team_or_key_filter_searches_its_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        let latest = super::super::migrations::latest();
        super::super::migrations::migrate_to(&mut conn, latest, 0).unwrap();
        let team = UsageFilter {
            team_id: Some(TeamId("t".into())),
            from: Some(1),
            ..UsageFilter::default()
        };
        let p = plan(&conn, &team);
        assert!(
            p.contains("SEARCH usage USING INDEX usage_by_team (team_id=? AND at>?)"),
            "{p}"
        );
        let key = UsageFilter {
            key_id: Some(KeyId("k".into())),
            ..UsageFilter::default()
        };
        let p = plan(&conn, &key);
        assert!(
            p.contains("SEARCH usage USING INDEX usage_by_key (key_id=?)"),
            "{p}"
        );
    }
}

//! The webhook outbox in SQLite: `webhook_deliveries` (one row per event and subscription; `seq`
//! orders a subscription's deliveries) and `webhook_attempts`. The subscriptions themselves are
//! `store/webhooks/subscriptions.rs`.

use rusqlite::{Connection, TransactionBehavior, params};

use crate::store::webhooks::{
    Attempt, AttemptRecord, Delivery, DeliveryFilter, DeliveryState, NewDelivery, Outcome,
    SELECT_DELIVERY, delivery_row,
};
use crate::store::{StoreResult, UnixMillis};

/// Enqueues a batch in one transaction (one fsync); returns each delivery's seq, in order.
pub(super) fn enqueue(
    c: &mut Connection,
    now: UnixMillis,
    batch: &[NewDelivery],
) -> StoreResult<Vec<i64>> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut seqs = Vec::with_capacity(batch.len());
    {
        let mut st = tx.prepare_cached(
            "INSERT INTO webhook_deliveries
                 (webhook_id, event_id, kind, payload, state, attempts, created_at, age_from, next_attempt_at)
             SELECT ?1, ?2, ?3, ?4, 'pending', 0, ?5, ?5, ?5
             WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = ?1)",
        )?;
        for d in batch {
            // A subscription deleted meanwhile takes nothing (seq 0 marks it).
            let n = st.execute(params![d.webhook_id, d.event_id, d.kind, d.payload, now])?;
            seqs.push(if n == 1 { tx.last_insert_rowid() } else { 0 });
        }
    }
    tx.commit()?;
    Ok(seqs)
}

/// The subscription's pending deliveries after `after_seq`, oldest first.
pub(super) fn pending(
    c: &Connection,
    webhook_id: &str,
    after_seq: i64,
    limit: u32,
) -> StoreResult<Vec<Delivery>> {
    let mut st = c.prepare_cached(&format!(
        "{SELECT_DELIVERY} WHERE webhook_id = ?1 AND state = 'pending' AND seq > ?2
         ORDER BY seq LIMIT ?3"
    ))?;
    let rows = st.query_and_then(params![webhook_id, after_seq, limit], |r| delivery_row(r))?;
    rows.collect()
}

pub(super) fn record_attempts(c: &mut Connection, records: &[AttemptRecord]) -> StoreResult<()> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO webhook_attempts (seq, at, duration_ms, status, error)
             SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = ?1)",
        )?;
        let mut update = tx.prepare_cached(
            "UPDATE webhook_deliveries SET state = ?2, attempts = attempts + 1,
                 next_attempt_at = COALESCE(?3, next_attempt_at), last_status = ?4,
                 last_error = ?5, done_at = ?6
             WHERE seq = ?1",
        )?;
        for rec in records {
            let a = &rec.attempt;
            let duration = i64::try_from(a.duration_ms).unwrap_or(i64::MAX);
            // A delivery deleted with its subscription meanwhile records nothing.
            insert.execute(params![rec.seq, a.at, duration, a.status, a.error])?;
            let (state, next_at, done_at) = match rec.outcome {
                Outcome::Delivered => ("delivered", None, Some(a.at)),
                Outcome::Retry { next_at } => ("pending", Some(next_at), None),
                Outcome::Dead => ("dead", None, Some(a.at)),
                Outcome::Skipped => ("skipped", None, Some(a.at)),
            };
            update.execute(params![rec.seq, state, next_at, a.status, a.error, done_at])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// The subscription's deliveries, newest first, each with its attempts.
pub(super) fn list_deliveries(
    c: &Connection,
    webhook_id: &str,
    filter: &DeliveryFilter,
) -> StoreResult<Vec<Delivery>> {
    let mut st = c.prepare_cached(&format!(
        "{SELECT_DELIVERY} WHERE webhook_id = ?1 AND (?2 IS NULL OR state = ?2)
             AND (?3 IS NULL OR seq < ?3)
         ORDER BY seq DESC LIMIT ?4"
    ))?;
    let rows = st.query_and_then(
        params![
            webhook_id,
            filter.state.map(DeliveryState::as_str),
            filter.before_seq,
            filter.limit
        ],
        |r| delivery_row(r),
    )?;
    let mut out: Vec<Delivery> = rows.collect::<StoreResult<_>>()?;
    let mut attempts = c.prepare_cached(
        "SELECT at, duration_ms, status, error FROM webhook_attempts WHERE seq = ?1 ORDER BY id",
    )?;
    for d in &mut out {
        let rows = attempts.query_map([d.seq], |r| {
            let status: Option<i64> = r.get(2)?;
            Ok(Attempt {
                at: r.get(0)?,
                duration_ms: u64::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
                status: status.and_then(|s| u16::try_from(s).ok()),
                error: r.get(3)?,
            })
        })?;
        d.log = rows.collect::<Result<_, _>>()?;
    }
    Ok(out)
}

/// Dead letters back to pending (all of the subscription's, or those in `seqs`), their age
/// counted afresh; returns how many.
pub(super) fn redrive(
    c: &mut Connection,
    now: UnixMillis,
    webhook_id: &str,
    seqs: Option<&[i64]>,
) -> StoreResult<u64> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let n = match seqs {
        None => tx.execute(
            "UPDATE webhook_deliveries SET state = 'pending', age_from = ?2, next_attempt_at = ?2,
                 done_at = NULL
             WHERE webhook_id = ?1 AND state = 'dead'",
            params![webhook_id, now],
        )?,
        Some(seqs) => {
            let mut st = tx.prepare_cached(
                "UPDATE webhook_deliveries SET state = 'pending', age_from = ?2,
                     next_attempt_at = ?2, done_at = NULL
                 WHERE webhook_id = ?1 AND state = 'dead' AND seq = ?3",
            )?;
            let mut n = 0;
            for s in seqs {
                n += st.execute(params![webhook_id, now, s])?;
            }
            n
        }
    };
    tx.commit()?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Deletes finished deliveries (delivered, skipped) older than `before`; dead letters stay until
/// re-driven or their subscription is deleted.
pub(super) fn prune(c: &mut Connection, before: UnixMillis) -> StoreResult<u64> {
    let n = c.execute(
        "DELETE FROM webhook_deliveries WHERE state IN ('delivered', 'skipped') AND done_at < ?1",
        [before],
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

//! The webhook outbox in PostgreSQL: `webhook_deliveries` (one row per event and subscription;
//! `seq` orders a subscription's deliveries), `webhook_attempts`, and the lease on a
//! subscription's outbox. The subscriptions themselves are `store/webhooks/subscriptions.rs`.
//!
//! A worker reads its pending deliveries after the highest seq it has read, so a delivery must
//! never become visible after one with a higher seq. SQLite gets that from its single writer;
//! here every enqueue takes one advisory lock for its transaction, so seqs are drawn and
//! committed batch by batch, in order, across replicas.

use std::collections::HashSet;

use deadpool_postgres::{GenericClient, Object};

use super::{Filters, execute, query, query_one};
use crate::store::webhooks::{
    Attempt, AttemptRecord, Delivery, DeliveryFilter, DeliveryState, NewDelivery, Outcome,
    SELECT_DELIVERY, delivery_row,
};
use crate::store::{StoreResult, UnixMillis};

/// The advisory lock key enqueueing serialises on: "Sov" + "outb".
const OUTBOX_LOCK: i64 = 0x0053_6f76_6f75_7462;

/// The right to deliver the subscription's outbox until `until`, for `owner`: granted when
/// nobody holds it, `owner` does, or the holder's lease has ended by `now` (one conditional
/// statement: two replicas claiming at once cannot both win). `false` too for a subscription
/// that is gone.
pub(super) async fn claim<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    id: &str,
    owner: &str,
    until: UnixMillis,
) -> StoreResult<bool> {
    let n = execute(
        c,
        "UPDATE webhooks SET lease_owner = $2, lease_until = $3
         WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until <= $4)",
        &[&id, &owner, &until, &now],
    )
    .await?;
    Ok(n == 1)
}

/// Enqueues a batch in one transaction; returns each delivery's seq, in order (0 for a
/// subscription deleted meanwhile, which takes nothing).
pub(super) async fn enqueue(
    c: &mut Object,
    now: UnixMillis,
    batch: &[NewDelivery],
) -> StoreResult<Vec<i64>> {
    let tx = c.transaction().await?;
    // Held to the commit: the next batch (any replica's) draws its seqs after these are visible.
    execute(&tx, "SELECT pg_advisory_xact_lock($1)", &[&OUTBOX_LOCK]).await?;
    let mut ids: Vec<&str> = batch.iter().map(|d| d.webhook_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    // The live subscriptions, share-locked: one deleted after this waits for our commit.
    let live: HashSet<String> = query(
        &tx,
        "SELECT id FROM webhooks WHERE id = ANY($1) ORDER BY id FOR KEY SHARE",
        &[&ids],
    )
    .await?
    .iter()
    .map(|r| r.try_get(0))
    .collect::<Result<_, _>>()?;
    let mut seqs = Vec::with_capacity(batch.len());
    for d in batch {
        if !live.contains(&d.webhook_id) {
            seqs.push(0);
            continue;
        }
        let seq: i64 = query_one(
            &tx,
            "INSERT INTO webhook_deliveries
                 (webhook_id, event_id, kind, payload, state, attempts, created_at, age_from,
                  next_attempt_at)
             VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5, $5)
             RETURNING seq",
            &[&d.webhook_id, &d.event_id, &d.kind, &d.payload, &now],
        )
        .await?
        .try_get(0)?;
        seqs.push(seq);
    }
    tx.commit().await?;
    Ok(seqs)
}

/// The subscription's pending deliveries after `after_seq`, oldest first.
pub(super) async fn pending<C: GenericClient>(
    c: &C,
    webhook_id: &str,
    after_seq: i64,
    limit: u32,
) -> StoreResult<Vec<Delivery>> {
    query(
        c,
        &format!(
            "{SELECT_DELIVERY} WHERE webhook_id = $1 AND state = 'pending' AND seq > $2
             ORDER BY seq LIMIT $3"
        ),
        &[&webhook_id, &after_seq, &i64::from(limit)],
    )
    .await?
    .iter()
    .map(delivery_row)
    .collect()
}

/// Records attempts and moves each delivery to its outcome, in one transaction. A delivery
/// deleted with its subscription meanwhile records nothing.
pub(super) async fn record_attempts(c: &mut Object, records: &[AttemptRecord]) -> StoreResult<()> {
    let tx = c.transaction().await?;
    for rec in records {
        let a = &rec.attempt;
        let duration = i64::try_from(a.duration_ms).unwrap_or(i64::MAX);
        let status = a.status.map(i64::from);
        let (state, next_at, done_at) = match rec.outcome {
            Outcome::Delivered => ("delivered", None, Some(a.at)),
            Outcome::Retry { next_at } => ("pending", Some(next_at), None),
            Outcome::Dead => ("dead", None, Some(a.at)),
            Outcome::Skipped => ("skipped", None, Some(a.at)),
        };
        // The update first: it locks the delivery, so it cannot be deleted before the attempt
        // row referring to it is in.
        let n = execute(
            &tx,
            "UPDATE webhook_deliveries SET state = $2, attempts = attempts + 1,
                 next_attempt_at = COALESCE($3, next_attempt_at), last_status = $4,
                 last_error = $5, done_at = $6
             WHERE seq = $1",
            &[&rec.seq, &state, &next_at, &status, &a.error, &done_at],
        )
        .await?;
        if n == 0 {
            continue;
        }
        execute(
            &tx,
            "INSERT INTO webhook_attempts (seq, at, duration_ms, status, error)
             VALUES ($1, $2, $3, $4, $5)",
            &[&rec.seq, &a.at, &duration, &status, &a.error],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The subscription's deliveries, newest first, each with its attempts.
pub(super) async fn list_deliveries<C: GenericClient>(
    c: &C,
    webhook_id: &str,
    filter: &DeliveryFilter,
) -> StoreResult<Vec<Delivery>> {
    let (state, limit) = (
        filter.state.map(DeliveryState::as_str),
        i64::from(filter.limit),
    );
    let mut w = Filters::default();
    w.given("webhook_id =", Some(&webhook_id));
    w.given("state =", state.as_ref());
    w.given("seq <", filter.before_seq.as_ref());
    let sql = format!(
        "{SELECT_DELIVERY} {} ORDER BY seq DESC LIMIT {}",
        w.where_clause(),
        w.bind(&limit)
    );
    let mut out: Vec<Delivery> = query(c, &sql, &w.params)
        .await?
        .iter()
        .map(delivery_row)
        .collect::<StoreResult<_>>()?;
    let seqs: Vec<i64> = out.iter().map(|d| d.seq).collect();
    let attempts = query(
        c,
        "SELECT seq, at, duration_ms, status, error FROM webhook_attempts
         WHERE seq = ANY($1) ORDER BY id",
        &[&seqs],
    )
    .await?;
    for r in &attempts {
        let seq: i64 = r.try_get(0)?;
        let status: Option<i64> = r.try_get(3)?;
        let attempt = Attempt {
            at: r.try_get(1)?,
            duration_ms: u64::try_from(r.try_get::<_, i64>(2)?).unwrap_or(0),
            status: status.and_then(|s| u16::try_from(s).ok()),
            error: r.try_get(4)?,
        };
        if let Some(d) = out.iter_mut().find(|d| d.seq == seq) {
            d.log.push(attempt);
        }
    }
    Ok(out)
}

/// Dead letters back to pending (all of the subscription's, or those in `seqs`), their age
/// counted afresh; returns how many.
pub(super) async fn redrive<C: GenericClient>(
    c: &C,
    now: UnixMillis,
    webhook_id: &str,
    seqs: Option<&[i64]>,
) -> StoreResult<u64> {
    const SET: &str = "UPDATE webhook_deliveries SET state = 'pending', age_from = $2,
             next_attempt_at = $2, done_at = NULL
         WHERE webhook_id = $1 AND state = 'dead'";
    match seqs {
        None => execute(c, SET, &[&webhook_id, &now]).await,
        Some(seqs) => {
            execute(
                c,
                &format!("{SET} AND seq = ANY($3)"),
                &[&webhook_id, &now, &seqs],
            )
            .await
        }
    }
}

/// Deletes finished deliveries (delivered, skipped) older than `before`; dead letters stay until
/// re-driven or their subscription is deleted.
pub(super) async fn prune<C: GenericClient>(c: &C, before: UnixMillis) -> StoreResult<u64> {
    execute(
        c,
        "DELETE FROM webhook_deliveries WHERE state IN ('delivered', 'skipped') AND done_at < $1",
        &[&before],
    )
    .await
}

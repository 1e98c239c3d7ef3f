//! Usage in PostgreSQL: one row per completed request (a batch in one statement), summed on
//! query per key, model and actor; charging adds each batch's spend to its counters in scope
//! order.

use std::collections::BTreeMap;

use deadpool_postgres::GenericClient;

use super::execute;
use crate::store::rules::{check_not_negative, i64_of};
use crate::store::{
    BudgetScope, KeyId, Micros, StoreError, StoreResult, TeamId, UsageFilter, UsageRecord, UsageRow,
};

/// Records a batch of usage rows in one statement.
pub(super) async fn record<C: GenericClient>(c: &C, batch: &[UsageRecord]) -> StoreResult<()> {
    let mut at = Vec::with_capacity(batch.len());
    let mut team = Vec::with_capacity(batch.len());
    let mut key = Vec::with_capacity(batch.len());
    let mut actor = Vec::with_capacity(batch.len());
    let mut model = Vec::with_capacity(batch.len());
    let mut tokens_in = Vec::with_capacity(batch.len());
    let mut tokens_out = Vec::with_capacity(batch.len());
    let mut spend = Vec::with_capacity(batch.len());
    for u in batch {
        check_not_negative(u.spend, "spend")?;
        at.push(u.at);
        team.push(u.team_id.0.as_str());
        key.push(u.key_id.0.as_str());
        actor.push(u.actor.as_str());
        model.push(u.model.as_str());
        tokens_in.push(i64_of(u.tokens_in, "tokens_in")?);
        tokens_out.push(i64_of(u.tokens_out, "tokens_out")?);
        spend.push(u.spend);
    }
    if batch.is_empty() {
        return Ok(());
    }
    execute(
        c,
        "INSERT INTO usage (at, team_id, key_id, actor, model, tokens_in, tokens_out, spend_micros)
         SELECT * FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[],
             $6::BIGINT[], $7::BIGINT[], $8::BIGINT[])",
        &[
            &at,
            &team,
            &key,
            &actor,
            &model,
            &tokens_in,
            &tokens_out,
            &spend,
        ],
    )
    .await?;
    Ok(())
}

/// Records each usage row and adds its spend to its team's and key's counters, inside the
/// caller's transaction. The counters move once per scope, in scope order (the lock order
/// every budget change follows).
pub(super) async fn charge_in<C: GenericClient>(tx: &C, batch: &[UsageRecord]) -> StoreResult<()> {
    record(tx, batch).await?;
    let mut spend: BTreeMap<String, Micros> = BTreeMap::new();
    for u in batch {
        for scope in [
            BudgetScope::Team(u.team_id.clone()),
            BudgetScope::Key(u.key_id.clone()),
        ] {
            let sum = spend.entry(scope.column()).or_insert(0);
            *sum = sum.checked_add(u.spend).ok_or(StoreError::Invalid {
                field: "spend",
                reason: "too large".into(),
            })?;
        }
    }
    for (scope, amount) in &spend {
        execute(
            tx,
            "UPDATE budgets SET spent_micros = spent_micros + $2 WHERE scope = $1",
            &[scope, amount],
        )
        .await?;
    }
    Ok(())
}

fn count(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

pub(super) async fn query<C: GenericClient>(c: &C, f: &UsageFilter) -> StoreResult<Vec<UsageRow>> {
    let rows = super::query(
        c,
        "SELECT team_id, key_id, model, actor, COUNT(*), SUM(tokens_in)::BIGINT,
                SUM(tokens_out)::BIGINT, SUM(spend_micros)::BIGINT
         FROM usage
         WHERE ($1::TEXT IS NULL OR team_id = $1) AND ($2::TEXT IS NULL OR key_id = $2)
           AND ($3::TEXT IS NULL OR model = $3) AND ($4::BIGINT IS NULL OR at >= $4)
           AND ($5::BIGINT IS NULL OR at < $5)
         GROUP BY team_id, key_id, model, actor
         ORDER BY key_id, model, actor",
        &[
            &f.team_id.as_ref().map(|t| t.0.as_str()),
            &f.key_id.as_ref().map(|k| k.0.as_str()),
            &f.model.as_deref(),
            &f.from,
            &f.to,
        ],
    )
    .await?;
    rows.iter()
        .map(|r| {
            Ok(UsageRow {
                team_id: TeamId(r.try_get(0)?),
                key_id: KeyId(r.try_get(1)?),
                model: r.try_get(2)?,
                actor: r.try_get(3)?,
                requests: count(r.try_get(4)?),
                tokens_in: count(r.try_get(5)?),
                tokens_out: count(r.try_get(6)?),
                spend: r.try_get(7)?,
            })
        })
        .collect()
}

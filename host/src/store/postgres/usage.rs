//! Usage in PostgreSQL: one row per completed request (a batch in one statement), summed on
//! query per key, model and actor; charging adds each batch's spend to its counters in scope
//! order.
//!
//! Per back end on purpose (the charge path's speed): a batch as arrays in one round trip, which
//! `store::sql::Value` does not carry; SQLite's row-by-row version is `sqlite/usage.rs`.

use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::execute;
use crate::store::rules::{
    UsageArg, check_not_negative, i64_of, spend_by_scope, usage_conditions, usage_day,
};
use crate::store::usage::usage_row;
use crate::store::{Micros, StoreResult, UsageFilter, UsageRecord, UsageRow};

/// A batch of usage rows as the statements' column arrays.
struct Columns<'a> {
    at: Vec<i64>,
    team: Vec<&'a str>,
    key: Vec<&'a str>,
    actor: Vec<&'a str>,
    model: Vec<&'a str>,
    tokens_in: Vec<i64>,
    tokens_out: Vec<i64>,
    spend: Vec<Micros>,
}

impl<'a> Columns<'a> {
    fn of(batch: &'a [UsageRecord]) -> StoreResult<Columns<'a>> {
        let mut c = Columns {
            at: Vec::with_capacity(batch.len()),
            team: Vec::with_capacity(batch.len()),
            key: Vec::with_capacity(batch.len()),
            actor: Vec::with_capacity(batch.len()),
            model: Vec::with_capacity(batch.len()),
            tokens_in: Vec::with_capacity(batch.len()),
            tokens_out: Vec::with_capacity(batch.len()),
            spend: Vec::with_capacity(batch.len()),
        };
        for u in batch {
            check_not_negative(u.spend, "spend")?;
            c.at.push(u.at);
            c.team.push(u.team_id.0.as_str());
            c.key.push(u.key_id.0.as_str());
            c.actor.push(u.actor.as_str());
            c.model.push(u.model.as_str());
            c.tokens_in.push(i64_of(u.tokens_in, "tokens_in")?);
            c.tokens_out.push(i64_of(u.tokens_out, "tokens_out")?);
            c.spend.push(u.spend);
        }
        Ok(c)
    }

    /// Parameters $1–$8.
    fn params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.at,
            &self.team,
            &self.key,
            &self.actor,
            &self.model,
            &self.tokens_in,
            &self.tokens_out,
            &self.spend,
        ]
    }
}

/// Inserts the rows of parameters $1–$8 (a [`Columns`]).
macro_rules! insert_rows {
    () => {
        "INSERT INTO usage (at, team_id, key_id, actor, model, tokens_in, tokens_out, spend_micros)
         SELECT * FROM unnest($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[],
             $6::BIGINT[], $7::BIGINT[], $8::BIGINT[])"
    };
}

const RECORD: &str = insert_rows!();

/// [`RECORD`], and each scope of $9 moved by the amount of $10 once its row is locked.
const CHARGE: &str = concat!(
    "WITH recorded AS (",
    insert_rows!(),
    "), locked AS MATERIALIZED (
         SELECT scope FROM budgets WHERE scope = ANY($9) ORDER BY scope FOR UPDATE
     )
     UPDATE budgets b SET spent_micros = b.spent_micros + s.amount
     FROM locked l JOIN unnest($9::TEXT[], $10::BIGINT[]) AS s(scope, amount)
         ON s.scope = l.scope
     WHERE b.scope = l.scope"
);

/// Records a batch of usage rows in one statement.
pub(super) async fn record<C: GenericClient>(c: &C, batch: &[UsageRecord]) -> StoreResult<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let cols = Columns::of(batch)?;
    execute(c, RECORD, &cols.params()).await?;
    Ok(())
}

/// Records each usage row and adds its spend to its team's and key's counters, in one
/// statement (one round trip; alone it is its own transaction). The counter rows are locked in
/// scope order before any is moved (`locked`, the order every budget change follows: a
/// counter row is updated only once the join has passed it through `FOR UPDATE`), and each
/// moves once per batch.
pub(super) async fn charge_in<C: GenericClient>(c: &C, batch: &[UsageRecord]) -> StoreResult<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let cols = Columns::of(batch)?;
    let spend = spend_by_scope(batch)?;
    let (scopes, amounts): (Vec<String>, Vec<Micros>) = spend.into_iter().unzip();
    execute(
        c,
        CHARGE,
        &[cols.params().as_slice(), &[&scopes, &amounts]].concat(),
    )
    .await?;
    Ok(())
}

pub(super) async fn query<C: GenericClient>(c: &C, f: &UsageFilter) -> StoreResult<Vec<UsageRow>> {
    let (filtered, args) = usage_conditions(f, '$');
    let args: Vec<&(dyn ToSql + Sync)> = args
        .into_iter()
        .map(|a| -> &(dyn ToSql + Sync) {
            match a {
                UsageArg::Text(s) => s,
                UsageArg::Time(t) => t,
            }
        })
        .collect();
    let (day, by_day) = usage_day(f);
    let rows = super::query(
        c,
        &format!(
            "SELECT team_id, key_id, model, actor, COUNT(*), SUM(tokens_in)::BIGINT,
                    SUM(tokens_out)::BIGINT, SUM(spend_micros)::BIGINT, {day}::BIGINT
             FROM usage {filtered}
             GROUP BY team_id, key_id, model, actor{by_day}
             ORDER BY 9, key_id, model, actor"
        ),
        &args,
    )
    .await?;
    rows.iter().map(usage_row).collect()
}

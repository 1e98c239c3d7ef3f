//! Usage rows: their values are in [`super::types`] (`UsageRecord`, `UsageFilter`, `UsageRow`);
//! each back end charges and queries its own way, because the fast way differs
//! (`sqlite/usage.rs`: one transaction on the one connection, with the journal marker;
//! `postgres/usage.rs`: one statement that locks counter rows in scope order), so only the
//! tables, in both dialects ([`schema`]), and the summary row's mapping ([`usage_row`]) are here.

pub(crate) mod schema;

use super::sql::Columns;
use super::{KeyId, StoreResult, TeamId, UsageRow};

/// A stored count (never negative) as the count it is.
pub(crate) fn count(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// One row of either back end's usage summary, which selects `team_id, key_id, model, actor`,
/// the request count, the sums of `tokens_in`, `tokens_out` and `spend_micros`, then the day
/// (NULL unless grouped by day), in this order.
pub(crate) fn usage_row(r: &impl Columns) -> StoreResult<UsageRow> {
    Ok(UsageRow {
        team_id: TeamId(r.column(0)?),
        key_id: KeyId(r.column(1)?),
        model: r.column(2)?,
        actor: r.column(3)?,
        requests: count(r.column(4)?),
        tokens_in: count(r.column(5)?),
        tokens_out: count(r.column(6)?),
        spend: r.column(7)?,
        day: r.column(8)?,
    })
}

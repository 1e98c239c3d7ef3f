//! Statements through the connection's cache of prepared statements (one round trip per call
//! once prepared), on a pooled connection or inside a transaction alike, and the conditions of
//! listings built from the filters given.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use crate::store::StoreResult;

pub(crate) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A listing's conditions, only those given: connections plan each statement once (`PLAN_ONCE`
/// in `postgres/mod.rs`), and one plan of a catch-all `($2 IS NULL OR state = $2)` could not use
/// the index a given filter needs. The texts are few (each filter there or not) and prepared
/// once.
#[derive(Default)]
pub(crate) struct Filters<'a> {
    clauses: Vec<String>,
    pub(crate) params: Vec<&'a (dyn ToSql + Sync)>,
}

impl<'a> Filters<'a> {
    /// The placeholder of a new parameter.
    pub(crate) fn bind(&mut self, value: &'a (dyn ToSql + Sync)) -> String {
        self.params.push(value);
        format!("${}", self.params.len())
    }

    /// A condition written with placeholders from [`Filters::bind`].
    pub(crate) fn and(&mut self, condition: String) {
        self.clauses.push(condition);
    }

    /// `condition` (`"team_id ="`) against the value, when one is given.
    pub(crate) fn given<T: ToSql + Sync>(&mut self, condition: &str, value: Option<&'a T>) {
        if let Some(v) = value {
            let placeholder = self.bind(v);
            self.and(format!("{condition} {placeholder}"));
        }
    }

    /// `WHERE …` (empty without conditions).
    pub(crate) fn where_clause(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", self.clauses.join(" AND "))
        }
    }
}

pub(crate) async fn query<C: GenericClient>(
    c: &C,
    sql: &str,
    params: Params<'_>,
) -> StoreResult<Vec<Row>> {
    let st = c.prepare_cached(sql).await?;
    Ok(c.query(&st, params).await?)
}

pub(crate) async fn query_opt<C: GenericClient>(
    c: &C,
    sql: &str,
    params: Params<'_>,
) -> StoreResult<Option<Row>> {
    let st = c.prepare_cached(sql).await?;
    Ok(c.query_opt(&st, params).await?)
}

pub(crate) async fn query_one<C: GenericClient>(
    c: &C,
    sql: &str,
    params: Params<'_>,
) -> StoreResult<Row> {
    let st = c.prepare_cached(sql).await?;
    Ok(c.query_one(&st, params).await?)
}

pub(crate) async fn execute<C: GenericClient>(
    c: &C,
    sql: &str,
    params: Params<'_>,
) -> StoreResult<u64> {
    let st = c.prepare_cached(sql).await?;
    Ok(c.execute(&st, params).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_hold_only_what_is_given() {
        let (team, state, limit) = ("t".to_string(), None::<String>, 5_i64);
        let mut f = Filters::default();
        assert_eq!(f.where_clause(), "");
        f.given("team_id =", Some(&team));
        f.given("state =", state.as_ref());
        f.given("seq <", Some(&limit));
        assert_eq!(f.where_clause(), "WHERE team_id = $1 AND seq < $2");
        assert_eq!(f.bind(&limit), "$3");
        assert_eq!(f.params.len(), 3);
    }
}

//! [`Db`], [`Conn`] and [`Tx`] over tokio-postgres: statements through the connection's cache of
//! prepared statements (one round trip per call once prepared), on a pooled connection or inside
//! a transaction alike; [`Value`] binds to and reads from the column types the schema uses.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use deadpool_postgres::{GenericClient, Object, Transaction};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use super::{Column, Columns, Conn, Db, Row, Sql, Tx, Value};
use crate::store::StoreResult;

type BoxError = Box<dyn Error + Sync + Send>;

/// A pooled connection (`Pg<Object>`, which can begin a transaction) or a transaction.
pub(crate) struct Pg<C>(pub(crate) C);

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql_checked(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql_checked(ty, out),
                _ => v.to_sql_checked(ty, out),
            },
            Value::Real(v) => v.to_sql_checked(ty, out),
            Value::Text(v) if *ty == Type::JSONB => {
                // JSONB's binary form: a version byte, then the text.
                out.put_u8(1);
                out.put_slice(v.as_bytes());
                Ok(IsNull::No)
            }
            Value::Text(v) if *ty == Type::JSON => {
                out.put_slice(v.as_bytes());
                Ok(IsNull::No)
            }
            Value::Text(v) => v.as_str().to_sql_checked(ty, out),
            Value::Bytes(v) => v.as_slice().to_sql_checked(ty, out),
            Value::Bool(v) => v.to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(match *ty {
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::BYTEA => Value::Bytes(raw.to_vec()),
            Type::JSON => Value::Text(std::str::from_utf8(raw)?.to_string()),
            Type::JSONB => {
                Value::Text(std::str::from_utf8(raw.get(1..).unwrap_or_default())?.to_string())
            }
            _ if <&str as FromSql>::accepts(ty) => Value::Text(String::from_sql(ty, raw)?),
            _ => return Err(format!("column type {ty} has no store value").into()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn bind(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// A row tokio-postgres answered, as the store's [`Row`] (also for a back end's own bulk step).
pub(crate) fn row(r: &tokio_postgres::Row) -> StoreResult<Row> {
    (0..r.len())
        .map(|i| Ok(r.try_get::<_, Value>(i)?))
        .collect::<StoreResult<Vec<_>>>()
        .map(Row)
}

impl Columns for tokio_postgres::Row {
    fn column<T: Column>(&self, i: usize) -> StoreResult<T> {
        Ok(self.try_get(i)?)
    }
}

impl<C: GenericClient + Sync> Db for Pg<C> {
    async fn execute(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<u64> {
        let st = self.0.prepare_cached(sql.postgres).await?;
        Ok(self.0.execute(&st, &bind(params)).await?)
    }

    async fn query(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<Vec<Row>> {
        let st = self.0.prepare_cached(sql.postgres).await?;
        self.0
            .query(&st, &bind(params))
            .await?
            .iter()
            .map(row)
            .collect()
    }

    async fn query_opt(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<Option<Row>> {
        let st = self.0.prepare_cached(sql.postgres).await?;
        self.0
            .query_opt(&st, &bind(params))
            .await?
            .as_ref()
            .map(row)
            .transpose()
    }

    async fn batch(&self, sql: Sql<'_>) -> StoreResult<()> {
        Ok(self.0.batch_execute(sql.postgres).await?)
    }
}

impl Conn for Pg<Object> {
    type Tx<'c>
        = Pg<Transaction<'c>>
    where
        Self: 'c;

    async fn begin(&mut self) -> StoreResult<Pg<Transaction<'_>>> {
        Ok(Pg(self.0.transaction().await?))
    }
}

impl Tx for Pg<Transaction<'_>> {
    async fn commit(self) -> StoreResult<()> {
        Ok(self.0.commit().await?)
    }
}

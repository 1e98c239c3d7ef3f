//! [`Db`], [`Conn`] and [`Tx`] over rusqlite: statements through the connection's cache of
//! prepared statements, write transactions as `BEGIN IMMEDIATE`. Nothing here awaits, so
//! [`finish`] runs a choreography to its end on the thread that holds the connection.

use std::future::Future;
use std::ops::Deref;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::{Column, Columns, Conn, Db, Row, Sql, Tx, Value};
use crate::store::{StoreError, StoreResult};

/// Drives `work` (a choreography over a connection) to its end here: its statements never await, so
/// one poll finishes it.
pub(crate) fn finish<T>(work: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
    match pin!(work).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(done) => done,
        Poll::Pending => Err(StoreError::Worker(
            "a SQLite statement waited, which it never does".into(),
        )),
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Bytes(v) => ValueRef::Blob(v),
            Value::Bool(v) => ValueRef::Integer(i64::from(*v)),
        }))
    }
}

fn value(v: ValueRef<'_>) -> StoreResult<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(
            String::from_utf8(t.to_vec())
                .map_err(|e| StoreError::Corrupt(format!("text column: {e}")))?,
        ),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
    })
}

fn rows(c: &Connection, sql: Sql<'_>, params: &[Value], limit: usize) -> StoreResult<Vec<Row>> {
    if sql.sqlite.is_empty() {
        return Ok(Vec::new());
    }
    let mut st = c.prepare_cached(sql.sqlite)?;
    let width = st.column_count();
    let mut found = st.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(r) = found.next()? else { break };
        let mut row = Vec::with_capacity(width);
        for i in 0..width {
            row.push(value(r.get_ref(i)?)?);
        }
        out.push(Row(row));
    }
    Ok(out)
}

fn execute(c: &Connection, sql: Sql<'_>, params: &[Value]) -> StoreResult<u64> {
    if sql.sqlite.is_empty() {
        return Ok(0);
    }
    let n = c
        .prepare_cached(sql.sqlite)?
        .execute(rusqlite::params_from_iter(params))?;
    Ok(n as u64)
}

impl Columns for rusqlite::Row<'_> {
    fn column<T: Column>(&self, i: usize) -> StoreResult<T> {
        Ok(self.get(i)?)
    }
}

/// A connection or a transaction (both dereference to the connection).
impl<C: Deref<Target = Connection>> Db for C {
    async fn execute(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<u64> {
        execute(self, sql, params)
    }

    async fn query(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<Vec<Row>> {
        rows(self, sql, params, usize::MAX)
    }

    async fn query_opt(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<Option<Row>> {
        Ok(rows(self, sql, params, 1)?.pop())
    }

    async fn batch(&self, sql: Sql<'_>) -> StoreResult<()> {
        Ok(self.execute_batch(sql.sqlite)?)
    }
}

impl Conn for &mut Connection {
    type Tx<'c>
        = Transaction<'c>
    where
        Self: 'c;

    async fn begin(&mut self) -> StoreResult<Transaction<'_>> {
        Ok(self.transaction_with_behavior(TransactionBehavior::Immediate)?)
    }
}

impl Tx for Transaction<'_> {
    async fn commit(self) -> StoreResult<()> {
        Ok(Transaction::commit(self)?)
    }
}

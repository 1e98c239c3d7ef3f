//! The store's statements written once for both back ends: a statement's text per dialect
//! ([`Sql`]), backend-neutral parameters and rows ([`Value`], [`Row`]), and the three traits a
//! resource's choreography (check → begin → write → map → commit) is written against: [`Db`]
//! runs statements, [`Conn`] begins a transaction, [`Tx`] commits it. [`sqlite`] and
//! [`postgres`] implement them; a resource module (`store/teams.rs`, …) holds only its SQL and
//! its steps, generic over [`Conn`].
//!
//! On SQLite the methods never await: the back end drives a choreography to its end on the
//! thread that holds the connection ([`sqlite::finish`]).
//!
//! # Running a step
//!
//! A resource's trait is implemented once for both back ends by its `impl_…!` macro
//! (`teams::impl_team_store!`, …), which each back end invokes with its own "run a step" macro:
//! `sqlite_step!` (`store/sqlite/mod.rs`) and `pg_step!` (`store/postgres/mod.rs`). A method is
//! `$run!(self, |c, now| step)`: the back end takes its connection and the store's clock, binds
//! `c` so that `&c` is a [`Db`] and `&mut c` a [`Conn`], and runs `step` (a future) to its end —
//! SQLite with [`sqlite::finish`] on the blocking pool, PostgreSQL awaiting it on a pooled
//! connection as `Pg(c)`. The expansion is the closure each back end wrote by hand before: one
//! boxed future per call, no more (the hot key lookup costs what it did).
//!
//! # Mapping a back end's own row
//!
//! A back end that keeps its own query (the usage summary, the webhook outbox) still maps the
//! answered row once for both: the mapping reads [`Columns`], which each driver's row implements
//! with its native getter (`rusqlite::Row::get`, `tokio_postgres::Row::try_get`), no copy
//! through [`Value`].

pub(crate) mod migrate;
pub(crate) mod postgres;
pub(crate) mod sqlite;
mod value;

pub(crate) use value::{Row, Value};

use super::StoreResult;

/// One statement in each dialect, side by side: SQLite's placeholders are `?1`, PostgreSQL's
/// `$1`. A step only PostgreSQL needs (a row lock SQLite's one writer makes moot) has an empty
/// SQLite text ([`Sql::postgres_only`]), which SQLite skips.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sql<'a> {
    pub(crate) sqlite: &'a str,
    pub(crate) postgres: &'a str,
}

impl<'a> Sql<'a> {
    /// A text both dialects read alike (no parameters, or a back end's own script).
    pub(crate) const fn same(text: &'a str) -> Sql<'a> {
        Sql {
            sqlite: text,
            postgres: text,
        }
    }

    /// A step only SQLite takes (a migration PostgreSQL's first schema had already).
    pub(crate) const fn sqlite_only(sqlite: &'a str) -> Sql<'a> {
        Sql {
            sqlite,
            postgres: "",
        }
    }

    /// A step SQLite has no use for (it answers no rows, 0 changed).
    pub(crate) const fn postgres_only(postgres: &'a str) -> Sql<'a> {
        Sql {
            sqlite: "",
            postgres,
        }
    }
}

/// A column's Rust type both drivers read natively (`i64`, `String`, an `Option` of them).
pub(crate) trait Column:
    rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a>
{
}

impl<T: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a>> Column for T {}

/// A row as its driver answered it, read column by column (index in the statement's order) with
/// the driver's own getter: what a row mapping written once for both back ends reads.
pub(crate) trait Columns {
    fn column<T: Column>(&self, i: usize) -> StoreResult<T>;
}

/// Runs statements: a connection outside a transaction (a single read) or inside one.
pub(crate) trait Db {
    /// How many rows the statement changed.
    async fn execute(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<u64>;
    async fn query(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<Vec<Row>>;
    async fn query_opt(&self, sql: Sql<'_>, params: &[Value]) -> StoreResult<Option<Row>>;
    /// Runs a script of statements without parameters (a migration).
    async fn batch(&self, sql: Sql<'_>) -> StoreResult<()>;
}

/// A connection that can begin a write transaction (SQLite's `BEGIN IMMEDIATE`, PostgreSQL's
/// READ COMMITTED). A transaction dropped without [`Tx::commit`] rolls back.
pub(crate) trait Conn: Db {
    type Tx<'c>: Tx
    where
        Self: 'c;
    async fn begin(&mut self) -> StoreResult<Self::Tx<'_>>;
}

/// A transaction begun by [`Conn::begin`].
pub(crate) trait Tx: Db {
    async fn commit(self) -> StoreResult<()>;
}

/// Whether the back end refused a statement for a foreign key (its row went meanwhile).
pub(crate) fn refused_foreign_key(e: &super::StoreError) -> bool {
    use super::StoreError;
    match e {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => {
            f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
        }
        StoreError::Postgres(p) => {
            p.code() == Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION)
        }
        _ => false,
    }
}

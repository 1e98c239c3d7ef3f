//! The shared back end (issue 17, scale-out): PostgreSQL through a `deadpool-postgres` pool of
//! `tokio-postgres` connections (plain TCP or a Unix socket; no TLS yet), one pool per process,
//! every replica on the same database. Each call takes a connection, reads the store's clock,
//! and runs its statements, writes in one transaction (READ COMMITTED); statements are prepared
//! once per connection and cached.
//!
//! Every check-and-change is exact across replicas: it is one conditional statement, or it runs
//! under row locks taken in one global order — team rows, then reservation rows, then budget rows
//! by scope, then key rows (a team's deletion cascading to its keys) — so concurrent transactions
//! wait for each other instead of deadlocking. The webhook outbox numbers deliveries under an
//! advisory lock, so seq order is commit order. The document library (`DocumentStore`) lives
//! here too, so replicas share it. `docs/STORE.md` ("PostgreSQL back end") has the schema and
//! the reasoning.

mod budgets;
mod errors;
pub(crate) mod migrations;
pub(crate) mod statements;
mod usage;
mod webhooks;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use futures_util::future::BoxFuture;
use tokio_postgres::NoTls;
use tokio_postgres::config::SslMode;

use super::budgets::impl_budget_store;
use super::cert_identities::impl_cert_identity_store;
use super::documents::impl_document_store;
use super::ingest_jobs::impl_ingest_job_store;
use super::keys::impl_key_store;
use super::mcp_servers::impl_mcp_store;
use super::responses::{StoredResponse, impl_response_store, sql as stored_responses};
use super::sql::Tx;
use super::sql::postgres::Pg;
use super::teams::impl_team_store;
use super::webhooks::{impl_outbox_store, impl_webhook_store};
use super::{
    Clock, Store, StoreError, StoreResult, UnixMillis, UsageFilter, UsageRecord, UsageRow,
};
pub(crate) use errors::describe;
use statements::{Filters, execute, query, query_one, query_opt};

/// Session options of every connection: one plan per prepared statement (`connect`).
const PLAN_ONCE: &str = "-c plan_cache_mode=force_generic_plan";
/// How long opening one connection may take (unless the URL sets `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a call waits for a free connection before failing with [`StoreError::Pool`].
const WAIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long checking an idle connection before reuse may take.
const RECYCLE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the pool's config: the connection string may hold a password.
        f.debug_struct("PgStore")
            .field("pool", &self.pool.status())
            .field("clock", &self.clock)
            .finish()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, or the
    /// `key=value` form) with a pool of at most `pool_size` connections, checks that a connection
    /// opens, and brings the schema up to date (replicas starting together take turns).
    pub async fn connect(
        url: &str,
        pool_size: usize,
        clock: Arc<dyn Clock>,
    ) -> StoreResult<PgStore> {
        let mut config: tokio_postgres::Config =
            url.parse()
                .map_err(|e: tokio_postgres::Error| StoreError::Invalid {
                    field: "url",
                    reason: format!("not a PostgreSQL connection string: {}", describe(&e)),
                })?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(StoreError::Invalid {
                field: "url",
                reason: "sslmode=require: TLS to PostgreSQL is not supported yet".into(),
            });
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("sovereign");
        }
        // Every statement is planned once per connection, not per execution: the batch writes
        // (`unnest` over arrays) were re-planned on every call because PostgreSQL estimated a
        // generic plan over 100 rows dearer than a custom one over the batch's real size — a
        // quarter of the server's CPU under load (bench/README.md, issue 17). Statements that
        // filter take only the filters given, so one plan fits each. Options in the URL come after
        // this one and win.
        let options = session_options(config.get_options());
        config.options(options);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(WAIT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(RECYCLE_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Pool(e.to_string()))?;
        let conn = pool.get().await?;
        migrations::migrate_to(conn, migrations::latest(), clock.now_ms()).await?;
        Ok(PgStore { pool, clock })
    }

    /// The schema version this build creates and upgrades to.
    pub fn latest_schema_version() -> i64 {
        migrations::latest()
    }

    /// The database's schema version.
    pub async fn schema_version(&self) -> StoreResult<i64> {
        let conn = self.pool.get().await?;
        migrations::version(conn).await
    }

    /// Runs `f` with a pooled connection and the current time.
    pub(in crate::store) fn run<'a, T, F, Fut>(&'a self, f: F) -> BoxFuture<'a, StoreResult<T>>
    where
        T: Send + 'a,
        F: FnOnce(Object, UnixMillis) -> Fut + Send + 'a,
        Fut: Future<Output = StoreResult<T>> + Send + 'a,
    {
        Box::pin(async move {
            let conn = self.pool.get().await?;
            // Read once the connection is ours, as SQLite reads it under its lock.
            let now = self.clock.now_ms();
            f(conn, now).await
        })
    }
}

/// [`PLAN_ONCE`], then the URL's own options (later settings win).
fn session_options(theirs: Option<&str>) -> String {
    match theirs {
        Some(theirs) => format!("{PLAN_ONCE} {theirs}"),
        None => PLAN_ONCE.to_string(),
    }
}

impl Store for PgStore {
    fn record_usage(&self, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { usage::record(&c, std::slice::from_ref(&usage)).await })
    }

    fn charge(&self, batch: Vec<UsageRecord>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { usage::charge_in(&c, &batch).await })
    }

    fn usage(&self, filter: UsageFilter) -> BoxFuture<'_, StoreResult<Vec<UsageRow>>> {
        self.run(move |c, _| async move { usage::query(&c, &filter).await })
    }

    fn charge_and_store(
        &self,
        charges: Vec<UsageRecord>,
        batch: Vec<StoredResponse>,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| async move {
            let tx = Pg(c.transaction().await?);
            // Responses first: their teams are locked before any budget row (the lock order).
            stored_responses::put_in(&tx, &batch).await?;
            usage::charge_in(&tx.0, &charges).await?;
            tx.commit().await
        })
    }
}

/// Runs a resource's step (`store::sql`, "Running a step") on a pooled connection: `c` is
/// `Pg(connection)`.
macro_rules! pg_step {
    ($store:expr, |$c:ident, $now:tt| $step:expr) => {
        $store.run(move |c, $now| async move {
            #[allow(unused_mut)]
            let mut $c = $crate::store::sql::postgres::Pg(c);
            $step.await
        })
    };
}

/// Runs one of PostgreSQL's own steps (budgets, the outbox) on a pooled connection: `c` is the
/// `&mut Object`, the step a future.
macro_rules! pg_own {
    ($store:expr, |$c:ident, $now:tt| $step:expr) => {
        $store.run(move |mut conn, $now| async move {
            let $c = &mut conn;
            $step.await
        })
    };
}

// The resources written once for both back ends (policy versions and the journal index are
// PostgreSQL's alone: `store/policies/postgres.rs`, `store/journal_index/postgres.rs`).
impl_team_store!(PgStore, pg_step);
impl_key_store!(PgStore, pg_step);
impl_cert_identity_store!(PgStore, pg_step);
impl_mcp_store!(PgStore, pg_step);
impl_webhook_store!(PgStore, pg_step);
impl_response_store!(PgStore, pg_step);
impl_document_store!(PgStore, pg_step);
impl_ingest_job_store!(PgStore, pg_step);
// PostgreSQL's own steps, under the plumbing written once.
impl_budget_store!(PgStore, pg_own, budgets);
impl_outbox_store!(PgStore, pg_own, webhooks, {
    fn claim_webhook(
        &self,
        id: String,
        owner: String,
        until: UnixMillis,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, now| async move { webhooks::claim(&c, now, &id, &owner, until).await })
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_plan_once_unless_the_url_says_otherwise() {
        assert_eq!(session_options(None), PLAN_ONCE);
        let url: tokio_postgres::Config = "postgres://u@h/db?options=-c%20plan_cache_mode%3Dauto"
            .parse()
            .unwrap();
        assert_eq!(
            session_options(url.get_options()),
            "-c plan_cache_mode=force_generic_plan -c plan_cache_mode=auto"
        );
    }
}

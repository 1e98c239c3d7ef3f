//! The embedded back end: one SQLite file (WAL mode, `synchronous = FULL`, foreign keys on)
//! behind one connection that only blocking-pool threads touch. Every call runs in
//! `spawn_blocking`, takes the connection's mutex there (never across an `.await`), reads the
//! clock, and runs its statements; writes use `BEGIN IMMEDIATE` transactions.
//!
//! One connection serialises the gateway's own calls, which SQLite would do for writes anyway
//! (one writer at a time); reads are point lookups by primary key or index and the auth path
//! will sit behind an in-memory cache. A second handle on the same file (another
//! [`SqliteStore`], another process) stays correct: every check-and-change is one transaction.

mod budgets;
pub(crate) mod migrations;
mod usage;
mod webhooks;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::Connection;

use super::budgets::impl_budget_store;
use super::cert_identities::impl_cert_identity_store;
use super::documents::impl_document_store;
use super::group_commit;
use super::ingest_jobs::impl_ingest_job_store;
use super::journal_index::JournalIndexStore;
use super::keys::impl_key_store;
use super::mcp_servers::impl_mcp_store;
use super::policies::PolicyStore;
use super::responses::{impl_response_store, sql as stored_responses};
use super::sql::sqlite::finish;
use super::teams::impl_team_store;
use super::webhooks::{impl_outbox_store, impl_webhook_store};
use super::{
    Clock, Store, StoreError, StoreResult, UnixMillis, UsageFilter, UsageRecord, UsageRow,
};

/// How long a call waits for another connection's write transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: Mutex<Connection>,
    clock: Arc<dyn Clock>,
    path: PathBuf,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    /// Blocking: call from `spawn_blocking` or at start-up; [`SqliteStore::open`] does that.
    pub fn open_blocking(path: &Path, clock: Arc<dyn Clock>) -> StoreResult<SqliteStore> {
        let open_err = |source| StoreError::Open {
            path: path.display().to_string(),
            source,
        };
        let mut conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(open_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt(format!(
                "{}: journal_mode is {mode}, WAL could not be set",
                path.display()
            )));
        }
        // FULL: a commit (a revocation, a settled spend) survives power loss, not only a crash.
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(open_err)?;
        migrations::migrate_to(&mut conn, migrations::latest(), clock.now_ms())?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                conn: Mutex::new(conn),
                clock,
                path: path.to_path_buf(),
            }),
        })
    }

    /// [`SqliteStore::open_blocking`] on the blocking pool.
    pub async fn open(path: &Path, clock: Arc<dyn Clock>) -> StoreResult<SqliteStore> {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || SqliteStore::open_blocking(&path, clock))
            .await
            .map_err(|e| StoreError::Worker(e.to_string()))?
    }

    /// The schema version this build creates and upgrades to.
    pub fn latest_schema_version() -> i64 {
        migrations::latest()
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The database's schema version.
    pub async fn schema_version(&self) -> StoreResult<i64> {
        self.run(|c, _| migrations::version(c)).await
    }

    /// Runs `f` with the connection and the current time on the blocking pool, or right here on
    /// a group commit's own writer thread (`group_commit::on_writer_thread`), which exists to
    /// block on the store.
    fn run<T, F>(&self, f: F) -> BoxFuture<'static, StoreResult<T>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, UnixMillis) -> StoreResult<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move {
            if group_commit::on_writer_thread() {
                return inner.call(f);
            }
            tokio::task::spawn_blocking(move || inner.call(f))
                .await
                .map_err(|e| StoreError::Worker(e.to_string()))?
        })
    }
}

impl Inner {
    /// Blocking: `f` with the connection and the current time.
    fn call<T>(
        &self,
        f: impl FnOnce(&mut Connection, UnixMillis) -> StoreResult<T>,
    ) -> StoreResult<T> {
        // A poisoned lock means a panic mid-call; its transaction was rolled back when dropped,
        // so the connection is still consistent.
        let mut conn = self
            .conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Read under the lock, so calls see time in the order they run.
        let now = self.clock.now_ms();
        f(&mut conn, now)
    }
}

impl Store for SqliteStore {
    fn charge_and_store(
        &self,
        charges: Vec<UsageRecord>,
        batch: Vec<super::responses::StoredResponse>,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            usage::charge_in(&tx, &charges)?;
            finish(stored_responses::put_in(&tx, &batch))?;
            tx.commit()?;
            Ok(())
        })
    }

    fn record_usage(&self, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| usage::record(c, &usage))
    }

    fn charge(&self, batch: Vec<UsageRecord>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| usage::charge(c, &batch))
    }

    fn group_commits_run(&self) -> group_commit::Runs {
        group_commit::Runs::Thread
    }

    fn charges_ride_journal(&self) -> bool {
        true
    }

    fn charge_and_mark(
        &self,
        batch: Vec<UsageRecord>,
        from_seq: u64,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| usage::charge_and_mark(c, &batch, from_seq))
    }

    fn charges_marker(&self) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        self.run(|c, _| usage::charges_marker(c))
    }

    fn charged(&self, requests: Vec<String>) -> BoxFuture<'_, StoreResult<Vec<UsageRecord>>> {
        self.run(move |c, _| usage::charged(c, &requests))
    }

    fn usage(&self, filter: UsageFilter) -> BoxFuture<'_, StoreResult<Vec<UsageRow>>> {
        self.run(move |c, _| usage::query(c, &filter))
    }
}

/// Runs a resource's step (`store::sql`, "Running a step") on the blocking pool, or inline on a
/// group commit's writer thread: `c` is the `&mut Connection`, driven to its end by `finish`.
macro_rules! sqlite_step {
    ($store:expr, |$c:ident, $now:tt| $step:expr) => {
        $store
            .run(move |#[allow(unused_mut)] mut $c, $now| $crate::store::sql::sqlite::finish($step))
    };
}

/// Runs one of SQLite's own steps (budgets, the outbox) like [`sqlite_step!`]: `c` is the
/// `&mut Connection`, the step a plain call.
macro_rules! sqlite_own {
    ($store:expr, |$c:ident, $now:tt| $step:expr) => {
        $store.run(move |$c, $now| $step)
    };
}

// The resources written once for both back ends.
impl_team_store!(SqliteStore, sqlite_step);
impl_key_store!(SqliteStore, sqlite_step);
impl_cert_identity_store!(SqliteStore, sqlite_step);
impl_mcp_store!(SqliteStore, sqlite_step);
impl_webhook_store!(SqliteStore, sqlite_step);
impl_response_store!(SqliteStore, sqlite_step);
impl_document_store!(SqliteStore, sqlite_step);
impl_ingest_job_store!(SqliteStore, sqlite_step);
// SQLite's own steps, under the plumbing written once.
impl_budget_store!(SqliteStore, sqlite_own, budgets);
impl_outbox_store!(SqliteStore, sqlite_own, webhooks, {});
// One process keeps its policy versions and its journal in memory and on its own disk.
impl PolicyStore for SqliteStore {}
impl JournalIndexStore for SqliteStore {}

#[cfg(test)]
mod tests;

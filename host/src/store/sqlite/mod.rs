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

use super::cert_identities::sql as cert_identities;
use super::documents::bulk::Bulk;
use super::documents::{files, sql as documents};
use super::group_commit;
use super::keys::sql as keys;
use super::responses::sql as stored_responses;
use super::sql::Conn;
use super::sql::sqlite::finish;
use super::teams::sql as teams;
use super::webhooks::subscriptions;
use super::{
    BudgetScope, BudgetState, CertIdentity, Clock, CreatedKey, KeyId, KeyInfo, Micros,
    NewCertIdentity, NewKey, NewTeam, ReservationId, ReserveOutcome, Store, StoreError,
    StoreResult, Team, TeamId, TeamPatch, UnixMillis, UsageFilter, UsageRecord, UsageRow,
};
use crate::store::documents::{
    ChunkVector, DocumentFilter, DocumentRecord, DocumentStore, FileRecord, FileWithData, Inserted,
    NewDocument, NewFile, StoredChunk, VectorStoreRecord,
};
use crate::store::webhooks::{
    AttemptRecord, Delivery, DeliveryFilter, NewDelivery, NewWebhook, Webhook,
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
    fn create_team(&self, team: NewTeam) -> BoxFuture<'_, StoreResult<Team>> {
        self.run(move |mut c, now| finish(teams::create(&mut c, now, team)))
    }

    fn team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<Option<Team>>> {
        self.run(move |c, _| finish(teams::get(&c, &id)))
    }

    fn teams(&self) -> BoxFuture<'_, StoreResult<Vec<Team>>> {
        self.run(|c, _| finish(teams::list(&c)))
    }

    fn update_team(&self, id: TeamId, patch: TeamPatch) -> BoxFuture<'_, StoreResult<Team>> {
        self.run(move |mut c, now| finish(teams::update(&mut c, now, id, patch)))
    }

    fn delete_team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |mut c, _| finish(teams::delete(&mut c, &id)))
    }

    fn create_cert_identity(
        &self,
        identity: NewCertIdentity,
    ) -> BoxFuture<'_, StoreResult<CertIdentity>> {
        self.run(move |mut c, now| finish(cert_identities::create(&mut c, now, identity)))
    }

    fn cert_identities(&self) -> BoxFuture<'_, StoreResult<Vec<CertIdentity>>> {
        self.run(|c, _| finish(cert_identities::list(&c)))
    }

    fn delete_cert_identity(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| finish(cert_identities::delete(&c, &id)))
    }

    fn charge_and_store(
        &self,
        charges: Vec<UsageRecord>,
        batch: Vec<crate::store::responses::StoredResponse>,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            usage::charge_in(&tx, &charges)?;
            finish(stored_responses::put_in(&tx, &batch))?;
            tx.commit()?;
            Ok(())
        })
    }

    fn response(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<crate::store::responses::StoredResponse>>> {
        self.run(move |c, _| finish(stored_responses::get(&c, &team, &id)))
    }

    fn delete_response(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| finish(stored_responses::delete(&c, &team, &id)))
    }

    fn purge_responses(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| finish(stored_responses::purge(&c, before)))
    }

    fn create_key(&self, key: NewKey) -> BoxFuture<'_, StoreResult<CreatedKey>> {
        self.run(move |mut c, now| finish(keys::create(&mut c, now, key)))
    }

    fn import_key(
        &self,
        key: NewKey,
        hash: [u8; 32],
        prefix: String,
    ) -> BoxFuture<'_, StoreResult<KeyInfo>> {
        self.run(move |mut c, now| finish(keys::import(&mut c, now, key, hash, prefix)))
    }

    fn key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
        self.run(move |c, now| finish(keys::get(&c, now, &id)))
    }

    fn key_by_hash(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
        self.run(move |c, now| finish(keys::by_hash(&c, now, &hash)))
    }

    fn authenticate(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
        self.run(move |c, now| finish(keys::authenticate(&c, now, &hash)))
    }

    fn keys(&self, team: Option<TeamId>) -> BoxFuture<'_, StoreResult<Vec<KeyInfo>>> {
        self.run(move |c, now| finish(keys::list(&c, now, team.as_ref())))
    }

    fn rotate_key(&self, id: KeyId, grace_ms: i64) -> BoxFuture<'_, StoreResult<CreatedKey>> {
        self.run(move |mut c, now| finish(keys::rotate(&mut c, now, id, grace_ms)))
    }

    fn revoke_key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<KeyInfo>> {
        self.run(move |mut c, now| finish(keys::revoke(&mut c, now, id)))
    }

    fn touch_key(&self, id: KeyId, at: UnixMillis) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| finish(keys::touch(&c, id, at)))
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

    fn budget(&self, scope: BudgetScope) -> BoxFuture<'_, StoreResult<Option<BudgetState>>> {
        self.run(move |c, _| budgets::get(c, &scope))
    }

    fn reserve(
        &self,
        scopes: Vec<BudgetScope>,
        amount: Micros,
    ) -> BoxFuture<'_, StoreResult<ReserveOutcome>> {
        self.run(move |c, now| budgets::reserve(c, now, scopes, amount))
    }

    fn settle(&self, id: ReservationId, actual: Micros) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| budgets::settle(c, id, actual))
    }

    fn complete(&self, id: ReservationId, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| budgets::complete(c, id, &usage))
    }

    fn settle_stale(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| budgets::settle_stale(c, before))
    }

    fn create_webhook(&self, webhook: NewWebhook) -> BoxFuture<'_, StoreResult<Webhook>> {
        self.run(move |c, now| finish(subscriptions::create(&c, now, webhook)))
    }

    fn webhooks(&self) -> BoxFuture<'_, StoreResult<Vec<Webhook>>> {
        self.run(|c, _| finish(subscriptions::list(&c)))
    }

    fn delete_webhook(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| finish(subscriptions::delete(&c, &id)))
    }

    fn rotate_webhook_secret(
        &self,
        id: String,
        secret: String,
        grace_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Option<Webhook>>> {
        self.run(move |c, now| finish(subscriptions::rotate(&c, now, &id, &secret, grace_ms)))
    }

    fn enqueue_deliveries(&self, batch: Vec<NewDelivery>) -> BoxFuture<'_, StoreResult<Vec<i64>>> {
        self.run(move |c, now| webhooks::enqueue(c, now, &batch))
    }

    fn pending_deliveries(
        &self,
        webhook_id: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>> {
        self.run(move |c, _| webhooks::pending(c, &webhook_id, after_seq, limit))
    }

    fn record_attempts(&self, records: Vec<AttemptRecord>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| webhooks::record_attempts(c, &records))
    }

    fn deliveries(
        &self,
        webhook_id: String,
        filter: DeliveryFilter,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>> {
        self.run(move |c, _| webhooks::list_deliveries(c, &webhook_id, &filter))
    }

    fn redrive(
        &self,
        webhook_id: String,
        seqs: Option<Vec<i64>>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, now| webhooks::redrive(c, now, &webhook_id, seqs.as_deref()))
    }

    fn prune_deliveries(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| webhooks::prune(c, before))
    }
}

impl DocumentStore for SqliteStore {
    fn insert_document(&self, document: NewDocument) -> BoxFuture<'_, StoreResult<Inserted>> {
        self.run(move |mut c, now| {
            finish(async move { documents::insert(c.begin().await?, now, document).await })
        })
    }

    fn find_document(
        &self,
        team: TeamId,
        collection: String,
        sha256: String,
        file_id: Option<String>,
    ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>> {
        self.run(move |c, _| {
            finish(documents::find(
                &c,
                &team,
                &collection,
                &sha256,
                file_id.as_deref(),
            ))
        })
    }

    fn document(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>> {
        self.run(move |c, _| finish(documents::get(&c, &team, &id)))
    }

    fn documents(&self, filter: DocumentFilter) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>> {
        self.run(move |c, _| finish(documents::list(&c, &filter)))
    }

    fn all_documents(&self) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>> {
        self.run(|c, _| finish(documents::all(&c)))
    }

    fn delete_document(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| finish(documents::delete(&c, &team, &id)))
    }

    fn chunks(&self, ids: Vec<u64>) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>> {
        self.run(move |c, _| finish(Bulk::chunks(&c, &ids)))
    }

    fn chunk_vectors(&self, model: String) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>> {
        self.run(move |c, _| finish(documents::chunk_vectors(&c, &model)))
    }

    fn document_vectors(&self, id: String) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>> {
        self.run(move |c, _| finish(documents::document_vectors(&c, &id)))
    }

    fn document_chunks(&self, id: String) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>> {
        self.run(move |c, _| finish(documents::document_chunks(&c, &id)))
    }

    fn replace_vectors(
        &self,
        id: String,
        model: String,
        vectors: Vec<(u64, Vec<u8>)>,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| {
            finish(async move {
                documents::replace_vectors(c.begin().await?, &id, &model, &vectors).await
            })
        })
    }

    fn create_file(&self, file: NewFile) -> BoxFuture<'_, StoreResult<FileRecord>> {
        self.run(move |mut c, now| finish(files::create_file(&mut c, now, file)))
    }

    fn file(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<Option<FileWithData>>> {
        self.run(move |c, _| finish(files::file(&c, &team, &id)))
    }

    fn files(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<FileRecord>>> {
        self.run(move |c, _| finish(files::files(&c, &team)))
    }

    fn delete_file(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| finish(files::delete_file(&c, &team, &id)))
    }

    fn create_vector_store(
        &self,
        store: VectorStoreRecord,
    ) -> BoxFuture<'_, StoreResult<VectorStoreRecord>> {
        self.run(move |mut c, now| finish(files::create_vector_store(&mut c, now, store)))
    }

    fn vector_store(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<VectorStoreRecord>>> {
        self.run(move |c, _| finish(files::vector_store(&c, &team, &id)))
    }

    fn vector_stores(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<VectorStoreRecord>>> {
        self.run(move |c, _| finish(files::vector_stores(&c, &team)))
    }

    fn delete_vector_store(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |mut c, _| finish(files::delete_vector_store(&mut c, &team, &id)))
    }
}

#[cfg(test)]
mod tests;

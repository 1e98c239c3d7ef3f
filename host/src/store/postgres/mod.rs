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

use deadpool_postgres::{
    GenericClient, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime,
};
use futures_util::future::BoxFuture;
use tokio_postgres::NoTls;
use tokio_postgres::config::SslMode;

use super::cert_identities::sql as cert_identities;
use super::documents::bulk::Bulk;
use super::documents::{
    ChunkVector, DocumentFilter, DocumentRecord, DocumentStore, FileRecord, FileWithData, Inserted,
    NewDocument, NewFile, StoredChunk, VectorStoreRecord,
};
use super::documents::{files, sql as documents};
use super::journal_index::postgres as journal_index;
use super::keys::sql as keys;
use super::policies::postgres as policies;
use super::responses::sql as stored_responses;
use super::sql::postgres::Pg;
use super::sql::{Conn, Tx};
use super::teams::sql as teams;
use super::webhooks::subscriptions;
use super::webhooks::{AttemptRecord, Delivery, DeliveryFilter, NewDelivery, NewWebhook, Webhook};
use super::{
    BudgetScope, BudgetState, CertIdentity, Clock, CreatedKey, JournalRow, JournalScan, KeyId,
    KeyInfo, Micros, NewCertIdentity, NewKey, NewTeam, PolicyKind, ReservationId, ReserveOutcome,
    Store, StoreError, StoreResult, StoredPolicy, Team, TeamId, TeamPatch, TlogHead, UnixMillis,
    UsageFilter, UsageRecord, UsageRow, responses::StoredResponse,
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
    fn run<'a, T, F, Fut>(&'a self, f: F) -> BoxFuture<'a, StoreResult<T>>
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
    fn create_team(&self, team: NewTeam) -> BoxFuture<'_, StoreResult<Team>> {
        self.run(move |c, now| async move { teams::create(&mut Pg(c), now, team).await })
    }

    fn team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<Option<Team>>> {
        self.run(move |c, _| async move { teams::get(&Pg(c), &id).await })
    }

    fn teams(&self) -> BoxFuture<'_, StoreResult<Vec<Team>>> {
        self.run(|c, _| async move { teams::list(&Pg(c)).await })
    }

    fn update_team(&self, id: TeamId, patch: TeamPatch) -> BoxFuture<'_, StoreResult<Team>> {
        self.run(move |c, now| async move { teams::update(&mut Pg(c), now, id, patch).await })
    }

    fn delete_team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { teams::delete(&mut Pg(c), &id).await })
    }

    fn create_key(&self, key: NewKey) -> BoxFuture<'_, StoreResult<CreatedKey>> {
        self.run(move |c, now| async move { keys::create(&mut Pg(c), now, key).await })
    }

    fn import_key(
        &self,
        key: NewKey,
        hash: [u8; 32],
        prefix: String,
    ) -> BoxFuture<'_, StoreResult<KeyInfo>> {
        self.run(
            move |c, now| async move { keys::import(&mut Pg(c), now, key, hash, prefix).await },
        )
    }

    fn key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
        self.run(move |c, now| async move { keys::get(&Pg(c), now, &id).await })
    }

    fn key_by_hash(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
        self.run(move |c, now| async move { keys::by_hash(&Pg(c), now, &hash).await })
    }

    fn authenticate(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>> {
        self.run(move |c, now| async move { keys::authenticate(&Pg(c), now, &hash).await })
    }

    fn keys(&self, team: Option<TeamId>) -> BoxFuture<'_, StoreResult<Vec<KeyInfo>>> {
        self.run(move |c, now| async move { keys::list(&Pg(c), now, team.as_ref()).await })
    }

    fn rotate_key(&self, id: KeyId, grace_ms: i64) -> BoxFuture<'_, StoreResult<CreatedKey>> {
        self.run(move |c, now| async move { keys::rotate(&mut Pg(c), now, id, grace_ms).await })
    }

    fn revoke_key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<KeyInfo>> {
        self.run(move |c, now| async move { keys::revoke(&mut Pg(c), now, id).await })
    }

    fn touch_key(&self, id: KeyId, at: UnixMillis) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { keys::touch(&Pg(c), id, at).await })
    }

    fn record_usage(&self, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { usage::record(&c, std::slice::from_ref(&usage)).await })
    }

    fn charge(&self, batch: Vec<UsageRecord>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { usage::charge_in(&c, &batch).await })
    }

    fn usage(&self, filter: UsageFilter) -> BoxFuture<'_, StoreResult<Vec<UsageRow>>> {
        self.run(move |c, _| async move { usage::query(&c, &filter).await })
    }

    fn budget(&self, scope: BudgetScope) -> BoxFuture<'_, StoreResult<Option<BudgetState>>> {
        self.run(move |c, _| async move { budgets::get(&c, &scope).await })
    }

    fn reserve(
        &self,
        scopes: Vec<BudgetScope>,
        amount: Micros,
    ) -> BoxFuture<'_, StoreResult<ReserveOutcome>> {
        self.run(
            move |mut c, now| async move { budgets::reserve(&mut c, now, scopes, amount).await },
        )
    }

    fn settle(&self, id: ReservationId, actual: Micros) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| async move { budgets::settle(&mut c, id, actual).await })
    }

    fn complete(&self, id: ReservationId, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| async move { budgets::complete(&mut c, id, &usage).await })
    }

    fn settle_stale(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |mut c, _| async move { budgets::settle_stale(&mut c, before).await })
    }

    fn create_webhook(&self, webhook: NewWebhook) -> BoxFuture<'_, StoreResult<Webhook>> {
        self.run(move |c, now| async move { subscriptions::create(&Pg(c), now, webhook).await })
    }

    fn webhooks(&self) -> BoxFuture<'_, StoreResult<Vec<Webhook>>> {
        self.run(|c, _| async move { subscriptions::list(&Pg(c)).await })
    }

    fn delete_webhook(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { subscriptions::delete(&Pg(c), &id).await })
    }

    fn rotate_webhook_secret(
        &self,
        id: String,
        secret: String,
        grace_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Option<Webhook>>> {
        self.run(move |c, now| async move {
            subscriptions::rotate(&Pg(c), now, &id, &secret, grace_ms).await
        })
    }

    fn enqueue_deliveries(&self, batch: Vec<NewDelivery>) -> BoxFuture<'_, StoreResult<Vec<i64>>> {
        self.run(move |mut c, now| async move { webhooks::enqueue(&mut c, now, &batch).await })
    }

    fn pending_deliveries(
        &self,
        webhook_id: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>> {
        self.run(
            move |c, _| async move { webhooks::pending(&c, &webhook_id, after_seq, limit).await },
        )
    }

    fn record_attempts(&self, records: Vec<AttemptRecord>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| async move { webhooks::record_attempts(&mut c, &records).await })
    }

    fn deliveries(
        &self,
        webhook_id: String,
        filter: DeliveryFilter,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>> {
        self.run(
            move |c, _| async move { webhooks::list_deliveries(&c, &webhook_id, &filter).await },
        )
    }

    fn redrive(
        &self,
        webhook_id: String,
        seqs: Option<Vec<i64>>,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, now| async move {
            webhooks::redrive(&c, now, &webhook_id, seqs.as_deref()).await
        })
    }

    fn prune_deliveries(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| async move { webhooks::prune(&c, before).await })
    }

    fn claim_webhook(
        &self,
        id: String,
        owner: String,
        until: UnixMillis,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, now| async move { webhooks::claim(&c, now, &id, &owner, until).await })
    }

    fn create_cert_identity(
        &self,
        identity: NewCertIdentity,
    ) -> BoxFuture<'_, StoreResult<CertIdentity>> {
        self.run(
            move |c, now| async move { cert_identities::create(&mut Pg(c), now, identity).await },
        )
    }

    fn cert_identities(&self) -> BoxFuture<'_, StoreResult<Vec<CertIdentity>>> {
        self.run(|c, _| async move { cert_identities::list(&Pg(c)).await })
    }

    fn delete_cert_identity(&self, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { cert_identities::delete(&Pg(c), &id).await })
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

    fn response(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<StoredResponse>>> {
        self.run(move |c, _| async move { stored_responses::get(&Pg(c), &team, &id).await })
    }

    fn delete_response(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { stored_responses::delete(&Pg(c), &team, &id).await })
    }

    fn purge_responses(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| async move { stored_responses::purge(&Pg(c), before).await })
    }

    fn save_policy(&self, policy: StoredPolicy, activate: bool) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |mut c, _| async move {
            let tx = c.transaction().await?;
            policies::save(&tx, &policy, activate).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn index_journal(&self, rows: Vec<JournalRow>) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { journal_index::add(&c, &rows).await })
    }

    fn journal_indexed_to(&self, replica: String) -> BoxFuture<'_, StoreResult<i64>> {
        self.run(move |c, _| async move { journal_index::head(&c, &replica).await })
    }

    fn journal_rows(&self, scan: JournalScan) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.run(move |c, _| async move { journal_index::page(&c, &scan).await })
    }

    fn journal_chain(
        &self,
        replica: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        self.run(
            move |c, _| async move { journal_index::chain(&c, &replica, after_seq, limit).await },
        )
    }

    fn journal_replicas(&self) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        self.run(move |c, _| async move { journal_index::replicas(&c).await })
    }

    fn publish_tlog_head(&self, replica: String, head: TlogHead) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move { journal_index::publish_head(&c, &replica, &head).await })
    }

    fn tlog_head(&self, replica: String) -> BoxFuture<'_, StoreResult<Option<TlogHead>>> {
        self.run(move |c, _| async move { journal_index::tlog_head(&c, &replica).await })
    }

    fn prune_journal_index(
        &self,
        replica: String,
        through_seq: i64,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        self.run(move |c, _| async move { journal_index::prune(&c, &replica, through_seq).await })
    }

    fn activate_policy(&self, kind: PolicyKind, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { policies::activate(&c, kind, &id).await })
    }

    fn policies(
        &self,
        kind: PolicyKind,
    ) -> BoxFuture<'_, StoreResult<(Vec<StoredPolicy>, Option<String>)>> {
        self.run(move |c, _| async move { policies::list(&c, kind).await })
    }
}

impl DocumentStore for PgStore {
    fn insert_document(&self, document: NewDocument) -> BoxFuture<'_, StoreResult<Inserted>> {
        self.run(move |c, now| async move {
            documents::insert(Pg(c).begin().await?, now, document).await
        })
    }

    fn find_document(
        &self,
        team: TeamId,
        collection: String,
        sha256: String,
        file_id: Option<String>,
    ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>> {
        self.run(move |c, _| async move {
            documents::find(&Pg(c), &team, &collection, &sha256, file_id.as_deref()).await
        })
    }

    fn document(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<DocumentRecord>>> {
        self.run(move |c, _| async move { documents::get(&Pg(c), &team, &id).await })
    }

    fn documents(&self, filter: DocumentFilter) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>> {
        self.run(move |c, _| async move { documents::list(&Pg(c), &filter).await })
    }

    fn all_documents(&self) -> BoxFuture<'_, StoreResult<Vec<DocumentRecord>>> {
        self.run(|c, _| async move { documents::all(&Pg(c)).await })
    }

    fn delete_document(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { documents::delete(&Pg(c), &team, &id).await })
    }

    fn chunks(&self, ids: Vec<u64>) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>> {
        self.run(move |c, _| async move { Pg(c).chunks(&ids).await })
    }

    fn chunk_vectors(&self, model: String) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>> {
        self.run(move |c, _| async move { documents::chunk_vectors(&Pg(c), &model).await })
    }

    fn document_vectors(&self, id: String) -> BoxFuture<'_, StoreResult<Vec<ChunkVector>>> {
        self.run(move |c, _| async move { documents::document_vectors(&Pg(c), &id).await })
    }

    fn document_chunks(&self, id: String) -> BoxFuture<'_, StoreResult<Vec<StoredChunk>>> {
        self.run(move |c, _| async move { documents::document_chunks(&Pg(c), &id).await })
    }

    fn replace_vectors(
        &self,
        id: String,
        model: String,
        vectors: Vec<(u64, Vec<u8>)>,
    ) -> BoxFuture<'_, StoreResult<()>> {
        self.run(move |c, _| async move {
            documents::replace_vectors(Pg(c).begin().await?, &id, &model, &vectors).await
        })
    }

    fn create_file(&self, file: NewFile) -> BoxFuture<'_, StoreResult<FileRecord>> {
        self.run(move |c, now| async move { files::create_file(&mut Pg(c), now, file).await })
    }

    fn file(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<Option<FileWithData>>> {
        self.run(move |c, _| async move { files::file(&Pg(c), &team, &id).await })
    }

    fn files(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<FileRecord>>> {
        self.run(move |c, _| async move { files::files(&Pg(c), &team).await })
    }

    fn delete_file(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(move |c, _| async move { files::delete_file(&Pg(c), &team, &id).await })
    }

    fn create_vector_store(
        &self,
        store: VectorStoreRecord,
    ) -> BoxFuture<'_, StoreResult<VectorStoreRecord>> {
        self.run(
            move |c, now| async move { files::create_vector_store(&mut Pg(c), now, store).await },
        )
    }

    fn vector_store(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<VectorStoreRecord>>> {
        self.run(move |c, _| async move { files::vector_store(&Pg(c), &team, &id).await })
    }

    fn vector_stores(&self, team: TeamId) -> BoxFuture<'_, StoreResult<Vec<VectorStoreRecord>>> {
        self.run(move |c, _| async move { files::vector_stores(&Pg(c), &team).await })
    }

    fn delete_vector_store(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        self.run(
            move |c, _| async move { files::delete_vector_store(&mut Pg(c), &team, &id).await },
        )
    }
}

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

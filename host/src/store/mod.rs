//! The store: where teams, keys, usage and budget counters live. Callers see only the [`Store`]
//! trait; [`sqlite::SqliteStore`] is the embedded back end and [`postgres::PgStore`] the one
//! replicas share (`docs/STORE.md`); [`rules`] is what both apply around their SQL.
//!
//! A resource written once for both back ends is a folder: its types in `mod.rs`, its statements
//! (each in both dialects, side by side) and its steps in `sql.rs`, over [`sql`]'s transaction
//! traits ([`teams`], [`keys`], [`cert_identities`], [`webhooks`]' subscriptions, [`responses`]'
//! reads). The rest still lives per back end in `sqlite/` and `postgres/`.
//!
//! The trait is object-safe (`Arc<dyn Store>`): each method returns a boxed future rather than
//! being an `async fn`, because `async fn` in traits cannot be called through `dyn` on Rust 1.95.
//! The box costs one allocation per call, nothing next to a database round trip; the hot path
//! (authenticating a key) is meant to hit an in-memory cache in front of the store.

pub mod cert_identities;
pub mod clock;
pub mod documents;
pub mod group_commit;
pub mod journal_index;
pub mod keys;
pub mod policies;
pub mod postgres;
pub mod responses;
pub(crate) mod rules;
pub(crate) mod sql;
pub mod sqlite;
pub mod teams;
pub mod types;
pub mod webhooks;

use futures_util::future::BoxFuture;
use webhooks::{AttemptRecord, Delivery, DeliveryFilter, NewDelivery, NewWebhook, Webhook};

pub use cert_identities::{CertIdentity, CertSource, NewCertIdentity};
pub use clock::{Clock, ManualClock, SystemClock, UnixMillis};
pub use journal_index::{JournalRow, JournalScan, TlogHead};
pub use keys::{CreatedKey, KeyInfo, KeyState, NewKey};
pub use policies::{PolicyKind, StoredPolicy};
pub use teams::{NewTeam, Team, TeamPatch};
pub use types::{
    BudgetScope, BudgetState, KeyId, Micros, Plan, ReservationId, ReserveOutcome, TeamId,
    UsageFilter, UsageRecord, UsageRow,
};

/// Every way a store call can fail. Business outcomes that are not failures (an unknown hash, a
/// budget that cannot cover a reservation) are `Ok` values, not errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("team {0} not found")]
    TeamNotFound(TeamId),
    #[error("key {0} not found")]
    KeyNotFound(KeyId),
    #[error("key {0} is {1} and cannot be rotated")]
    KeyNotRotatable(KeyId, &'static str),
    #[error("reservation {0} not found (already settled?)")]
    ReservationNotFound(i64),
    #[error("invalid {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("database schema version {found} is newer than this build knows ({known})")]
    SchemaTooNew { found: i64, known: i64 },
    #[error("stored row is corrupt: {0}")]
    Corrupt(String),
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("opening the database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("store worker thread failed: {0}")]
    Worker(String),
    #[error("postgres: {}", postgres::describe(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// No connection from the pool: the server refused or did not answer in time, or the pool
    /// waited too long for a free connection.
    #[error("postgres connection pool: {0}")]
    Pool(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The gateway's durable state. Every method is safe to call concurrently from many tasks; none
/// blocks the async runtime.
pub trait Store: Send + Sync + std::fmt::Debug {
    // Teams.
    fn create_team(&self, team: NewTeam) -> BoxFuture<'_, StoreResult<Team>>;
    fn team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<Option<Team>>>;
    fn teams(&self) -> BoxFuture<'_, StoreResult<Vec<Team>>>;
    fn update_team(&self, id: TeamId, patch: TeamPatch) -> BoxFuture<'_, StoreResult<Team>>;
    /// Deletes the team, its keys (which stop authenticating at once) and its budget counters;
    /// usage history is kept. `false` when there was no such team.
    fn delete_team(&self, id: TeamId) -> BoxFuture<'_, StoreResult<bool>>;

    // Keys.
    /// Creates a key; the secret is in the answer and nowhere else (the store keeps its hash).
    fn create_key(&self, key: NewKey) -> BoxFuture<'_, StoreResult<CreatedKey>>;
    /// Adds a key known only by its hash (config-file keys, the bootstrap admin key); if a key
    /// with this hash exists already, returns it unchanged.
    fn import_key(
        &self,
        key: NewKey,
        hash: [u8; 32],
        prefix: String,
    ) -> BoxFuture<'_, StoreResult<KeyInfo>>;
    fn key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>>;
    /// The key with this secret hash, in whatever state it is (see [`KeyInfo::state`]).
    fn key_by_hash(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>>;
    /// The key with this secret hash only if it authenticates now (not revoked, not expired,
    /// not past its rotation grace); the check is in the query, against the store's clock.
    fn authenticate(&self, hash: [u8; 32]) -> BoxFuture<'_, StoreResult<Option<KeyInfo>>>;
    /// Keys without secrets, oldest first; all teams' when `team` is `None`.
    fn keys(&self, team: Option<TeamId>) -> BoxFuture<'_, StoreResult<Vec<KeyInfo>>>;
    /// A new key for the same team and settings; the old one stays valid until now + `grace_ms`
    /// (0: it stops at once) and then never again.
    fn rotate_key(&self, id: KeyId, grace_ms: i64) -> BoxFuture<'_, StoreResult<CreatedKey>>;
    /// When this returns, [`Store::authenticate`] no longer finds the key. Idempotent.
    fn revoke_key(&self, id: KeyId) -> BoxFuture<'_, StoreResult<KeyInfo>>;
    /// Records that the key was used at `at` (keeps the latest).
    fn touch_key(&self, id: KeyId, at: UnixMillis) -> BoxFuture<'_, StoreResult<()>>;

    // Usage.
    fn record_usage(&self, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Records a batch of completed requests and adds each one's spend to its team's and key's
    /// budget counters, in one transaction: how the gateway persists what the in-memory ledger
    /// (`budget`) settled.
    fn charge(&self, batch: Vec<UsageRecord>) -> BoxFuture<'_, StoreResult<()>>;
    /// Where a group commit's writer runs best against this store (`group_commit::Runs`): a
    /// store whose calls block a thread (SQLite) runs them inline on the writer's own thread.
    fn group_commits_run(&self) -> group_commit::Runs {
        group_commit::Runs::Task
    }
    /// Whether charges may ride the journal's fsync (docs/STORE.md, "Charges ride the journal's
    /// fsync"): the store keeps a marker ([`Store::charge_and_mark`]) and finds usage rows by
    /// request ([`Store::charged`]); those two are only called when this says yes. PostgreSQL
    /// says no (each replica would need a marker of its own, and its charges settle through the
    /// shared ledger).
    fn charges_ride_journal(&self) -> bool {
        false
    }
    /// [`Store::charge`], and the journal seq from which charges may be missing from the store,
    /// in one transaction.
    fn charge_and_mark(
        &self,
        batch: Vec<UsageRecord>,
        from_seq: u64,
    ) -> BoxFuture<'_, StoreResult<()>> {
        let _ = from_seq;
        self.charge(batch)
    }
    /// The seq [`Store::charge_and_mark`] left last (`None`: never).
    fn charges_marker(&self) -> BoxFuture<'_, StoreResult<Option<u64>>> {
        Box::pin(async { Ok(None) })
    }
    /// The usage rows of these requests (by request id).
    fn charged(&self, requests: Vec<String>) -> BoxFuture<'_, StoreResult<Vec<UsageRecord>>> {
        let _ = requests;
        Box::pin(async {
            Err(StoreError::Invalid {
                field: "request_id",
                reason: "this store does not keep usage rows by request".into(),
            })
        })
    }
    /// Usage summed per key, model and actor, filtered; ordered by key, model, actor.
    fn usage(&self, filter: UsageFilter) -> BoxFuture<'_, StoreResult<Vec<UsageRow>>>;

    // Budgets.
    fn budget(&self, scope: BudgetScope) -> BoxFuture<'_, StoreResult<Option<BudgetState>>>;
    /// Atomically holds `amount` against every scope (all or none): admitted only if for each
    /// limited scope `spent + reserved + amount <= limit`. Unlimited scopes are still counted.
    fn reserve(
        &self,
        scopes: Vec<BudgetScope>,
        amount: Micros,
    ) -> BoxFuture<'_, StoreResult<ReserveOutcome>>;
    /// Releases the reservation and charges `actual` instead, on every scope it was made on.
    /// `actual` above the reserved amount is charged in full (spend is never under-recorded).
    fn settle(&self, id: ReservationId, actual: Micros) -> BoxFuture<'_, StoreResult<()>>;
    /// Settles the reservation at `usage.spend` and records `usage`, in one transaction: the
    /// usage report and the budget counters never disagree, whatever stops the process.
    fn complete(&self, id: ReservationId, usage: UsageRecord) -> BoxFuture<'_, StoreResult<()>>;
    /// Settles every reservation made before `before` at its full amount (never under-charge):
    /// those left by a process that stopped mid-request. Returns how many there were.
    fn settle_stale(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>>;

    // Webhooks: subscriptions and their outbox (`docs/WEBHOOKS.md`).
    fn create_webhook(&self, webhook: NewWebhook) -> BoxFuture<'_, StoreResult<Webhook>>;
    /// Every subscription, oldest first (secrets included: the caller hides them).
    fn webhooks(&self) -> BoxFuture<'_, StoreResult<Vec<Webhook>>>;
    /// Deletes the subscription and its outbox. `false` when there was no such subscription.
    fn delete_webhook(&self, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// A new signing secret; the old one keeps signing for `grace_ms` (0: stops at once).
    /// `None` when there is no such subscription.
    fn rotate_webhook_secret(
        &self,
        id: String,
        secret: String,
        grace_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Option<Webhook>>>;
    /// Persists a batch of deliveries in one transaction; each one's seq, in order (0 for a
    /// subscription deleted meanwhile, which takes nothing).
    fn enqueue_deliveries(&self, batch: Vec<NewDelivery>) -> BoxFuture<'_, StoreResult<Vec<i64>>>;
    /// Up to `limit` pending deliveries of the subscription after `after_seq`, oldest first.
    fn pending_deliveries(
        &self,
        webhook_id: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>>;
    /// Records attempts and moves each one's delivery to its outcome, all in one transaction.
    fn record_attempts(&self, records: Vec<AttemptRecord>) -> BoxFuture<'_, StoreResult<()>>;
    /// The subscription's deliveries, newest first, with their attempts.
    fn deliveries(
        &self,
        webhook_id: String,
        filter: DeliveryFilter,
    ) -> BoxFuture<'_, StoreResult<Vec<Delivery>>>;
    /// Dead letters back to pending (all of the subscription's, or the given seqs).
    fn redrive(
        &self,
        webhook_id: String,
        seqs: Option<Vec<i64>>,
    ) -> BoxFuture<'_, StoreResult<u64>>;
    /// Deletes delivered and skipped deliveries finished before `before`.
    fn prune_deliveries(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>>;
    /// Takes or keeps the right to deliver the subscription's outbox until `until`, for `owner`
    /// (a replica): granted when nobody holds it, `owner` does, or the holder's lease has ended
    /// (by the store's clock). `false`: another replica holds it. A back end only one process
    /// can open (SQLite) grants it always.
    fn claim_webhook(
        &self,
        id: String,
        owner: String,
        until: UnixMillis,
    ) -> BoxFuture<'_, StoreResult<bool>> {
        let _ = (id, owner, until);
        Box::pin(async { Ok(true) })
    }

    // Policy versions shared by replicas (`policies/`). A back end only one process opens
    // (SQLite) keeps none: that process holds its versions in memory.
    /// Stores a version; with `activate`, it becomes its kind's active one, in one transaction.
    fn save_policy(&self, policy: StoredPolicy, activate: bool) -> BoxFuture<'_, StoreResult<()>> {
        let _ = (policy, activate);
        Box::pin(async { Ok(()) })
    }
    /// Makes a stored version its kind's active one; `false` when there is no such version.
    fn activate_policy(&self, kind: PolicyKind, id: String) -> BoxFuture<'_, StoreResult<bool>> {
        let _ = (kind, id);
        Box::pin(async { Ok(true) })
    }
    /// Every stored version of a kind, oldest first, and the id of the active one.
    fn policies(
        &self,
        kind: PolicyKind,
    ) -> BoxFuture<'_, StoreResult<(Vec<StoredPolicy>, Option<String>)>> {
        let _ = kind;
        Box::pin(async { Ok((Vec::new(), None)) })
    }

    // The journal's index for replicas (`journal_index/`); SQLite keeps none.
    /// Adds rows (a row already there is left as it is).
    fn index_journal(&self, rows: Vec<JournalRow>) -> BoxFuture<'_, StoreResult<()>> {
        let _ = rows;
        Box::pin(async { Ok(()) })
    }
    /// The highest seq of `replica`'s chain indexed so far (0: none).
    fn journal_indexed_to(&self, replica: String) -> BoxFuture<'_, StoreResult<i64>> {
        let _ = replica;
        Box::pin(async { Ok(0) })
    }
    /// A page of indexed rows in (timestamp, replica, seq) order.
    fn journal_rows(&self, scan: JournalScan) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        let _ = scan;
        Box::pin(async { Ok(Vec::new()) })
    }
    /// `replica`'s indexed rows in seq order after `after_seq`, at most `limit` (verification).
    fn journal_chain(
        &self,
        replica: String,
        after_seq: i64,
        limit: u32,
    ) -> BoxFuture<'_, StoreResult<Vec<JournalRow>>> {
        let _ = (replica, after_seq, limit);
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Every replica with an indexed chain.
    fn journal_replicas(&self) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        Box::pin(async { Ok(Vec::new()) })
    }
    /// Keeps `head` as `replica`'s signed tree head, unless a larger one is kept.
    fn publish_tlog_head(&self, replica: String, head: TlogHead) -> BoxFuture<'_, StoreResult<()>> {
        let _ = (replica, head);
        Box::pin(async { Ok(()) })
    }
    /// `replica`'s latest published tree head.
    fn tlog_head(&self, replica: String) -> BoxFuture<'_, StoreResult<Option<TlogHead>>> {
        let _ = replica;
        Box::pin(async { Ok(None) })
    }
    /// After retention pruned `replica`'s chain up to `through_seq`: the index follows.
    fn prune_journal_index(
        &self,
        replica: String,
        through_seq: i64,
    ) -> BoxFuture<'_, StoreResult<u64>> {
        let _ = (replica, through_seq);
        Box::pin(async { Ok(0) })
    }

    // Certificate identities (mutual TLS).
    /// `Invalid` (field `match`) when another identity has the same matcher.
    fn create_cert_identity(
        &self,
        identity: NewCertIdentity,
    ) -> BoxFuture<'_, StoreResult<CertIdentity>>;
    fn cert_identities(&self) -> BoxFuture<'_, StoreResult<Vec<CertIdentity>>>;
    /// `false` when there was no such identity.
    fn delete_cert_identity(&self, id: String) -> BoxFuture<'_, StoreResult<bool>>;

    // Stored responses (the Responses API).
    /// Settled usage (as [`Store::charge`]) and stored responses in one transaction, committed
    /// when this returns (a continuation sent at once finds them). A response whose team was
    /// deleted meanwhile is skipped.
    fn charge_and_store(
        &self,
        charges: Vec<UsageRecord>,
        responses: Vec<responses::StoredResponse>,
    ) -> BoxFuture<'_, StoreResult<()>>;
    /// Only within `team`: another team's id is `None`.
    fn response(
        &self,
        team: TeamId,
        id: String,
    ) -> BoxFuture<'_, StoreResult<Option<responses::StoredResponse>>>;
    fn delete_response(&self, team: TeamId, id: String) -> BoxFuture<'_, StoreResult<bool>>;
    /// Deletes responses created before `before`; how many.
    fn purge_responses(&self, before: UnixMillis) -> BoxFuture<'_, StoreResult<u64>>;
}

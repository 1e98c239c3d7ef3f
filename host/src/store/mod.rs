//! The store: where teams, keys, usage and budget counters live. Callers see only the [`Store`]
//! trait; [`sqlite::SqliteStore`] is the embedded back end and [`postgres::PgStore`] the one
//! replicas share (`docs/STORE.md`); [`rules`] is what both apply around their SQL.
//!
//! A resource written once for both back ends is a folder: its types and its small trait
//! ([`TeamStore`], …) in `mod.rs`, its statements (each in both dialects, side by side) and its
//! steps in `sql.rs`, over [`sql`]'s transaction traits; the trait's impl is written once, in an
//! `impl_…!` macro each back end invokes with its "run a step" macro ([`teams`], [`keys`],
//! [`cert_identities`], [`mcp_servers`], [`webhooks`]' subscriptions, [`responses`]' reads, [`documents`], [`ingest_jobs`]).
//! [`Store`] is their supertrait plus what each back end does its own way in `sqlite/` and
//! `postgres/` (usage, budgets, the webhook outbox).
//!
//! The trait is object-safe (`Arc<dyn Store>`): each method returns a boxed future rather than
//! being an `async fn`, because `async fn` in traits cannot be called through `dyn` on Rust 1.95.
//! The box costs one allocation per call, nothing next to a database round trip; the hot path
//! (authenticating a key) is meant to hit an in-memory cache in front of the store.

pub mod budgets;
pub mod cert_identities;
pub mod clock;
pub mod documents;
pub mod group_commit;
pub mod ingest_jobs;
pub mod journal_index;
pub mod keys;
pub mod mcp_servers;
pub mod policies;
pub mod postgres;
pub mod responses;
pub(crate) mod rules;
pub(crate) mod sql;
pub mod sqlite;
pub mod teams;
pub mod types;
pub(crate) mod usage;
pub mod webhooks;

use futures_util::future::BoxFuture;

pub use budgets::BudgetStore;
pub use cert_identities::{CertIdentity, CertIdentityStore, CertSource, NewCertIdentity};
pub use clock::{Clock, ManualClock, SystemClock, UnixMillis};
pub use ingest_jobs::IngestJobStore;
pub use journal_index::{JournalIndexStore, JournalRow, JournalScan, TlogHead};
pub use keys::{CreatedKey, KeyInfo, KeyLimits, KeyState, KeyStore, NewKey};
pub use mcp_servers::{McpKeyTools, McpServer, McpStore, NewMcpServer};
pub use policies::{PolicyKind, PolicyStore, StoredPolicy};
pub use responses::ResponseStore;
pub use teams::{NewTeam, Team, TeamPatch, TeamStore};
pub use webhooks::{OutboxStore, WebhookStore};

/// The store's traits in one import, for callers of `dyn Store` (a supertrait's methods are
/// called with the supertrait in scope): `use crate::store::traits::*;`.
pub mod traits {
    pub use super::documents::DocumentStore;
    pub use super::{
        BudgetStore, CertIdentityStore, IngestJobStore, JournalIndexStore, KeyStore, McpStore,
        OutboxStore, PolicyStore, ResponseStore, Store, TeamStore, WebhookStore,
    };
}
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

/// The gateway's durable state: every resource's small trait (written once for both back ends,
/// in its folder; budgets and the webhook outbox are traits whose method-to-step plumbing is
/// written once over each back end's own steps), and the charge path each back end keeps its own
/// way (usage and charges). Every method is safe to call concurrently from many tasks; none
/// blocks the async runtime. Callers bring the small traits into scope with
/// `use crate::store::traits::*`.
pub trait Store:
    TeamStore
    + KeyStore
    + CertIdentityStore
    + McpStore
    + WebhookStore
    + ResponseStore
    + IngestJobStore
    + PolicyStore
    + JournalIndexStore
    + BudgetStore
    + OutboxStore
    + Send
    + Sync
    + std::fmt::Debug
{
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

    // Stored responses (the Responses API; their reads are `ResponseStore`).
    /// Settled usage (as [`Store::charge`]) and stored responses in one transaction, committed
    /// when this returns (a continuation sent at once finds them). A response whose team was
    /// deleted meanwhile is skipped.
    fn charge_and_store(
        &self,
        charges: Vec<UsageRecord>,
        responses: Vec<responses::StoredResponse>,
    ) -> BoxFuture<'_, StoreResult<()>>;
}

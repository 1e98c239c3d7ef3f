//! The activity journal's copy in a store replicas share: each replica's chain, entry by entry,
//! so one query answers for all replicas and one verification walks every chain. The chains
//! themselves stay on each replica's disk (the journal); this is an index of them, filled behind
//! the writer (`state::journal_index`). SQLite keeps none (one process reads its own files).
//!
//! Only PostgreSQL keeps them: [`postgres`] holds its statements and its [`JournalIndexStore`];
//! a back end that keeps none takes the trait's defaults.

pub(crate) mod postgres;
pub(crate) mod schema;

use futures_util::future::BoxFuture;

use super::StoreResult;

/// The journal's index for replicas (part of [`super::Store`]). The defaults are a back end only
/// one process opens (SQLite), which keeps none.
pub trait JournalIndexStore: Send + Sync {
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
}

/// One journal entry as indexed: which replica's chain, its seq, the fields queries narrow by,
/// and the line as written (the record's JSON, hash included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRow {
    pub replica: String,
    pub seq: i64,
    pub timestamp: String,
    pub team_id: String,
    pub line: String,
}

/// A replica's signed tree head of its transparency log, as published for the others: the
/// note of `size` entries and the verifier key it was signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogHead {
    pub size: i64,
    pub vkey: String,
    pub note: String,
}

/// A page of rows in (timestamp, replica, seq) order after `after` (with `descending`: in the
/// reverse order, before it), narrowed by the indexed fields; the caller applies the rest of its
/// filter to the lines.
#[derive(Debug, Clone, Default)]
pub struct JournalScan {
    pub after: Option<(String, String, i64)>,
    /// Newest first: rows before `after`.
    pub descending: bool,
    pub team_id: Option<String>,
    pub replica: Option<String>,
    /// Inclusive, ISO 8601 UTC as the journal writes it.
    pub from: Option<String>,
    /// Exclusive.
    pub to: Option<String>,
    pub limit: u32,
}

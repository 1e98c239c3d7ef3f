//! The activity journal's copy in a store replicas share: each replica's chain, entry by entry,
//! so one query answers for all replicas and one verification walks every chain. The chains
//! themselves stay on each replica's disk (the journal); this is an index of them, filled behind
//! the writer (`state::journal_index`). SQLite keeps none (one process reads its own files).
//!
//! Only PostgreSQL keeps them: [`postgres`] holds its statements.

pub(crate) mod postgres;

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

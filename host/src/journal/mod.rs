//! The activity journal (issue 5): append-only, hash-chained JSON-lines segments per sovereign
//! id, written by one writer thread with group commit, checkpointed with an Ed25519 signature,
//! verified on open and by `sovereign journal verify`; read back by [`query`], pruned by
//! [`retention`] behind a signed anchor. Format and guarantees: docs/JOURNAL.md. The request path
//! appends through `pipeline::audit`.

mod canonical;
mod checkpoint;
mod entry;
pub mod query;
mod recover;
pub mod retention;
mod segment;
mod tail;
pub mod tlog;
pub mod tool_call;
mod verify;
mod writer;

use std::path::PathBuf;
use std::time::Duration;

pub use checkpoint::{
    Checkpoint, SignedCheckpoint, load_or_create_signing_key, public_key_path, read_public_key,
};
pub use entry::{
    Charge, Entry, EntryDraft, GENESIS_HASH, Record, Status, format_utc, parse_iso8601,
    sha256_tagged,
};
pub use retention::Retention;
pub use segment::{anchor_file_name, checkpoint_file_name, segment_file_name};
pub use tail::{Line, Tail};
pub use tool_call::ToolCallRecord;
pub use verify::{ChainReport, Problem, TornTail, VerifyReport, verify_dir};
pub use writer::{Ack, Journal, OpenReport};

/// When an appended entry is durable (on disk after `fdatasync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `append` returns once the entry is fsynced (group commit: one fsync per batch).
    Durable,
    /// `append` returns once the entry is queued; it is fsynced at the latest `window` after it
    /// was queued (plus the time of the fsync itself and any wait for the writer): the writer
    /// sleeps out the window and writes what queued meanwhile at once, fsyncing sooner when a
    /// drained batch leaves `max_entries` unsynced.
    Batched {
        window: Duration,
        max_entries: usize,
    },
}

/// Everything the journal needs to open a chain.
#[derive(Debug, Clone)]
pub struct JournalConfig {
    /// Directory of the segment and checkpoint files (created if absent).
    pub dir: PathBuf,
    /// Names this replica's chain; `[A-Za-z0-9._-]+`.
    pub sovereign_id: String,
    /// The origin line of the chain's transparency-log checkpoints, also the name of its note
    /// key (default `sovereign-gateway/journal/<sovereign_id>`).
    pub origin: String,
    /// Keep the transparency log (the Merkle tree and request-id index beside the segments).
    pub transparency: bool,
    /// The operator's Ed25519 signing key (hex seed); generated, mode 0600, if absent. Its public
    /// key goes next to it as `<file>.pub`.
    pub signing_key: PathBuf,
    pub durability: Durability,
    /// Entries that may wait in the queue before `append` waits (back-pressure).
    pub queue_capacity: usize,
    /// Most entries written and fsynced as one batch.
    pub max_batch: usize,
    /// A segment is closed, and the next one started, after the batch that takes it past either.
    pub max_segment_bytes: u64,
    pub max_segment_entries: u64,
    /// A signed checkpoint is written after every this many entries (and on close).
    pub checkpoint_every: u64,
    /// Zeroed room the writer keeps written ahead of its last line in the active segment
    /// (0: none, each batch appends). With room a batch lands inside the file, so its
    /// `fdatasync` has no size change to write (docs/JOURNAL.md, "Preallocated room"); the live
    /// segment then ends in NUL bytes until it is closed.
    pub preallocate_bytes: u64,
    /// Open even if the existing chain fails verification: a new segment is started after the
    /// last entry that parses, and the damage stays for `verify` to report.
    pub force: bool,
}

impl JournalConfig {
    /// Defaults: durable, 64 MiB / 1,000,000-entry segments, a checkpoint every 10,000 entries.
    pub fn new(dir: PathBuf, sovereign_id: &str, signing_key: PathBuf) -> JournalConfig {
        JournalConfig {
            dir,
            sovereign_id: sovereign_id.to_string(),
            origin: tlog::default_origin(sovereign_id),
            transparency: true,
            signing_key,
            durability: Durability::Durable,
            queue_capacity: 65_536,
            max_batch: 8_192,
            max_segment_bytes: 64 << 20,
            max_segment_entries: 1_000_000,
            checkpoint_every: 10_000,
            preallocate_bytes: 0,
            force: false,
        }
    }
}

/// The journal's failures.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("encoding a journal record: {0}")]
    Encode(#[source] serde_json::Error),
    #[error("invalid sovereign id {0:?}: use letters, digits, '.', '_' and '-'")]
    InvalidSovereignId(String),
    #[error("invalid journal configuration: {0}")]
    InvalidConfig(&'static str),
    #[error("signing key {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    #[error(
        "refusing to append to a chain that fails verification (open with force to override): {0}"
    )]
    Unverifiable(Problem),
    #[error("the journal writer has stopped{}", .0.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    Closed(Option<String>),
}

impl JournalError {
    fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> JournalError {
        let path = path.into();
        move |source| JournalError::Io { path, source }
    }
}

/// Checks a sovereign id against the characters allowed in file names.
fn check_sovereign_id(id: &str) -> Result<(), JournalError> {
    let ok = !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(JournalError::InvalidSovereignId(id.to_string()))
    }
}

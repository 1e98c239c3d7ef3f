//! Opening a chain for appending: cut a torn final record, verify everything else (against the
//! chain's own signed checkpoints), refuse a chain that fails unless `force`, and hand the
//! writer its files and head.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;

use super::checkpoint::{format_public_key, load_or_create_signing_key};
use super::entry::{GENESIS_HASH, Record};
use super::segment::{
    Segment, checkpoint_file_name, cut_torn_tail, list_dir, read_lines, segment_file_name, sync_dir,
};
use super::verify::{Problem, TornTail, verify_filtered};
use super::{JournalConfig, JournalError, check_sovereign_id};

/// What opening found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenReport {
    /// A torn final record that was cut off (reported, then truncated).
    pub torn_tail: Option<TornTail>,
    /// Bytes of a torn final checkpoint line that were cut off.
    pub checkpoint_torn_bytes: u64,
    /// Entries in the chain when it was opened; the next entry gets `head_seq + 1`.
    pub head_seq: u64,
    /// The verification failure that `force` overrode.
    pub forced_past: Option<Problem>,
}

/// The files and head the writer continues from.
pub(super) struct ChainState {
    pub key: SigningKey,
    pub public_key: String,
    pub segment: File,
    pub segment_path: PathBuf,
    pub segment_bytes: u64,
    pub segment_entries: u64,
    pub head_seq: u64,
    pub head_hash: String,
    pub checkpoints: File,
    pub checkpoints_path: PathBuf,
}

pub(super) fn recover(cfg: &JournalConfig) -> Result<(ChainState, OpenReport), JournalError> {
    check_sovereign_id(&cfg.sovereign_id)?;
    if cfg.queue_capacity == 0 || cfg.max_batch == 0 || cfg.checkpoint_every == 0 {
        return Err(JournalError::InvalidConfig(
            "queue_capacity, max_batch and checkpoint_every must be positive",
        ));
    }
    let dir = &cfg.dir;
    std::fs::create_dir_all(dir).map_err(JournalError::io(dir))?;
    let key = load_or_create_signing_key(&cfg.signing_key)?;
    let id = cfg.sovereign_id.as_str();

    let segments = list_dir(dir)?.segments.remove(id).unwrap_or_default();
    let mut torn_tail = None;
    if let Some(last) = segments.last() {
        let bytes = cut_torn_tail(&last.path)?;
        if bytes > 0 {
            tracing::warn!(file = %last.path.display(), bytes, "journal: torn final record cut off");
            torn_tail = Some(TornTail {
                file: last.path.clone(),
                bytes,
            });
        }
    }
    let checkpoints_path = dir.join(checkpoint_file_name(id));
    let checkpoint_torn_bytes = if checkpoints_path.exists() {
        cut_torn_tail(&checkpoints_path)?
    } else {
        0
    };

    let public = key.verifying_key();
    let own_checkpoints = checkpoints_path
        .exists()
        .then_some(checkpoints_path.as_path());
    let verified = verify_filtered(dir, own_checkpoints, Some(&public), Some(id))?;
    let chain = verified.chains.into_iter().find(|c| c.sovereign_id == id);
    let problem = verified
        .checkpoint_problem
        .or_else(|| chain.as_ref().and_then(|c| c.problem.clone()));

    let (head_seq, head_hash, continue_last, segment_entries) = match (&problem, &chain) {
        (Some(p), _) if !cfg.force => return Err(JournalError::Unverifiable(p.clone())),
        (Some(p), _) => {
            tracing::error!(problem = %p, "journal: chain fails verification; continuing after its last parseable entry (force)");
            let (seq, hash) = last_parseable(&segments)?;
            (seq, hash, false, 0)
        }
        (None, Some(c)) => (
            c.head_seq,
            c.head_hash.clone(),
            true,
            c.last_segment_entries,
        ),
        (None, None) => (0, GENESIS_HASH.to_string(), true, 0),
    };

    // Continue the last segment when it is sound and (if empty) named for the next entry; an
    // empty one named for the next entry is continued after a forced open too (creating it
    // again would fail: it exists).
    let empty_next = |s: &&Segment| {
        s.first_seq == head_seq + 1 && std::fs::metadata(&s.path).is_ok_and(|m| m.len() == 0)
    };
    let reusable = segments.last().filter(|s| {
        (continue_last && (segment_entries > 0 || s.first_seq == head_seq + 1)) || empty_next(s)
    });
    let (segment, segment_path, segment_bytes, segment_entries) = match reusable {
        Some(s) => {
            let f = OpenOptions::new()
                .write(true)
                .open(&s.path)
                .map_err(JournalError::io(&s.path))?;
            let len = f.metadata().map_err(JournalError::io(&s.path))?.len();
            let entries = if continue_last { segment_entries } else { 0 };
            (f, s.path.clone(), len, entries)
        }
        None => {
            let (f, path) = create_segment(dir, id, head_seq + 1)?;
            (f, path, 0, 0)
        }
    };
    let checkpoints = open_append(&checkpoints_path)?;
    sync_dir(dir)?;
    let report = OpenReport {
        torn_tail,
        checkpoint_torn_bytes,
        head_seq,
        forced_past: problem,
    };
    let state = ChainState {
        public_key: format_public_key(&public),
        key,
        segment,
        segment_path,
        segment_bytes,
        segment_entries,
        head_seq,
        head_hash,
        checkpoints,
        checkpoints_path,
    };
    Ok((state, report))
}

fn open_append(path: &Path) -> Result<File, JournalError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(JournalError::io(path))
}

/// Creates the (empty) segment whose first entry will be `first_seq`, durably. Opened for
/// positioned writes, not appends: the writer writes inside the zeroed room it keeps ahead.
pub(super) fn create_segment(
    dir: &Path,
    id: &str,
    first_seq: u64,
) -> Result<(File, PathBuf), JournalError> {
    let path = dir.join(segment_file_name(id, first_seq));
    let f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .map_err(JournalError::io(&path))?;
    f.sync_all().map_err(JournalError::io(&path))?;
    sync_dir(dir)?;
    Ok((f, path))
}

/// The seq and hash of the last line, in the last segment that has one, that parses as a record.
fn last_parseable(segments: &[Segment]) -> Result<(u64, String), JournalError> {
    for s in segments.iter().rev() {
        let lines = read_lines(&s.path)?;
        if let Some(r) = lines.lines.iter().rev().find_map(|l| Record::parse(l).ok()) {
            return Ok((r.entry.seq, r.journal_hash));
        }
    }
    Ok((0, GENESIS_HASH.to_string()))
}

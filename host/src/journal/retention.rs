//! Retention: pruning whole closed segments by age and/or total size, never the active one,
//! after copying them to an export directory if one is configured, and leaving a signed anchor
//! (the last pruned entry's seq and hash) so the rest of the chain still verifies.
//!
//! Order, so that a crash at any point leaves a chain that verifies: export (copy + fsync), then
//! the new anchor (temp file, fsync, rename, directory fsync), then delete the covered segments.
//! A segment the anchor covers but that is still there is skipped by verifiers and deleted by
//! the next pass.

use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::checkpoint::{Checkpoint, format_public_key, load_or_create_signing_key};
use super::entry::{Record, format_utc};
use super::segment::{Segment, anchor_file_name, list_dir, next_line, sync_dir};
use super::verify::read_anchor;
use super::{JournalConfig, JournalError};

/// What retention prunes; both limits unset keeps everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retention {
    /// Prune closed segments last written longer ago than this.
    pub max_age: Option<Duration>,
    /// Prune the oldest closed segments while the chain's segments take more than this.
    pub max_bytes: Option<u64>,
    /// Copy each segment here (fsynced) before pruning it.
    pub export_dir: Option<PathBuf>,
    /// How often the gateway runs a pass.
    pub interval: Duration,
}

impl Retention {
    pub fn prunes(&self) -> bool {
        self.max_age.is_some() || self.max_bytes.is_some()
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    pub segments_pruned: usize,
    pub bytes_pruned: u64,
    /// The anchor's seq after the pass (0 if the chain has none).
    pub anchor_seq: u64,
}

/// One retention pass over the chain of `cfg` (blocking file I/O; run it on the blocking pool).
pub fn prune(
    cfg: &JournalConfig,
    retention: &Retention,
    now: SystemTime,
) -> Result<PruneReport, JournalError> {
    let dir = &cfg.dir;
    let mut listing = list_dir(dir)?;
    let segments = listing
        .segments
        .remove(&cfg.sovereign_id)
        .unwrap_or_default();
    let anchor_path = dir.join(anchor_file_name(&cfg.sovereign_id));
    let mut report = PruneReport::default();
    if anchor_path.exists() {
        // An anchor this gateway cannot read is left alone, for verify to report.
        if let Ok(a) = read_anchor(&anchor_path, &cfg.sovereign_id, None)? {
            report.anchor_seq = a.cp.checkpoint.seq;
        }
    }
    // Leftovers of a pass cut short: covered by the anchor, not yet deleted.
    let (covered, live): (Vec<&Segment>, Vec<&Segment>) = segments
        .iter()
        .partition(|s| s.first_seq <= report.anchor_seq);
    for s in covered {
        remove(&s.path)?;
    }
    // Never the active (last) segment.
    let Some((_, closed)) = live.split_last() else {
        return Ok(report);
    };
    let mut sizes = Vec::with_capacity(live.len());
    for s in &live {
        let meta = fs::metadata(&s.path).map_err(JournalError::io(&s.path))?;
        sizes.push((meta.len(), meta.modified().unwrap_or(now)));
    }
    let mut total: u64 = sizes.iter().map(|(len, _)| len).sum();
    let mut chosen = 0;
    for (i, _) in closed.iter().enumerate() {
        let (len, modified) = sizes[i];
        let too_old = retention
            .max_age
            .is_some_and(|age| now.duration_since(modified).unwrap_or_default() > age);
        let too_big = retention.max_bytes.is_some_and(|max| total > max);
        if !(too_old || too_big) {
            break; // only a prefix of the chain can go
        }
        total -= len;
        chosen = i + 1;
    }
    let pruned = &closed[..chosen];
    let Some(last) = pruned.last() else {
        return Ok(report);
    };
    let Some(head) = last_record(&last.path)? else {
        return Ok(report); // an empty closed segment: nothing to anchor to yet
    };
    if let Some(export) = &retention.export_dir {
        fs::create_dir_all(export).map_err(JournalError::io(export))?;
        for s in pruned {
            export_copy(&s.path, export)?;
        }
        sync_dir(export)?;
    }
    let key = load_or_create_signing_key(&cfg.signing_key)?;
    let anchor = Checkpoint {
        count: head.entry.seq,
        head_hash: head.journal_hash,
        public_key: format_public_key(&key.verifying_key()),
        seq: head.entry.seq,
        sovereign_id: cfg.sovereign_id.clone(),
        timestamp: format_utc(now),
    }
    .sign(&key)?
    .to_line()?;
    let tmp = dir.join(format!("{}.tmp", anchor_file_name(&cfg.sovereign_id)));
    write_synced(&tmp, &anchor)?;
    fs::rename(&tmp, &anchor_path).map_err(JournalError::io(&anchor_path))?;
    sync_dir(dir)?;
    for (i, s) in pruned.iter().enumerate() {
        remove(&s.path)?;
        report.bytes_pruned += sizes[i].0;
    }
    sync_dir(dir)?;
    report.segments_pruned = pruned.len();
    report.anchor_seq = head.entry.seq;
    tracing::info!(
        segments = report.segments_pruned,
        bytes = report.bytes_pruned,
        anchor_seq = report.anchor_seq,
        "journal retention pruned closed segments"
    );
    Ok(report)
}

/// The last complete record of a segment.
fn last_record(path: &Path) -> Result<Option<Record>, JournalError> {
    let file = fs::File::open(path).map_err(JournalError::io(path))?;
    let mut last = None;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    while next_line(&mut reader, &mut line).map_err(JournalError::io(path))? {
        if let Ok(r) = Record::parse(&line[..line.len() - 1]) {
            last = Some(r);
        }
    }
    Ok(last)
}

fn export_copy(segment: &Path, export: &Path) -> Result<(), JournalError> {
    let Some(name) = segment.file_name() else {
        return Ok(());
    };
    let target = export.join(name);
    fs::copy(segment, &target).map_err(JournalError::io(&target))?;
    fs::File::open(&target)
        .and_then(|f| f.sync_all())
        .map_err(JournalError::io(&target))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), JournalError> {
    use std::io::Write as _;
    let mut f = fs::File::create(path).map_err(JournalError::io(path))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(JournalError::io(path))
}

fn remove(path: &Path) -> Result<(), JournalError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(JournalError::io(path)(e)),
        _ => Ok(()),
    }
}

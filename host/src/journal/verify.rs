//! Verification of a journal directory: every chain walked from genesis (seq, links, hashes),
//! checked against signed checkpoints; the first bad entry named by file, line, seq and reason.
//! scripts/verify_journal.py does the same checks in the same order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;

use super::JournalError;
use super::checkpoint::SignedCheckpoint;
use super::entry::{GENESIS_HASH, Record};
use super::segment::{Segment, list_dir, read_lines};

/// The first thing wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: PathBuf,
    /// 1-based line number in `file`.
    pub line: u64,
    pub seq: Option<u64>,
    pub reason: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.file.file_name().unwrap_or(self.file.as_os_str());
        write!(f, "{}:{}", name.to_string_lossy(), self.line)?;
        if let Some(seq) = self.seq {
            write!(f, " (seq {seq})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// Bytes after the last `\n` of a chain's last segment: a record torn by a crash mid-write.
/// Verifiers ignore it; the appender cuts it off at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub file: PathBuf,
    pub bytes: u64,
}

/// The outcome for one chain (one sovereign id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainReport {
    pub sovereign_id: String,
    pub segments: usize,
    /// Entries verified (up to the first problem), not counting pruned ones.
    pub entries: u64,
    /// Entries retention pruned, stood for by the chain's signed anchor (0 without one).
    pub pruned: u64,
    /// Seq and `journal_hash` of the last verified entry (0 and the genesis hash if none).
    pub head_seq: u64,
    pub head_hash: String,
    /// Entries in the last segment (what the appender continues).
    pub last_segment_entries: u64,
    pub checkpoints_checked: usize,
    pub torn_tail: Option<TornTail>,
    pub problem: Option<Problem>,
}

/// The outcome for a directory: a problem with the checkpoints themselves (malformed line, bad
/// signature), then one report per chain, in sovereign-id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub checkpoint_problem: Option<Problem>,
    pub chains: Vec<ChainReport>,
}

impl VerifyReport {
    /// True when there is at least one chain and nothing failed.
    pub fn is_ok(&self) -> bool {
        self.checkpoint_problem.is_none()
            && !self.chains.is_empty()
            && self.chains.iter().all(|c| c.problem.is_none())
    }
}

/// The report `sovereign journal verify` prints: one `OK`/`FAIL` line per chain (a `FAIL` names
/// file, line, seq and reason), `note` lines for torn final records.
impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.checkpoint_problem {
            writeln!(f, "FAIL checkpoints: {p}")?;
        }
        if self.chains.is_empty() {
            writeln!(f, "FAIL no journal segments or checkpoints found")?;
        }
        for c in &self.chains {
            match &c.problem {
                Some(p) => writeln!(f, "FAIL {}: {p}", c.sovereign_id)?,
                None => {
                    write!(
                        f,
                        "OK {}: {} entries in {} segments, head seq {} {}, {} checkpoints matched",
                        c.sovereign_id,
                        c.entries,
                        c.segments,
                        c.head_seq,
                        c.head_hash,
                        c.checkpoints_checked
                    )?;
                    if c.pruned > 0 {
                        write!(f, ", {} earlier entries pruned behind an anchor", c.pruned)?;
                    }
                    writeln!(f)?;
                }
            }
            if let Some(t) = &c.torn_tail {
                writeln!(
                    f,
                    "note {}: torn final record ignored ({} bytes at the end of {})",
                    c.sovereign_id,
                    t.bytes,
                    t.file.display()
                )?;
            }
        }
        Ok(())
    }
}

/// A checkpoint and where it was read.
pub(super) struct Located {
    pub file: PathBuf,
    pub line: u64,
    pub cp: SignedCheckpoint,
}

/// Verifies every chain in `dir`. Checkpoints come from `checkpoint_file` when given (e.g. an
/// exported one), else from the directory's `checkpoints-<id>.jsonl` files. Signatures are
/// checked against the key embedded in each checkpoint and, when given, that key must be
/// `public_key`.
pub fn verify_dir(
    dir: &Path,
    checkpoint_file: Option<&Path>,
    public_key: Option<&VerifyingKey>,
) -> Result<VerifyReport, JournalError> {
    verify_filtered(dir, checkpoint_file, public_key, None)
}

/// [`verify_dir`] restricted to the chain `only` when given (the appender's check on open).
pub(super) fn verify_filtered(
    dir: &Path,
    checkpoint_file: Option<&Path>,
    public_key: Option<&VerifyingKey>,
    only: Option<&str>,
) -> Result<VerifyReport, JournalError> {
    let mut listing = list_dir(dir)?;
    if let Some(only) = only {
        listing.segments.retain(|id, _| id == only);
        listing.checkpoint_files.retain(|id, _| id == only);
        listing.anchor_files.retain(|id, _| id == only);
    }
    let files: Vec<PathBuf> = match checkpoint_file {
        Some(f) => vec![f.to_path_buf()],
        None => listing.checkpoint_files.values().cloned().collect(),
    };
    let mut checkpoints: BTreeMap<String, Vec<Located>> = BTreeMap::new();
    let mut checkpoint_problem = None;
    'files: for file in files {
        // An unterminated last line is a checkpoint torn mid-write: ignored, like a torn entry.
        for (i, line) in read_lines(&file)?.lines.iter().enumerate() {
            let located = |reason: String| Problem {
                file: file.clone(),
                line: i as u64 + 1,
                seq: None,
                reason,
            };
            let cp = match SignedCheckpoint::parse(line) {
                Ok(cp) => cp,
                Err(e) => {
                    checkpoint_problem = Some(located(format!("malformed checkpoint: {e}")));
                    break 'files;
                }
            };
            if let Err(e) = cp.verify(public_key) {
                checkpoint_problem = Some(located(format!("checkpoint {e}")));
                break 'files;
            }
            checkpoints
                .entry(cp.checkpoint.sovereign_id.clone())
                .or_default()
                .push(Located {
                    file: file.clone(),
                    line: i as u64 + 1,
                    cp,
                });
        }
    }
    if let Some(only) = only {
        checkpoints.retain(|id, _| id == only);
    }
    // List the segments again, after the checkpoints were read: a live writer may have rotated
    // meanwhile, and every checkpoint read must find the entries it names (written before it).
    let fresh = list_dir(dir)?;
    listing.segments = fresh.segments;
    listing.anchor_files = fresh.anchor_files;
    if let Some(only) = only {
        listing.segments.retain(|id, _| id == only);
        listing.anchor_files.retain(|id, _| id == only);
    }
    let ids: BTreeSet<&String> = listing
        .segments
        .keys()
        .chain(checkpoints.keys())
        .chain(listing.anchor_files.keys())
        .collect();
    let mut chains = Vec::new();
    for id in ids {
        let segments = listing.segments.get(id).map(Vec::as_slice).unwrap_or(&[]);
        let cps = checkpoints.get(id).map(Vec::as_slice).unwrap_or(&[]);
        let anchor = match listing.anchor_files.get(id) {
            Some(file) => match read_anchor(file, id, public_key)? {
                Ok(anchor) => Some(anchor),
                Err(problem) => {
                    chains.push(ChainReport::failed(id, segments.len(), problem));
                    continue;
                }
            },
            None => None,
        };
        chains.push(verify_chain(id, segments, cps, anchor.as_ref())?);
    }
    Ok(VerifyReport {
        checkpoint_problem,
        chains,
    })
}

impl ChainReport {
    fn failed(sovereign_id: &str, segments: usize, problem: Problem) -> ChainReport {
        ChainReport {
            sovereign_id: sovereign_id.to_string(),
            segments,
            entries: 0,
            pruned: 0,
            head_seq: 0,
            head_hash: GENESIS_HASH.to_string(),
            last_segment_entries: 0,
            checkpoints_checked: 0,
            torn_tail: None,
            problem: Some(problem),
        }
    }
}

/// Reads a chain's anchor (the one signed line retention leaves in place of pruned segments).
/// The outer error is I/O; the inner one a problem to report.
pub(super) fn read_anchor(
    file: &Path,
    sovereign_id: &str,
    public_key: Option<&VerifyingKey>,
) -> Result<Result<Located, Problem>, JournalError> {
    let lines = read_lines(file)?;
    let problem = |reason: String| Problem {
        file: file.to_path_buf(),
        line: 1,
        seq: None,
        reason,
    };
    let [line] = lines.lines.as_slice() else {
        return Ok(Err(problem(
            "an anchor file must hold exactly one line".into(),
        )));
    };
    let cp = match SignedCheckpoint::parse(line) {
        Ok(cp) => cp,
        Err(e) => return Ok(Err(problem(format!("malformed anchor: {e}")))),
    };
    if let Err(e) = cp.verify(public_key) {
        return Ok(Err(problem(format!("anchor {e}"))));
    }
    let c = &cp.checkpoint;
    if c.sovereign_id != sovereign_id || c.count != c.seq {
        return Ok(Err(problem(
            "the anchor names another chain, or its count is not its seq".into(),
        )));
    }
    Ok(Ok(Located {
        file: file.to_path_buf(),
        line: 1,
        cp,
    }))
}

fn verify_chain(
    sovereign_id: &str,
    segments: &[Segment],
    checkpoints: &[Located],
    anchor: Option<&Located>,
) -> Result<ChainReport, JournalError> {
    let mut by_seq: BTreeMap<u64, Vec<&Located>> = BTreeMap::new();
    for c in checkpoints {
        by_seq.entry(c.cp.checkpoint.seq).or_default().push(c);
    }
    // With an anchor, the chain starts after it: its seq and hash stand in for the pruned
    // entries. Segments it covers (left by a retention pass cut short) are skipped; checkpoints
    // before it vouch for entries no longer here, and the one at its seq must name its hash.
    let (start_seq, start_hash) = match anchor {
        Some(a) => (a.cp.checkpoint.seq, a.cp.checkpoint.head_hash.clone()),
        None => (0, GENESIS_HASH.to_string()),
    };
    let segments: Vec<&Segment> = segments
        .iter()
        .filter(|s| s.first_seq > start_seq)
        .collect();
    let mut walk = Walk {
        by_seq,
        report: ChainReport {
            sovereign_id: sovereign_id.to_string(),
            segments: segments.len(),
            entries: 0,
            pruned: start_seq,
            head_seq: start_seq,
            head_hash: start_hash,
            last_segment_entries: 0,
            checkpoints_checked: 0,
            torn_tail: None,
            problem: None,
        },
    };
    let walked = walk.anchor(anchor).and_then(|()| {
        for (i, segment) in segments.iter().enumerate() {
            walk.segment(&segment.path, i + 1 == segments.len())?;
        }
        walk.no_checkpoint_past_the_end()
    });
    match walked {
        Ok(()) => {}
        Err(Stop::Problem(p)) => walk.report.problem = Some(p),
        Err(Stop::Io(e)) => return Err(e),
    }
    Ok(walk.report)
}

/// Why a walk stopped early: the first bad entry, or a file that could not be read.
enum Stop {
    Problem(Problem),
    Io(JournalError),
}

/// One chain walked from its start: the report so far and the checkpoints by the seq they vouch
/// for.
struct Walk<'a> {
    by_seq: BTreeMap<u64, Vec<&'a Located>>,
    report: ChainReport,
}

impl Walk<'_> {
    /// The checkpoints at the anchor's seq must name the anchor's hash.
    fn anchor(&mut self, anchor: Option<&Located>) -> Result<(), Stop> {
        let Some(a) = anchor else {
            return Ok(());
        };
        let seq = self.report.head_seq;
        for c in self.by_seq.get(&seq).into_iter().flatten() {
            self.report.checkpoints_checked += 1;
            if c.cp.checkpoint.head_hash != self.report.head_hash {
                return Err(Stop::Problem(Problem {
                    file: a.file.clone(),
                    line: 1,
                    seq: Some(seq),
                    reason: format!(
                        "the anchor differs from the signed checkpoint at {}:{} (chain rewritten)",
                        c.file.display(),
                        c.line
                    ),
                }));
            }
        }
        Ok(())
    }

    /// Every line of one segment, in order; an unterminated final line is a torn tail in the last
    /// segment and a problem anywhere else.
    fn segment(&mut self, file: &Path, last: bool) -> Result<(), Stop> {
        let lines = read_lines(file).map_err(Stop::Io)?;
        self.report.last_segment_entries = 0;
        for (n, line) in lines.lines.iter().enumerate() {
            let fail = |seq: Option<u64>, reason: String| {
                Stop::Problem(Problem {
                    file: file.to_path_buf(),
                    line: n as u64 + 1,
                    seq,
                    reason,
                })
            };
            let record =
                Record::parse(line).map_err(|e| fail(None, format!("malformed entry: {e}")))?;
            let seq = record.entry.seq;
            self.link(&record)
                .map_err(|reason| fail(Some(seq), reason))?;
            self.report.entries += 1;
            self.vouched(&record)
                .map_err(|reason| fail(Some(seq), reason))?;
            self.report.head_seq = seq;
            self.report.head_hash = record.journal_hash;
            self.report.last_segment_entries += 1;
        }
        match lines.unterminated {
            Some(tail) if last => {
                self.report.torn_tail = Some(TornTail {
                    file: file.to_path_buf(),
                    bytes: tail.len() as u64,
                });
                Ok(())
            }
            Some(_) => Err(Stop::Problem(Problem {
                file: file.to_path_buf(),
                line: lines.lines.len() as u64 + 1,
                seq: None,
                reason: "incomplete final line in a segment that is not the last".into(),
            })),
            None => Ok(()),
        }
    }

    /// The entry follows the head: the next seq, linked by `prev_hash`, its own hash right.
    fn link(&self, record: &Record) -> Result<(), String> {
        let entry = &record.entry;
        let expected = self.report.head_seq + 1;
        if entry.seq != expected {
            Err(format!(
                "expected seq {expected}, found {} (an entry was deleted, reordered or spliced in)",
                entry.seq
            ))
        } else if entry.prev_hash != self.report.head_hash {
            Err("prev_hash does not link to the previous entry (spliced in or chain broken)".into())
        } else if entry.hash() != record.journal_hash {
            Err("journal_hash does not match the entry (entry edited)".into())
        } else {
            Ok(())
        }
    }

    /// Every signed checkpoint at this entry's seq names its hash and the count so far.
    fn vouched(&mut self, record: &Record) -> Result<(), String> {
        let count = self.report.pruned + self.report.entries;
        for c in self.by_seq.get(&record.entry.seq).into_iter().flatten() {
            self.report.checkpoints_checked += 1;
            let cp = &c.cp.checkpoint;
            if cp.head_hash != record.journal_hash || cp.count != count {
                return Err(format!(
                    "differs from the signed checkpoint at {}:{} (chain rewritten)",
                    c.file.display(),
                    c.line
                ));
            }
        }
        Ok(())
    }

    /// No signed checkpoint vouches for an entry past the end (a truncated tail).
    fn no_checkpoint_past_the_end(&self) -> Result<(), Stop> {
        let head = self.report.head_seq;
        match self.by_seq.range(head + 1..).next() {
            Some((&seq, cps)) => match cps.first() {
                Some(c) => Err(Stop::Problem(Problem {
                    file: c.file.clone(),
                    line: c.line,
                    seq: Some(seq),
                    reason: format!(
                        "the journal ends at seq {head}, but this signed checkpoint vouches for seq {seq} (tail truncated)"
                    ),
                })),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }
}

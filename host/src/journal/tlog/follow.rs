//! The follower: a thread of its own that takes each batch of lines the journal's writer has
//! written and adds them to the tree and the request-id index, so the writer's only cost is
//! handing over its buffer. Also the replay of the same at open, for what the files lack.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::{Arc, Condvar, LazyLock, Mutex};

use memchr::memmem::Finder;
use std::sync::mpsc::{Receiver, Sender};

use super::ids::{Found, Ids, team_fingerprint};
use super::levels::LevelWriter;
use super::tree::leaf_hash;
use super::{Shared, TlogError};
use crate::journal::entry::Record;
use crate::journal::segment::{list_dir, next_line};

/// The tree's files are fsynced (and `synced` moved) after this many leaves: at most this many
/// are rebuilt from the journal at the next open.
const SYNC_EVERY: u64 = 1 << 16;

/// Lines the writer wrote, in seq order from `first_seq`, each `\n`-terminated, line `i` ending
/// (after its newline) at `ends[i]`; the buffers go back to the writer on `spare` once read.
pub struct Batch {
    pub first_seq: u64,
    pub bytes: Vec<u8>,
    pub ends: Vec<u32>,
    pub spare: std::sync::mpsc::Sender<(Vec<u8>, Vec<u32>)>,
}

/// Bytes of written lines the follower may lag behind before the writer waits for it (memory
/// stays bounded when it cannot keep up; a burst of appends on a busy machine is absorbed).
pub const BACKLOG_BYTES: usize = 64 << 20;

/// What the follower has not read yet, in bytes; the writer waits on it past [`BACKLOG_BYTES`].
#[derive(Default)]
pub struct Backlog {
    bytes: Mutex<usize>,
    drained: Condvar,
}

impl Backlog {
    fn release(&self, n: usize) {
        if let Ok(mut b) = self.bytes.lock() {
            *b = b.saturating_sub(n);
            self.drained.notify_all();
        }
    }
}

/// The writer's end: hands a batch over, waiting first while the follower is too far behind.
pub struct Handoff {
    pub(super) tx: Sender<Batch>,
    pub(super) backlog: Arc<Backlog>,
}

impl Handoff {
    /// False when the follower has stopped (the journal goes on without it).
    pub fn send(&self, batch: Batch) -> bool {
        let n = batch.bytes.len();
        if let Ok(mut b) = self.backlog.bytes.lock() {
            while *b > BACKLOG_BYTES {
                match self.backlog.drained.wait(b) {
                    Ok(next) => b = next,
                    Err(_) => return false,
                }
            }
            *b += n;
        }
        self.tx.send(batch).is_ok()
    }
}

/// The follower's state: the files it appends to.
pub(super) struct Follower {
    pub levels: LevelWriter,
    pub ids: Arc<Ids>,
    /// Seqs at or below this are already in the index.
    pub indexed: u64,
    pub unsynced: u64,
    /// Team fingerprints already computed (teams are few; bounded all the same).
    pub teams: HashMap<String, u64>,
}

/// The follower thread's nice value (Linux: per thread).
const NICE: i32 = 10;

/// Most team fingerprints kept.
const TEAMS_KEPT: usize = 4_096;

impl Follower {
    /// Adds one line (without its newline) at `seq`, which must be the tree's next leaf.
    pub fn add(&mut self, seq: u64, line: &[u8]) -> Result<(), TlogError> {
        if seq == self.levels.size() + 1 {
            self.levels.push(leaf_hash(line));
            self.unsynced += 1;
        } else if seq > self.levels.size() + 1 {
            return Err(TlogError::Gap {
                tree: self.levels.size(),
                seq,
            });
        }
        if seq > self.indexed {
            if let Some((request, team)) = ids_of(line) {
                let team = match self.teams.get(team.as_ref()) {
                    Some(fp) => *fp,
                    None => {
                        let fp = team_fingerprint(&team);
                        if self.teams.len() >= TEAMS_KEPT {
                            self.teams.clear();
                        }
                        self.teams.insert(team.into_owned(), fp);
                        fp
                    }
                };
                self.ids.add(&request, Found { seq, team })?;
            }
            self.indexed = seq;
        }
        Ok(())
    }

    /// Writes what was added, and every [`SYNC_EVERY`] leaves makes it durable.
    pub fn write(&mut self) -> Result<(), TlogError> {
        self.levels.write()?;
        if self.unsynced >= SYNC_EVERY {
            self.levels.sync()?;
            self.unsynced = 0;
        }
        Ok(())
    }

    /// Runs until the writer hangs up, then makes everything durable. Its thread runs at a
    /// lower priority ([`NICE`]): the log is derived from the journal, off the request path, and
    /// on a saturated machine the appenders and the writer come first; it catches up when they
    /// pause, and the writer waits for it only past [`BACKLOG_BYTES`] of lines not yet read.
    pub fn run(mut self, rx: Receiver<Batch>, backlog: Arc<Backlog>, shared: Arc<Shared>) {
        #[cfg(target_os = "linux")]
        if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), NICE) {
            tracing::debug!(error = %e, "the transparency log follower keeps the default priority");
        }
        let result = (|| -> Result<(), TlogError> {
            while let Ok(batch) = rx.recv() {
                let (mut seq, mut start) = (batch.first_seq, 0);
                for &end in &batch.ends {
                    let end = end as usize;
                    self.add(seq, &batch.bytes[start..end - 1])?;
                    (seq, start) = (seq + 1, end);
                }
                self.write()?;
                shared.publish(self.levels.size());
                let (mut bytes, mut ends) = (batch.bytes, batch.ends);
                backlog.release(bytes.len());
                bytes.clear();
                ends.clear();
                let _ = batch.spare.send((bytes, ends));
            }
            self.levels.sync()?;
            Ok(())
        })();
        if let Err(e) = result {
            tracing::error!(error = %e, "transparency log follower stopped; proofs are refused");
            shared.fail(e.to_string());
        }
    }

    /// Adds the lines of the chain after what the tree and the index hold, up to `head`.
    pub fn replay(&mut self, dir: &Path, sovereign_id: &str, head: u64) -> Result<(), TlogError> {
        let from = self.levels.size().min(self.indexed) + 1;
        if from > head {
            return Ok(());
        }
        let mut listing = list_dir(dir)?;
        let segments = listing.segments.remove(sovereign_id).unwrap_or_default();
        let first = segments.first().map_or(head + 1, |s| s.first_seq);
        if first > self.levels.size() + 1 && self.levels.size() < head {
            return Err(TlogError::Pruned {
                tree: self.levels.size(),
                first,
            });
        }
        let start = segments
            .iter()
            .rposition(|s| s.first_seq <= from)
            .unwrap_or(0);
        let mut line = Vec::with_capacity(1024);
        for segment in &segments[start..] {
            let file = File::open(&segment.path)
                .map_err(|e| TlogError::Io(format!("{}: {e}", segment.path.display())))?;
            let mut reader = BufReader::with_capacity(256 << 10, file);
            let mut seq = segment.first_seq;
            while seq <= head
                && next_line(&mut reader, &mut line)
                    .map_err(|e| TlogError::Io(format!("{}: {e}", segment.path.display())))?
            {
                if seq >= from {
                    self.add(seq, &line[..line.len() - 1])?;
                }
                seq += 1;
            }
            self.levels.write()?;
        }
        if self.levels.size() < head {
            return Err(TlogError::Gap {
                tree: self.levels.size(),
                seq: head,
            });
        }
        self.levels.sync()?;
        self.unsynced = 0;
        Ok(())
    }
}

/// The request id and team id of a line. Lines are canonical JSON, in which a key's quotes can
/// only be structural (a `"` inside a value is escaped), so the fields are found by their key;
/// a value holding an escape is read by the full parser.
fn ids_of(line: &[u8]) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
    static REQUEST: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"request_id\":\""));
    static TEAM: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"team_id\":\""));
    let field = |finder: &Finder<'_>| -> Option<Result<&str, ()>> {
        let at = finder.find(line)? + finder.needle().len();
        let len = memchr::memchr(b'"', &line[at..])?;
        let value = &line[at..at + len];
        if value.contains(&b'\\') {
            return Some(Err(()));
        }
        Some(std::str::from_utf8(value).map_err(|_| ()))
    };
    match (field(&REQUEST), field(&TEAM)) {
        (Some(Ok(r)), Some(Ok(t))) => Some((Cow::Borrowed(r), Cow::Borrowed(t))),
        _ => {
            let record = Record::parse(line).ok()?;
            Some((
                Cow::Owned(record.entry.request_id),
                Cow::Owned(record.entry.team_id),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn ids_are_read_from_canonical_lines() {
        let line = br#"{"action":"chat.completions","actor_id":"x \"request_id\":\"fake\"","request_id":"req-1","team_id":"team-a"}"#;
        let (r, t) = ids_of(line).unwrap();
        assert_eq!((r.as_ref(), t.as_ref()), ("req-1", "team-a"));
    }
}

//! Which leaf a request id is: the index behind `GET /v1/activity/proof?request_id=`. Recent
//! entries sit in memory; every [`RUN_ENTRIES`] they are written out, sorted, as a run file
//! `ids-<first seq>-<last seq>.run` of 32-byte records (128-bit fingerprint of the request id,
//! seq, 64-bit fingerprint of the team), found again by binary search with positioned reads. A run
//! is fsynced before it is renamed into place; the entries after the last run are rebuilt from
//! the journal at open.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};

use sha2::{Digest as _, Sha256};

/// Entries held in memory before they are written out as a run (~24 MiB at most).
pub const RUN_ENTRIES: usize = 1 << 19;
const RECORD: u64 = 32;

/// The first 16 bytes of SHA-256(request id).
pub fn request_fingerprint(request_id: &str) -> u128 {
    let d = Sha256::digest(request_id.as_bytes());
    u128::from_be_bytes(d[..16].try_into().unwrap_or([0; 16]))
}

/// The first 8 bytes of SHA-256(team id): enough to tell an auditor's own team's entries.
pub fn team_fingerprint(team_id: &str) -> u64 {
    let d = Sha256::digest(team_id.as_bytes());
    u64::from_be_bytes(d[..8].try_into().unwrap_or([0; 8]))
}

/// Where a request's entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub seq: u64,
    pub team: u64,
}

struct Run {
    first: u64,
    last: u64,
    file: File,
    records: u64,
}

impl Run {
    fn record(&self, i: u64) -> std::io::Result<(u128, Found)> {
        let mut b = [0u8; RECORD as usize];
        self.file.read_exact_at(&mut b, i * RECORD)?;
        let fp = u128::from_be_bytes(b[..16].try_into().unwrap_or([0; 16]));
        let seq = u64::from_be_bytes(b[16..24].try_into().unwrap_or([0; 8]));
        let team = u64::from_be_bytes(b[24..].try_into().unwrap_or([0; 8]));
        Ok((fp, Found { seq, team }))
    }

    fn find(&self, fp: u128) -> std::io::Result<Option<Found>> {
        let (mut lo, mut hi) = (0, self.records);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (at, found) = self.record(mid)?;
            match at.cmp(&fp) {
                std::cmp::Ordering::Equal => return Ok(Some(found)),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok(None)
    }
}

fn parse_run_name(name: &str) -> Option<(u64, u64)> {
    let (first, last) = name
        .strip_prefix("ids-")?
        .strip_suffix(".run")?
        .split_once('-')?;
    Some((first.parse().ok()?, last.parse().ok()?))
}

/// The index: shared by the follower (which adds) and the proof endpoint (which looks up).
pub struct Ids {
    dir: PathBuf,
    recent: Mutex<HashMap<u128, Found>>,
    runs: RwLock<Vec<Run>>,
}

impl Ids {
    /// Opens the runs in `dir` that end at or before `upto` (the others are removed: their
    /// entries are rebuilt from the journal); returns the index and the last seq it covers.
    pub fn open(dir: &Path, upto: u64) -> std::io::Result<(Ids, u64)> {
        let mut runs = Vec::new();
        for item in fs::read_dir(dir)? {
            let item = item?;
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.ends_with(".run.tmp") {
                fs::remove_file(item.path())?;
                continue;
            }
            let Some((first, last)) = parse_run_name(name) else {
                continue;
            };
            if last > upto {
                fs::remove_file(item.path())?;
                continue;
            }
            let file = File::open(item.path())?;
            let records = file.metadata()?.len() / RECORD;
            runs.push(Run {
                first,
                last,
                file,
                records,
            });
        }
        runs.sort_by_key(|r| r.first);
        // Runs must follow each other; after a gap, what follows is rebuilt.
        let mut covered = 0;
        let mut keep = Vec::new();
        for r in runs {
            if r.first == covered + 1 {
                covered = r.last;
                keep.push(r);
            }
        }
        Ok((
            Ids {
                dir: dir.to_path_buf(),
                recent: Mutex::new(HashMap::new()),
                runs: RwLock::new(keep),
            },
            covered,
        ))
    }

    /// Records that `request_id`'s entry is `seq`. Writes a run once enough are held.
    pub fn add(&self, fp: u128, found: Found) -> std::io::Result<()> {
        let full = {
            let mut recent = self.recent.lock().map_err(|_| poisoned())?;
            recent.insert(fp, found);
            recent.len() >= RUN_ENTRIES
        };
        if full { self.write_run() } else { Ok(()) }
    }

    /// Writes the entries held in memory as a sorted run and drops them from memory.
    fn write_run(&self) -> std::io::Result<()> {
        let mut records: Vec<(u128, Found)> = {
            let recent = self.recent.lock().map_err(|_| poisoned())?;
            recent.iter().map(|(k, v)| (*k, *v)).collect()
        };
        if records.is_empty() {
            return Ok(());
        }
        records.sort_unstable_by_key(|r| r.0);
        let first = records.iter().map(|r| r.1.seq).min().unwrap_or(0);
        let last = records.iter().map(|r| r.1.seq).max().unwrap_or(0);
        let mut bytes = Vec::with_capacity(records.len() * RECORD as usize);
        for (fp, f) in &records {
            bytes.extend_from_slice(&fp.to_be_bytes());
            bytes.extend_from_slice(&f.seq.to_be_bytes());
            bytes.extend_from_slice(&f.team.to_be_bytes());
        }
        let name = format!("ids-{first:020}-{last:020}.run");
        let tmp = self.dir.join(format!("{name}.tmp"));
        let path = self.dir.join(&name);
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)?;
        let run = Run {
            first,
            last,
            file: File::open(&path)?,
            records: records.len() as u64,
        };
        // The run is visible before the entries leave memory: a lookup never misses them.
        self.runs.write().map_err(|_| poisoned())?.push(run);
        let mut recent = self.recent.lock().map_err(|_| poisoned())?;
        recent.retain(|_, v| v.seq > last);
        Ok(())
    }

    /// The entry of a request id, newest first.
    pub fn find(&self, request_id: &str) -> std::io::Result<Option<Found>> {
        let fp = request_fingerprint(request_id);
        if let Some(f) = self.recent.lock().map_err(|_| poisoned())?.get(&fp) {
            return Ok(Some(*f));
        }
        let runs = self.runs.read().map_err(|_| poisoned())?;
        for run in runs.iter().rev() {
            if let Some(f) = run.find(fp)? {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }
}

fn poisoned() -> std::io::Error {
    std::io::Error::other("tlog index lock poisoned")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn runs_are_found_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let (ids, covered) = Ids::open(dir.path(), 0).unwrap();
        assert_eq!(covered, 0);
        for seq in 1..=10u64 {
            ids.add(
                request_fingerprint(&format!("req-{seq}")),
                Found { seq, team: 7 },
            )
            .unwrap();
        }
        ids.write_run().unwrap();
        ids.add(request_fingerprint("req-11"), Found { seq: 11, team: 8 })
            .unwrap();
        assert_eq!(ids.find("req-3").unwrap(), Some(Found { seq: 3, team: 7 }));
        assert_eq!(
            ids.find("req-11").unwrap(),
            Some(Found { seq: 11, team: 8 })
        );
        assert_eq!(ids.find("req-12").unwrap(), None);
        drop(ids);
        let (ids, covered) = Ids::open(dir.path(), 100).unwrap();
        assert_eq!(covered, 10);
        assert_eq!(
            ids.find("req-10").unwrap(),
            Some(Found { seq: 10, team: 7 })
        );
        assert_eq!(ids.find("req-11").unwrap(), None);
        // A run beyond what the tree kept is dropped.
        drop(ids);
        let (_, covered) = Ids::open(dir.path(), 5).unwrap();
        assert_eq!(covered, 0);
    }
}

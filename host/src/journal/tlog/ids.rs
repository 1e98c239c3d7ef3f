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

/// Entries held in memory before they are written out as a run (32 bytes of key and value each,
/// plus the map's own overhead; not measured).
pub const RUN_ENTRIES: usize = 1 << 19;
const RECORD: u64 = 32;

/// A request id's 128-bit fingerprint: the gateway's ids (`req-` + a UUIDv7 in hex) are their
/// own UUID, already unique and random in their low bits; any other id, the first 16 bytes of
/// its SHA-256.
pub fn request_fingerprint(request_id: &str) -> u128 {
    fingerprint(request_id).0
}

/// The fingerprint, and whether it is the id's own (time-ordered) UUID rather than a hash.
fn fingerprint(request_id: &str) -> (u128, bool) {
    if let Some(hex) = request_id.strip_prefix("req-")
        && hex.len() == 32
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && let Ok(v) = u128::from_str_radix(hex, 16)
    {
        return (v, true);
    }
    let d = Sha256::digest(request_id.as_bytes());
    (
        u128::from_be_bytes(d[..16].try_into().unwrap_or([0; 16])),
        false,
    )
}

/// Fingerprints are unique 128-bit values: the map hashes them with one multiply, not SipHash.
#[derive(Default)]
struct LowBits(u64);

impl std::hash::Hasher for LowBits {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        // Folded and multiplied (Fibonacci hashing): the table takes its tag from the top bits,
        // which a sequential id would leave all equal.
        self.0 = ((v as u64) ^ ((v >> 64) as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The entries not yet written out. The gateway's ids are UUIDv7s, time-ordered, so their
/// fingerprints arrive nearly in order: they are kept sorted in a vector, where an insert lands
/// at or near its end (a hash map of half a million entries cost two cache misses an insert, a
/// fifth of the follower's time by `perf annotate`). The few that land far from the end (ids
/// that are not the gateway's, whose fingerprint is a hash) go to a small map.
#[derive(Default)]
struct Recent {
    sorted: Vec<(u128, Found)>,
    scattered: HashMap<u128, Found, std::hash::BuildHasherDefault<LowBits>>,
}

/// How many records from the end of [`Recent::sorted`] an insert may land (and move).
const NEAR_END: usize = 1024;

/// A UUIDv7 whose time is this far (ms) past the newest one sorted goes to the map: one id from
/// the future would otherwise send every later id there.
const AHEAD_MS: u128 = 60_000;

impl Recent {
    fn len(&self) -> usize {
        self.sorted.len() + self.scattered.len()
    }

    /// Records `found` for `fp` (a later seq for the same fingerprint replaces the earlier);
    /// `ordered`: `fp` is a UUIDv7 (a hash goes to the map).
    fn insert(&mut self, fp: u128, ordered: bool, found: Found) {
        let last = self.sorted.last().map(|(f, _)| *f);
        let ahead = |last: u128| fp > last && (fp >> 80) > (last >> 80) + AHEAD_MS;
        if !ordered || last.is_some_and(ahead) {
            self.scattered.insert(fp, found);
            return;
        }
        if last.is_none_or(|last| fp > last) {
            self.sorted.push((fp, found));
            return;
        }
        let from = self.sorted.len().saturating_sub(NEAR_END);
        if from > 0 && fp < self.sorted[from].0 {
            match self.sorted.binary_search_by(|(f, _)| f.cmp(&fp)) {
                Ok(i) => self.sorted[i].1 = found,
                Err(_) => {
                    self.scattered.insert(fp, found);
                }
            }
            return;
        }
        let i = from + self.sorted[from..].partition_point(|(f, _)| *f < fp);
        match self.sorted.get_mut(i) {
            Some((f, slot)) if *f == fp => *slot = found,
            _ => self.sorted.insert(i, (fp, found)),
        }
    }

    /// The newest entry recorded for `fp`.
    fn get(&self, fp: u128) -> Option<Found> {
        let sorted = self
            .sorted
            .binary_search_by(|(f, _)| f.cmp(&fp))
            .ok()
            .map(|i| self.sorted[i].1);
        let scattered = self.scattered.get(&fp).copied();
        sorted.into_iter().chain(scattered).max_by_key(|f| f.seq)
    }

    /// Every entry, sorted by fingerprint, one per fingerprint (its newest).
    fn records(&self) -> Vec<(u128, Found)> {
        let mut records: Vec<(u128, Found)> = self
            .sorted
            .iter()
            .copied()
            .chain(self.scattered.iter().map(|(k, v)| (*k, *v)))
            .collect();
        records.sort_unstable_by_key(|(fp, f)| (*fp, f.seq));
        records.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        records
    }

    /// Drops the entries at or below `seq` (written out in a run).
    fn drop_upto(&mut self, seq: u64) {
        self.sorted.retain(|(_, f)| f.seq > seq);
        self.scattered.retain(|_, f| f.seq > seq);
    }
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

/// Records per block: a run's fences (in memory) hold every block's first fingerprint, so a
/// look-up reads one block.
const BLOCK: u64 = 256;

struct Run {
    first: u64,
    last: u64,
    file: File,
    records: u64,
    /// The first fingerprint of each block, and the run's last: a run whose range does not
    /// hold a fingerprint is not read (the gateway's ids are time-ordered UUIDs, so runs
    /// barely overlap).
    fences: Vec<u128>,
    max: u128,
}

fn decode(b: &[u8]) -> (u128, Found) {
    let fp = u128::from_be_bytes(b[..16].try_into().unwrap_or([0; 16]));
    let seq = u64::from_be_bytes(b[16..24].try_into().unwrap_or([0; 8]));
    let team = u64::from_be_bytes(b[24..32].try_into().unwrap_or([0; 8]));
    (fp, Found { seq, team })
}

impl Run {
    /// Opens a run file and reads its fences (one record per block).
    fn open(path: &Path, first: u64, last: u64) -> std::io::Result<Run> {
        let file = File::open(path)?;
        let records = file.metadata()?.len() / RECORD;
        let mut fences = Vec::with_capacity(records.div_ceil(BLOCK) as usize);
        let mut b = [0u8; RECORD as usize];
        for block in 0..records.div_ceil(BLOCK) {
            file.read_exact_at(&mut b, block * BLOCK * RECORD)?;
            fences.push(decode(&b).0);
        }
        let max = if records > 0 {
            file.read_exact_at(&mut b, (records - 1) * RECORD)?;
            decode(&b).0
        } else {
            0
        };
        Ok(Run {
            first,
            last,
            file,
            records,
            fences,
            max,
        })
    }

    fn find(&self, fp: u128) -> std::io::Result<Option<Found>> {
        if self.fences.first().is_none_or(|min| fp < *min) || fp > self.max {
            return Ok(None);
        }
        let block = self.fences.partition_point(|f| *f <= fp) as u64 - 1;
        let start = block * BLOCK;
        let n = (self.records - start).min(BLOCK);
        let mut bytes = vec![0u8; (n * RECORD) as usize];
        self.file.read_exact_at(&mut bytes, start * RECORD)?;
        let records: Vec<(u128, Found)> = bytes.chunks_exact(RECORD as usize).map(decode).collect();
        Ok(records
            .binary_search_by(|(at, _)| at.cmp(&fp))
            .ok()
            .map(|i| records[i].1))
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
    recent: Mutex<Recent>,
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
            runs.push(Run::open(&item.path(), first, last)?);
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
                recent: Mutex::new(Recent::default()),
                runs: RwLock::new(keep),
            },
            covered,
        ))
    }

    /// Records that `request_id`'s entry is `found`. Writes a run once enough are held.
    pub fn add(&self, request_id: &str, found: Found) -> std::io::Result<()> {
        let (fp, ordered) = fingerprint(request_id);
        let full = {
            let mut recent = self.recent.lock().map_err(|_| poisoned())?;
            recent.insert(fp, ordered, found);
            recent.len() >= RUN_ENTRIES
        };
        if full { self.write_run() } else { Ok(()) }
    }

    /// Writes the entries held in memory as a sorted run and drops them from memory.
    fn write_run(&self) -> std::io::Result<()> {
        let records = self.recent.lock().map_err(|_| poisoned())?.records();
        if records.is_empty() {
            return Ok(());
        }
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
        let run = Run::open(&path, first, last)?;
        // The run is visible before the entries leave memory: a lookup never misses them.
        self.runs.write().map_err(|_| poisoned())?.push(run);
        let mut recent = self.recent.lock().map_err(|_| poisoned())?;
        recent.drop_upto(last);
        Ok(())
    }

    /// The entry of a request id, newest first.
    pub fn find(&self, request_id: &str) -> std::io::Result<Option<Found>> {
        let fp = request_fingerprint(request_id);
        if let Some(f) = self.recent.lock().map_err(|_| poisoned())?.get(fp) {
            return Ok(Some(f));
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
    fn runs_of_many_blocks_find_every_id_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let (ids, _) = Ids::open(dir.path(), 0).unwrap();
        // Both kinds of id: the gateway's (their UUID is the fingerprint) and others (hashed).
        let id = |seq: u64| {
            if seq.is_multiple_of(2) {
                format!(
                    "req-{:032x}",
                    0x0193_0000_0000_7000_8000_0000_0000_0000u128 + u128::from(seq) * 7919
                )
            } else {
                format!("other-{seq}")
            }
        };
        for seq in 1..=1_000u64 {
            ids.add(&id(seq), Found { seq, team: seq % 3 }).unwrap();
        }
        ids.write_run().unwrap();
        for seq in 1..=1_000u64 {
            assert_eq!(
                ids.find(&id(seq)).unwrap(),
                Some(Found { seq, team: seq % 3 }),
                "{seq}"
            );
        }
        assert_eq!(ids.find(&id(1_001)).unwrap(), None);
        assert_eq!(ids.find(&id(1_002)).unwrap(), None);
        assert_eq!(ids.find("req-").unwrap(), None);
    }

    /// Near-order, far out of order, hashed and repeated fingerprints: each found at its newest
    /// seq, in memory and in the run written from it, against a plain map of the same inserts.
    #[test]
    fn recent_entries_in_any_order_are_found_at_their_newest() {
        let dir = tempfile::tempdir().unwrap();
        let (ids, _) = Ids::open(dir.path(), 0).unwrap();
        let mut expected = HashMap::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base = 0x0193_0000_0000_7000_8000_0000_0000_0000u128;
        let uuid = |v: u128| format!("req-{v:032x}");
        for seq in 1..=20_000u64 {
            let id = match next() % 10 {
                // Far from the end: an old id, a hashed one, one from the future.
                0 => uuid(base + u128::from(next() % (seq * 16))),
                1 => format!("other-{}", next() % 5_000),
                2 if seq % 7 == 0 => uuid(base + (1u128 << 100)),
                // Repeated: the same id again, later.
                2 => expected
                    .keys()
                    .next()
                    .cloned()
                    .unwrap_or_else(|| uuid(base)),
                // Near order: in-flight requests finish out of the order they started.
                _ => uuid(base + u128::from(seq * 16).saturating_sub(u128::from(next() % 4_096))),
            };
            let found = Found { seq, team: seq % 5 };
            ids.add(&id, found).unwrap();
            expected.insert(id, found);
        }
        let recent = ids.recent.lock().unwrap();
        assert!(!recent.scattered.is_empty() && recent.sorted.len() > 10_000);
        assert!(recent.sorted.windows(2).all(|w| w[0].0 < w[1].0));
        for (id, found) in &expected {
            assert_eq!(recent.get(request_fingerprint(id)), Some(*found), "{id}");
        }
        assert!(recent.len() >= expected.len());
        drop(recent);
        ids.write_run().unwrap();
        assert_eq!(ids.recent.lock().unwrap().len(), 0);
        let runs = ids.runs.read().unwrap();
        assert_eq!(runs[0].records, expected.len() as u64);
        for (id, found) in &expected {
            assert_eq!(
                runs[0].find(request_fingerprint(id)).unwrap(),
                Some(*found),
                "{id}"
            );
        }
    }

    #[test]
    fn runs_are_found_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let (ids, covered) = Ids::open(dir.path(), 0).unwrap();
        assert_eq!(covered, 0);
        for seq in 1..=10u64 {
            ids.add(&format!("req-{seq}"), Found { seq, team: 7 })
                .unwrap();
        }
        ids.write_run().unwrap();
        ids.add("req-11", Found { seq: 11, team: 8 }).unwrap();
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

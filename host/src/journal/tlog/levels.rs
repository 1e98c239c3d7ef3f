//! The tree's interior on disk: one file per level, `level-<NN>.bin`, of 32-byte hashes; record
//! `i` of level `k` is the root of the complete subtree over leaves `[i·2^k, (i+1)·2^k)`, level 0
//! being the leaf hashes (the stored hashes of Go's `sumdb/tlog`; a `tlog-tiles` tile of height
//! 8 is 256 consecutive records of level 0, 8, 16, …). Append-only; a tree of n leaves has
//! ⌊n/2^k⌋ records at level k, so a proof costs O(log n) positioned reads. `synced` names the
//! size up to which the files were last fsynced: what lies beyond may be lost with the page cache
//! and is rebuilt from the journal at open.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use super::tree::{Hash, Nodes, node_hash};

/// Levels a tree of up to 2^63 leaves can have.
const MAX_LEVELS: usize = 64;

fn level_path(dir: &Path, level: usize) -> PathBuf {
    dir.join(format!("level-{level:02}.bin"))
}

fn synced_path(dir: &Path) -> PathBuf {
    dir.join("synced")
}

/// The size the files were last made durable at (0 when never).
pub fn read_synced(dir: &Path) -> std::io::Result<u64> {
    match fs::read_to_string(synced_path(dir)) {
        Ok(t) => t.trim().parse().map_err(|_| {
            std::io::Error::new(ErrorKind::InvalidData, "tlog `synced` is not a number")
        }),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// Writes `synced` (temporary file, fsync, rename).
fn write_synced(dir: &Path, size: u64) -> std::io::Result<()> {
    let tmp = dir.join("synced.tmp");
    let mut f = File::create(&tmp)?;
    writeln!(f, "{size}")?;
    f.sync_all()?;
    fs::rename(&tmp, synced_path(dir))
}

/// Read side: positioned reads of stored hashes, shared by every proof.
pub struct LevelReader {
    dir: PathBuf,
    files: RwLock<Vec<File>>,
}

impl LevelReader {
    pub fn new(dir: &Path) -> LevelReader {
        LevelReader {
            dir: dir.to_path_buf(),
            files: RwLock::new(Vec::new()),
        }
    }

    fn read(&self, level: usize, index: u64) -> std::io::Result<Hash> {
        let mut out = [0u8; 32];
        {
            let files = self.files.read().map_err(|_| poisoned())?;
            if let Some(f) = files.get(level) {
                f.read_exact_at(&mut out, index * 32)?;
                return Ok(out);
            }
        }
        let mut files = self.files.write().map_err(|_| poisoned())?;
        while files.len() <= level {
            let next = level_path(&self.dir, files.len());
            files.push(File::open(next)?);
        }
        files[level].read_exact_at(&mut out, index * 32)?;
        Ok(out)
    }
}

fn poisoned() -> std::io::Error {
    std::io::Error::other("tlog reader lock poisoned")
}

impl Nodes for LevelReader {
    fn node(&self, level: u32, index: u64) -> std::io::Result<Hash> {
        self.read(level as usize, index)
    }
}

/// Write side, owned by the follower: appends leaves, completing parents as they fill.
pub struct LevelWriter {
    dir: PathBuf,
    files: Vec<File>,
    /// Records per level on disk (with what `pending` holds written).
    counts: Vec<u64>,
    /// The last record of each level whose count is odd: the left half of the next parent.
    left: Vec<Option<Hash>>,
    /// Records of the batch being assembled, per level.
    pending: Vec<Vec<u8>>,
    size: u64,
}

impl LevelWriter {
    /// Opens the level files at the size last made durable, or `most` if smaller (the journal's
    /// head: leaves of entries a crash took are dropped); longer files are cut to it, a shorter
    /// one means damage: start over from 0.
    pub fn open(dir: &Path, most: u64) -> std::io::Result<LevelWriter> {
        fs::create_dir_all(dir)?;
        let synced = read_synced(dir)?.min(most);
        match LevelWriter::open_at(dir, synced) {
            Ok(w) => Ok(w),
            Err(e) if e.kind() == ErrorKind::InvalidData => {
                tracing::warn!(dir = %dir.display(), error = %e, "transparency log files damaged; rebuilding them from the journal");
                for level in 0..MAX_LEVELS {
                    match fs::remove_file(level_path(dir, level)) {
                        Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
                        _ => {}
                    }
                }
                write_synced(dir, 0)?;
                LevelWriter::open_at(dir, 0)
            }
            Err(e) => Err(e),
        }
    }

    fn open_at(dir: &Path, size: u64) -> std::io::Result<LevelWriter> {
        let mut w = LevelWriter {
            dir: dir.to_path_buf(),
            files: Vec::new(),
            counts: Vec::new(),
            left: Vec::new(),
            pending: Vec::new(),
            size,
        };
        let mut level = 0;
        loop {
            let want = if level < 64 { size >> level } else { 0 };
            let path = level_path(dir, level);
            if want == 0 && !path.exists() {
                break;
            }
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)?;
            let have = f.metadata()?.len();
            if have < want * 32 {
                return Err(std::io::Error::new(
                    ErrorKind::InvalidData,
                    format!(
                        "{} holds {have} bytes, {} expected",
                        path.display(),
                        want * 32
                    ),
                ));
            }
            if have > want * 32 {
                f.set_len(want * 32)?;
            }
            let left = if want % 2 == 1 {
                let mut h = [0u8; 32];
                f.read_exact_at(&mut h, (want - 1) * 32)?;
                Some(h)
            } else {
                None
            };
            w.files.push(f);
            w.counts.push(want);
            w.left.push(left);
            w.pending.push(Vec::new());
            level += 1;
            if level >= MAX_LEVELS {
                break;
            }
        }
        Ok(w)
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Adds a leaf to the batch (written by [`LevelWriter::write`]).
    pub fn push(&mut self, leaf: Hash) {
        let mut h = leaf;
        let mut level = 0;
        loop {
            if self.counts.len() == level {
                self.counts.push(0);
                self.left.push(None);
                self.pending.push(Vec::new());
            }
            self.pending[level].extend_from_slice(&h);
            self.counts[level] += 1;
            match self.left[level].take() {
                None => {
                    self.left[level] = Some(h);
                    break;
                }
                Some(l) => {
                    h = node_hash(&l, &h);
                    level += 1;
                }
            }
        }
        self.size += 1;
    }

    /// Writes the batch's records at the end of each level file.
    pub fn write(&mut self) -> std::io::Result<()> {
        for level in 0..self.pending.len() {
            if self.pending[level].is_empty() {
                continue;
            }
            while self.files.len() <= level {
                let path = level_path(&self.dir, self.files.len());
                self.files.push(
                    OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create(true)
                        .truncate(false)
                        .open(path)?,
                );
            }
            let bytes = &self.pending[level];
            let at = self.counts[level] * 32 - bytes.len() as u64;
            self.files[level].write_all_at(bytes, at)?;
            self.pending[level].clear();
        }
        Ok(())
    }

    /// Makes everything written durable and records the size.
    pub fn sync(&mut self) -> std::io::Result<()> {
        for f in &self.files {
            f.sync_data()?;
        }
        write_synced(&self.dir, self.size)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::super::tree::{MemoryTree, leaf_hash, root};
    use super::*;

    #[test]
    fn files_hold_the_same_tree_and_reopen_at_the_synced_size() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LevelWriter::open(dir.path(), u64::MAX).unwrap();
        let mut mem = MemoryTree::default();
        for i in 0..300u32 {
            let l = leaf_hash(&i.to_be_bytes());
            w.push(l);
            mem.push(l);
            if i % 7 == 0 {
                w.write().unwrap();
            }
        }
        w.write().unwrap();
        w.sync().unwrap();
        let r = LevelReader::new(dir.path());
        for size in [1, 2, 3, 255, 256, 257, 300] {
            assert_eq!(root(&r, size).unwrap(), root(&mem, size).unwrap());
        }
        // More written but not synced: reopening cuts back to the synced size and goes on.
        for i in 300..333u32 {
            w.push(leaf_hash(&i.to_be_bytes()));
        }
        w.write().unwrap();
        drop(w);
        let mut w = LevelWriter::open(dir.path(), u64::MAX).unwrap();
        assert_eq!(w.size(), 300);
        for i in 300..333u32 {
            let l = leaf_hash(&i.to_be_bytes());
            w.push(l);
            mem.push(l);
        }
        w.write().unwrap();
        let r = LevelReader::new(dir.path());
        assert_eq!(root(&r, 333).unwrap(), root(&mem, 333).unwrap());
        // A level file shorter than the synced size: damage, rebuilt from zero.
        w.sync().unwrap();
        drop(w);
        let f = OpenOptions::new()
            .write(true)
            .open(level_path(dir.path(), 0))
            .unwrap();
        f.set_len(32 * 10).unwrap();
        assert_eq!(LevelWriter::open(dir.path(), u64::MAX).unwrap().size(), 0);
    }
}

//! Another replica's log, rebuilt here from its lines in the shared store (replicas: each
//! replica's chain is its own log, with its own origin and key). The same files as a chain's own
//! log (`tlog-<replica>/` in this replica's journal directory), fed by whoever holds the mirror's
//! lock with the rows after [`Mirror::next_seq`]; read by the proof endpoints for entries another
//! replica wrote, against the heads that replica published.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::follow::Follower;
use super::ids::{Found, Ids};
use super::levels::{LevelReader, LevelWriter};
use super::tree::{self, Hash};
use super::{TlogError, tlog_dir};

pub struct Mirror {
    follower: Mutex<Follower>,
    reader: LevelReader,
    ids: Arc<Ids>,
    size: AtomicU64,
}

impl Mirror {
    /// Opens (or starts) the mirror of `replica`'s log under `journal_dir` (blocking).
    pub fn open(journal_dir: &Path, replica: &str) -> Result<Mirror, TlogError> {
        let dir = tlog_dir(journal_dir, replica);
        let levels = LevelWriter::open(&dir, u64::MAX)?;
        let (ids, indexed) = Ids::open(&dir, levels.size())?;
        let ids = Arc::new(ids);
        let size = levels.size();
        Ok(Mirror {
            follower: Mutex::new(Follower {
                levels,
                ids: ids.clone(),
                indexed,
                unsynced: 0,
                teams: Default::default(),
            }),
            reader: LevelReader::new(&dir),
            ids,
            size: AtomicU64::new(size),
        })
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Follower>, TlogError> {
        self.follower
            .lock()
            .map_err(|_| TlogError::Stopped("mirror lock poisoned".into()))
    }

    /// The seq of the first line the mirror still needs.
    pub fn next_seq(&self) -> Result<u64, TlogError> {
        let f = self.lock()?;
        Ok(f.levels.size().min(f.indexed) + 1)
    }

    /// Adds lines in seq order (blocking); a line the mirror holds already is skipped, a gap
    /// is an error (the store no longer has the lines between).
    pub fn add<'a>(
        &self,
        lines: impl IntoIterator<Item = (u64, &'a [u8])>,
    ) -> Result<(), TlogError> {
        let mut f = self.lock()?;
        for (seq, line) in lines {
            f.add(seq, line)?;
        }
        f.write()?;
        self.size.store(f.levels.size(), Ordering::Release);
        Ok(())
    }

    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    pub fn inclusion(&self, index: u64, size: u64) -> Result<Vec<Hash>, TlogError> {
        Ok(tree::inclusion_proof(&self.reader, index, size)?)
    }

    pub fn consistency(&self, from: u64, to: u64) -> Result<Vec<Hash>, TlogError> {
        Ok(tree::consistency_proof(&self.reader, from, to)?)
    }

    pub fn find(&self, request_id: &str) -> Result<Option<Found>, TlogError> {
        Ok(self.ids.find(request_id)?)
    }
}

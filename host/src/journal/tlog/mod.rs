//! The journal as a transparency log (issue 48): an RFC 9162 Merkle tree over the chain's
//! entries (leaf `seq` − 1 = the entry's line as the JSONL export gives it, without its newline),
//! kept beside the segments in `tlog-<sovereign_id>/` by a follower thread; signed tree heads as
//! C2SP checkpoints; inclusion proofs (found by request id) and consistency proofs. Format,
//! endpoints and the auditor's three commands: docs/JOURNAL.md, "Transparency log".

pub mod audit;
mod follow;
mod ids;
mod levels;
mod mirror;
pub mod note;
pub mod tree;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ed25519_dalek::SigningKey;
use tokio::sync::watch;

use follow::{Backlog, Follower};
pub use follow::{Batch, Handoff};
use ids::Ids;
pub use ids::{Found, team_fingerprint};
use levels::{LevelReader, LevelWriter};
pub use mirror::Mirror;
use tree::Hash;

/// What can go wrong with the log (the journal itself goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum TlogError {
    #[error("transparency log I/O: {0}")]
    Io(String),
    #[error(
        "the journal's entries before seq {first} were pruned before the transparency log held them (it has {tree}); its tree cannot be built"
    )]
    Pruned { tree: u64, first: u64 },
    #[error("the transparency log holds {tree} leaves but was handed seq {seq}")]
    Gap { tree: u64, seq: u64 },
    #[error("the transparency log has stopped: {0}")]
    Stopped(String),
}

impl From<std::io::Error> for TlogError {
    fn from(e: std::io::Error) -> Self {
        TlogError::Io(e.to_string())
    }
}

impl From<crate::journal::JournalError> for TlogError {
    fn from(e: crate::journal::JournalError) -> Self {
        TlogError::Io(e.to_string())
    }
}

/// The default origin (and note key name) of a chain's log.
pub fn default_origin(sovereign_id: &str) -> String {
    format!("sovereign-gateway/journal/{sovereign_id}")
}

/// The log's directory beside the segments.
pub fn tlog_dir(journal_dir: &Path, sovereign_id: &str) -> PathBuf {
    journal_dir.join(format!("tlog-{sovereign_id}"))
}

/// A signed tree head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHead {
    pub size: u64,
    pub note: String,
}

/// What the follower publishes and the readers wait on.
pub(crate) struct Shared {
    size: watch::Sender<u64>,
    failure: OnceLock<String>,
}

impl Shared {
    fn publish(&self, size: u64) {
        self.size.send_replace(size);
    }

    fn fail(&self, reason: String) {
        let _ = self.failure.set(reason);
        // Wake waiters so they see the failure.
        self.size.send_modify(|_| {});
    }
}

/// A handle on a chain's log: cheap to clone, read by the proof endpoints.
#[derive(Clone)]
pub struct Tlog {
    inner: Arc<Inner>,
}

struct Inner {
    origin: String,
    key: SigningKey,
    dir: PathBuf,
    reader: LevelReader,
    ids: Arc<Ids>,
    shared: Arc<Shared>,
    latest: Mutex<Option<SignedHead>>,
}

impl Tlog {
    /// Opens the log of a chain whose recovered head is `head`, rebuilding from the segments
    /// what its files lack, and starts the follower; the writer sends it every batch on the
    /// returned channel.
    pub(super) fn open(
        journal_dir: &Path,
        sovereign_id: &str,
        origin: &str,
        key: SigningKey,
        head: u64,
    ) -> Result<(Tlog, Handoff), TlogError> {
        let dir = tlog_dir(journal_dir, sovereign_id);
        let levels = LevelWriter::open(&dir, head)?;
        let (ids, indexed) = Ids::open(&dir, head)?;
        let ids = Arc::new(ids);
        let mut follower = Follower {
            levels,
            ids: ids.clone(),
            indexed,
            unsynced: 0,
            teams: Default::default(),
        };
        follower.replay(journal_dir, sovereign_id, head)?;
        let size = follower.levels.size();
        let (tx_size, _) = watch::channel(size);
        let shared = Arc::new(Shared {
            size: tx_size,
            failure: OnceLock::new(),
        });
        let latest = read_latest(&dir, size);
        let inner = Inner {
            origin: origin.to_string(),
            key,
            reader: LevelReader::new(&dir),
            dir,
            ids,
            shared: shared.clone(),
            latest: Mutex::new(latest),
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let backlog = Arc::new(Backlog::default());
        let theirs = backlog.clone();
        std::thread::Builder::new()
            .name(format!("tlog-{sovereign_id}"))
            .spawn(move || follower.run(rx, theirs, shared))
            .map_err(TlogError::from)?;
        Ok((
            Tlog {
                inner: Arc::new(inner),
            },
            Handoff { tx, backlog },
        ))
    }

    /// The verifier key line of the log's signing key (signed-note format).
    pub fn verifier_key(&self) -> String {
        note::verifier_key(&self.inner.origin, &self.inner.key.verifying_key())
    }

    /// Leaves in the tree (written by the follower; readable by proofs).
    pub fn size(&self) -> u64 {
        *self.inner.shared.size.borrow()
    }

    fn check(&self) -> Result<(), TlogError> {
        match self.inner.shared.failure.get() {
            Some(e) => Err(TlogError::Stopped(e.clone())),
            None => Ok(()),
        }
    }

    /// Waits until the tree holds at least `size` leaves.
    pub async fn reach(&self, size: u64) -> Result<(), TlogError> {
        let mut rx = self.inner.shared.size.subscribe();
        loop {
            self.check()?;
            if *rx.borrow_and_update() >= size {
                return Ok(());
            }
            rx.changed()
                .await
                .map_err(|_| TlogError::Stopped("the follower is gone".into()))?;
        }
    }

    /// The root of the tree of the first `size` leaves (blocking reads).
    pub fn root(&self, size: u64) -> Result<Hash, TlogError> {
        self.check()?;
        Ok(tree::root(&self.inner.reader, size)?)
    }

    /// Signs the tree head at `size` (≤ the tree's size), keeps it as the latest when it is the
    /// largest yet, and writes it to `tlog-<id>/checkpoint` for static publication.
    pub fn sign(&self, size: u64) -> Result<SignedHead, TlogError> {
        let root = self.root(size)?;
        let note = note::sign_checkpoint(&self.inner.origin, size, &root, &self.inner.key);
        let head = SignedHead { size, note };
        let mut latest = self
            .inner
            .latest
            .lock()
            .map_err(|_| TlogError::Stopped("lock poisoned".into()))?;
        if latest.as_ref().is_none_or(|l| l.size <= size) {
            let tmp = self.inner.dir.join("checkpoint.tmp");
            std::fs::write(&tmp, &head.note)
                .and_then(|()| std::fs::rename(&tmp, self.inner.dir.join("checkpoint")))?;
            *latest = Some(head.clone());
        }
        Ok(head)
    }

    /// The largest signed tree head so far.
    pub fn latest(&self) -> Option<SignedHead> {
        self.inner.latest.lock().ok().and_then(|l| l.clone())
    }

    /// The inclusion proof of leaf `index` in the tree of `size` leaves (blocking reads).
    pub fn inclusion(&self, index: u64, size: u64) -> Result<Vec<Hash>, TlogError> {
        self.check()?;
        Ok(tree::inclusion_proof(&self.inner.reader, index, size)?)
    }

    /// The consistency proof between the trees of `from` and `to` leaves (blocking reads).
    pub fn consistency(&self, from: u64, to: u64) -> Result<Vec<Hash>, TlogError> {
        self.check()?;
        Ok(tree::consistency_proof(&self.inner.reader, from, to)?)
    }

    /// Where a request's entry is (blocking reads).
    pub fn find(&self, request_id: &str) -> Result<Option<Found>, TlogError> {
        Ok(self.inner.ids.find(request_id)?)
    }
}

/// The last published head, if it is still inside the tree (a crash may have cut the tree
/// back; the head is then signed again on demand).
fn read_latest(dir: &Path, size: u64) -> Option<SignedHead> {
    let note = std::fs::read_to_string(dir.join("checkpoint")).ok()?;
    let head_size: u64 = note.lines().nth(1)?.parse().ok()?;
    (head_size <= size).then_some(SignedHead {
        size: head_size,
        note,
    })
}

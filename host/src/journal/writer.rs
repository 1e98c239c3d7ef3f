//! The appender: a cheap [`Journal`] handle over a bounded queue, and one dedicated writer thread
//! that assigns seq, chains and hashes entries, and makes them durable with group commit (every
//! entry that queued up while an fsync was in flight goes into the next write and fsync).

use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, TryRecvError};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use tokio::sync::{Semaphore, oneshot};

use super::checkpoint::{Checkpoint, SignedCheckpoint};
use super::entry::{Entry, EntryDraft, format_utc};
pub use super::recover::OpenReport;
use super::recover::{ChainState, create_segment, recover};
use super::tlog::{Batch, Handoff, Tlog};
use super::{Durability, JournalConfig, JournalError};

/// What `append` promises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ack {
    /// Durable mode: the entry is on disk (fsynced) at `seq` with this `journal_hash`.
    Durable { seq: u64, journal_hash: String },
    /// Batched mode: queued; durable within the configured window (see [`Durability`]).
    Queued,
}

type Reply<T> = oneshot::Sender<Result<T, String>>;

#[expect(
    clippy::large_enum_variant,
    reason = "Append is the hot variant; boxing it would allocate once per entry"
)]
enum Msg {
    Append {
        draft: EntryDraft,
        queued_at: Instant,
        reply: Option<Reply<(u64, String)>>,
    },
    /// Answered with the durable seq once everything queued before it is durable.
    Flush(Reply<u64>),
    /// Flush, then sign and write a checkpoint of the durable head (`None` while the chain is
    /// empty).
    Checkpoint(Reply<Option<SignedCheckpoint>>),
    /// Flush, write a checkpoint, stop.
    Close(Reply<u64>),
}

/// A handle on an open journal chain; clones share the writer. When the last clone is dropped
/// the writer flushes, checkpoints and stops.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

struct Inner {
    tx: mpsc::Sender<Msg>,
    permits: Arc<Semaphore>,
    durability: Durability,
    durable_seq: Arc<AtomicU64>,
    fsyncs: Arc<AtomicU64>,
    failure: Arc<OnceLock<String>>,
    /// The chain's transparency log, or why it could not be opened.
    tlog: Result<Tlog, String>,
}

impl Journal {
    /// Opens (recovers and verifies) the chain and starts its writer thread. Blocking file I/O:
    /// from async code use [`Journal::open_async`].
    pub fn open(cfg: JournalConfig) -> Result<(Journal, OpenReport), JournalError> {
        let (state, report) = recover(&cfg)?;
        let tlog = if cfg.transparency {
            Tlog::open(
                &cfg.dir,
                &cfg.sovereign_id,
                &cfg.origin,
                state.key.clone(),
                state.head_seq,
            )
            .map_err(|e| {
                tracing::error!(error = %e, "transparency log unavailable; the journal goes on without proofs");
                e.to_string()
            })
        } else {
            Err("it is turned off ([journal] transparency_log = false)".to_string())
        };
        let (tlog, follower) = match tlog {
            Ok((tlog, follower)) => (Ok(tlog), Some(follower)),
            Err(e) => (Err(e), None),
        };
        let (tx, rx) = mpsc::channel();
        let (spare_tx, spare_rx) = mpsc::channel();
        let permits = Arc::new(Semaphore::new(cfg.queue_capacity));
        let durable_seq = Arc::new(AtomicU64::new(state.head_seq));
        let failure = Arc::new(OnceLock::new());
        let fsyncs = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            last_checkpoint_seq: state.head_seq,
            room: state.segment_bytes,
            state,
            buf: Vec::with_capacity(1 << 20),
            buf_first_seq: 0,
            line_ends: Vec::new(),
            follower,
            spare_tx,
            spare_rx,
            acks: Vec::new(),
            flushes: Vec::new(),
            checkpoints_wanted: Vec::new(),
            unsynced: 0,
            oldest_unsynced: None,
            durable_seq: durable_seq.clone(),
            fsyncs: fsyncs.clone(),
            permits: permits.clone(),
            failure: failure.clone(),
            cfg: cfg.clone(),
        };
        std::thread::Builder::new()
            .name(format!("journal-{}", cfg.sovereign_id))
            .spawn(move || writer.run(rx))
            .map_err(JournalError::io(&cfg.dir))?;
        let inner = Inner {
            tx,
            permits,
            durability: cfg.durability,
            durable_seq,
            fsyncs,
            failure,
            tlog,
        };
        Ok((
            Journal {
                inner: Arc::new(inner),
            },
            report,
        ))
    }

    /// [`Journal::open`] on the blocking pool.
    pub async fn open_async(cfg: JournalConfig) -> Result<(Journal, OpenReport), JournalError> {
        tokio::task::spawn_blocking(move || Journal::open(cfg))
            .await
            .map_err(|e| JournalError::Closed(Some(format!("open task failed: {e}"))))?
    }

    /// Appends an entry. Waits for queue space when the queue is full (back-pressure); then, in
    /// durable mode, until the entry is fsynced; in batched mode, not at all.
    pub async fn append(&self, draft: EntryDraft) -> Result<Ack, JournalError> {
        let permit = self
            .inner
            .permits
            .acquire()
            .await
            .map_err(|_| self.closed())?;
        permit.forget(); // handed back by the writer once the entry has left the queue
        let queued_at = Instant::now();
        match self.inner.durability {
            Durability::Batched { .. } => {
                self.send(Msg::Append {
                    draft,
                    queued_at,
                    reply: None,
                })?;
                Ok(Ack::Queued)
            }
            Durability::Durable => {
                let (reply, answer) = oneshot::channel();
                self.send(Msg::Append {
                    draft,
                    queued_at,
                    reply: Some(reply),
                })?;
                let (seq, journal_hash) = self.wait(answer).await?;
                Ok(Ack::Durable { seq, journal_hash })
            }
        }
    }

    /// Waits until every entry queued before this call is durable; returns the durable seq.
    pub async fn flush(&self) -> Result<u64, JournalError> {
        let (reply, answer) = oneshot::channel();
        self.send(Msg::Flush(reply))?;
        self.wait(answer).await
    }

    /// Waits until every entry queued before this call is durable, then signs a checkpoint of
    /// the head and appends it to the checkpoints file (a fresh one even when the head has not
    /// moved since the last: its timestamp says when it was vouched for). `None` for an empty
    /// chain.
    pub async fn checkpoint_now(&self) -> Result<Option<SignedCheckpoint>, JournalError> {
        let (reply, answer) = oneshot::channel();
        self.send(Msg::Checkpoint(reply))?;
        self.wait(answer).await
    }

    /// Flushes, writes a final checkpoint and stops the writer (other clones then get `Closed`).
    pub async fn close(self) -> Result<u64, JournalError> {
        let (reply, answer) = oneshot::channel();
        self.send(Msg::Close(reply))?;
        self.wait(answer).await
    }

    /// Whether an append returns only once its entry is fsynced (durable mode).
    pub fn is_durable(&self) -> bool {
        self.inner.durability == Durability::Durable
    }

    /// The highest seq known to be on disk.
    pub fn durable_seq(&self) -> u64 {
        self.inner.durable_seq.load(Ordering::Acquire)
    }

    /// The chain's transparency log, or why it is unavailable.
    pub fn tlog(&self) -> Result<&Tlog, &str> {
        self.inner.tlog.as_ref().map_err(String::as_str)
    }

    /// How many segment fsyncs the writer has done (group commit: far fewer than entries).
    pub fn fsyncs(&self) -> u64 {
        self.inner.fsyncs.load(Ordering::Relaxed)
    }

    fn send(&self, msg: Msg) -> Result<(), JournalError> {
        self.inner.tx.send(msg).map_err(|_| self.closed())
    }

    async fn wait<T>(
        &self,
        answer: oneshot::Receiver<Result<T, String>>,
    ) -> Result<T, JournalError> {
        match answer.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(JournalError::Closed(Some(e))),
            Err(_) => Err(self.closed()),
        }
    }

    fn closed(&self) -> JournalError {
        JournalError::Closed(self.inner.failure.get().cloned())
    }
}

/// A durable-mode appender waiting for the fsync of its entry.
struct Waiter {
    reply: Reply<(u64, String)>,
    seq: u64,
    hash: String,
}

/// The writer thread's state.
struct Writer {
    cfg: JournalConfig,
    state: ChainState,
    /// Encoded lines of the batch being assembled, the first of them at `buf_first_seq`.
    buf: Vec<u8>,
    buf_first_seq: u64,
    /// Where each line of `buf` ends (for the follower, which then need not look for them).
    line_ends: Vec<u32>,
    /// The transparency log's follower: each written batch is handed to it whole, and its
    /// buffers come back on `spare_rx` to be filled again.
    follower: Option<Handoff>,
    spare_tx: mpsc::Sender<(Vec<u8>, Vec<u32>)>,
    spare_rx: mpsc::Receiver<(Vec<u8>, Vec<u32>)>,
    /// Durable-mode appenders waiting for the next fsync.
    acks: Vec<Waiter>,
    flushes: Vec<Reply<u64>>,
    /// `checkpoint_now` callers, answered after the next sync.
    checkpoints_wanted: Vec<Reply<Option<SignedCheckpoint>>>,
    /// The active segment's length: its data, then (`preallocate_bytes`) zeroed room up to
    /// here. The room is written, not a hole (whose blocks would be allocated at each sync), a
    /// size change once per `preallocate_bytes`, and cut off when the segment is closed; after a
    /// crash, opening cuts it (`segment::cut_torn_tail`).
    room: u64,
    /// Entries written but not yet fsynced, and when the oldest of them was queued.
    unsynced: usize,
    oldest_unsynced: Option<Instant>,
    last_checkpoint_seq: u64,
    durable_seq: Arc<AtomicU64>,
    fsyncs: Arc<AtomicU64>,
    permits: Arc<Semaphore>,
    failure: Arc<OnceLock<String>>,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        if let Err(e) = self.serve(&rx) {
            let text = e.to_string();
            tracing::error!(error = %text, "journal writer failed; appends are refused");
            let _ = self.failure.set(text.clone());
            self.permits.close();
            for w in self.acks.drain(..) {
                let _ = w.reply.send(Err(text.clone()));
            }
            for reply in self.flushes.drain(..) {
                let _ = reply.send(Err(text.clone()));
            }
            for reply in self.checkpoints_wanted.drain(..) {
                let _ = reply.send(Err(text.clone()));
            }
        }
    }

    fn serve(&mut self, rx: &mpsc::Receiver<Msg>) -> Result<(), JournalError> {
        /// Longest sleep of the batched writer between looks at its queue.
        const BATCH_POLL: std::time::Duration = std::time::Duration::from_millis(1);
        loop {
            // Wait for work, or (batched mode, entries waiting for their fsync) sleep towards the
            // window's end in slices of `BATCH_POLL`: whatever is queued meanwhile goes into one
            // write, instead of the writer waking (and writing) once per entry; a slice is short
            // enough that `max_entries` and flush requests are still honoured promptly.
            let first = match (self.deadline(), self.oldest_unsynced) {
                (Some(deadline), Some(_)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if !left.is_zero() {
                        std::thread::sleep(left.min(BATCH_POLL));
                    }
                    match rx.try_recv() {
                        Ok(m) => Some(m),
                        Err(TryRecvError::Empty) => None,
                        Err(TryRecvError::Disconnected) => return self.shut_down(None),
                    }
                }
                _ => match rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return self.shut_down(None),
                },
            };
            let mut taken = 0;
            let mut yielded = false;
            let mut close = None;
            let mut next = first;
            while let Some(msg) = next {
                match msg {
                    Msg::Append {
                        draft,
                        queued_at,
                        reply,
                    } => {
                        self.encode(draft, reply)?;
                        self.oldest_unsynced =
                            Some(self.oldest_unsynced.unwrap_or(queued_at).min(queued_at));
                        taken += 1;
                    }
                    Msg::Flush(reply) => self.flushes.push(reply),
                    Msg::Checkpoint(reply) => self.checkpoints_wanted.push(reply),
                    Msg::Close(reply) => {
                        close = Some(reply);
                        break;
                    }
                }
                if taken >= self.cfg.max_batch {
                    break;
                }
                next = rx.try_recv().ok();
                if next.is_none() && !yielded {
                    // The queue is empty: the CPU goes once to whoever is ready to run (on a
                    // busy gateway, a lane about to append), and what came meanwhile joins this
                    // write — larger batches, fewer fsyncs (bench/README.md, "Yielding before a
                    // commit").
                    yielded = true;
                    std::thread::yield_now();
                    next = rx.try_recv().ok();
                }
            }
            self.write_buffered()?;
            self.unsynced += taken;
            if close.is_some() {
                return self.shut_down(close);
            }
            if self.must_sync() {
                self.sync()?;
            }
            self.permits.add_permits(taken);
        }
    }

    /// Batched mode: when the oldest unsynced entry must be on disk.
    fn deadline(&self) -> Option<Instant> {
        match self.cfg.durability {
            Durability::Batched { window, .. } => self.oldest_unsynced.map(|t| t + window),
            Durability::Durable => None,
        }
    }

    fn must_sync(&self) -> bool {
        let waiting = !self.flushes.is_empty() || !self.checkpoints_wanted.is_empty();
        if self.unsynced == 0 {
            return waiting;
        }
        match self.cfg.durability {
            Durability::Durable => true,
            Durability::Batched { max_entries, .. } => {
                waiting
                    || self.unsynced >= max_entries
                    || self.deadline().is_some_and(|d| d <= Instant::now())
            }
        }
    }

    /// Gives the draft its seq and link, hashes it and appends its line to the batch buffer.
    fn encode(
        &mut self,
        draft: EntryDraft,
        reply: Option<Reply<(u64, String)>>,
    ) -> Result<(), JournalError> {
        let seq = self.state.head_seq + 1;
        if self.buf.is_empty() {
            self.buf_first_seq = seq;
        }
        let prev = std::mem::take(&mut self.state.head_hash);
        let hash = Entry::from_draft(draft, seq, prev).seal_into(&mut self.buf);
        if self.follower.is_some() {
            self.line_ends
                .push(u32::try_from(self.buf.len()).unwrap_or(u32::MAX));
        }
        self.state.head_seq = seq;
        self.state.head_hash.clone_from(&hash);
        self.state.segment_entries += 1;
        if let Some(reply) = reply {
            self.acks.push(Waiter { reply, seq, hash });
        }
        Ok(())
    }

    fn write_buffered(&mut self) -> Result<(), JournalError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let at = self.state.segment_bytes;
        let end = at + self.buf.len() as u64;
        if self.cfg.preallocate_bytes > 0 && end > self.room {
            self.grow(end + self.cfg.preallocate_bytes)?;
        }
        self.state
            .segment
            .write_all_at(&self.buf, at)
            .map_err(JournalError::io(&self.state.segment_path))?;
        self.state.segment_bytes = end;
        match &self.follower {
            Some(follower) => {
                // A buffer back from the follower, else a new one as large as this batch's:
                // the next batch is written without growing it.
                let (spare, spare_ends) = self.spare_rx.try_recv().unwrap_or_else(|_| {
                    (
                        Vec::with_capacity(self.buf.capacity()),
                        Vec::with_capacity(self.line_ends.capacity()),
                    )
                });
                let bytes = std::mem::replace(&mut self.buf, spare);
                let ends = std::mem::replace(&mut self.line_ends, spare_ends);
                let batch = Batch {
                    first_seq: self.buf_first_seq,
                    bytes,
                    ends,
                    spare: self.spare_tx.clone(),
                };
                if !follower.send(batch) {
                    // The follower stopped (it said why); the journal goes on without it.
                    self.follower = None;
                }
            }
            None => self.buf.clear(),
        }
        Ok(())
    }

    /// Writes zeros from the room's end to `to` (made durable by the next sync).
    fn grow(&mut self, to: u64) -> Result<(), JournalError> {
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        while self.room < to {
            let n = (to - self.room).min(ZEROS.len() as u64);
            self.state
                .segment
                .write_all_at(&ZEROS[..n as usize], self.room)
                .map_err(JournalError::io(&self.state.segment_path))?;
            self.room += n;
        }
        Ok(())
    }

    /// Cuts the active segment's room off (before it is closed), durably.
    fn trim(&mut self) -> Result<(), JournalError> {
        if self.room > self.state.segment_bytes {
            let f = &self.state.segment;
            f.set_len(self.state.segment_bytes)
                .and_then(|()| f.sync_all())
                .map_err(JournalError::io(&self.state.segment_path))?;
            self.room = self.state.segment_bytes;
        }
        Ok(())
    }

    /// One fsync for everything written; then answers waiters, rotates, checkpoints.
    fn sync(&mut self) -> Result<(), JournalError> {
        if self.unsynced > 0 {
            self.state
                .segment
                .sync_data()
                .map_err(JournalError::io(&self.state.segment_path))?;
            self.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.unsynced = 0;
            self.oldest_unsynced = None;
        }
        let durable = self.state.head_seq;
        self.durable_seq.store(durable, Ordering::Release);
        for w in self.acks.drain(..) {
            let _ = w.reply.send(Ok((w.seq, w.hash)));
        }
        for reply in self.flushes.drain(..) {
            let _ = reply.send(Ok(durable));
        }
        if self.state.segment_bytes >= self.cfg.max_segment_bytes
            || self.state.segment_entries >= self.cfg.max_segment_entries
        {
            self.trim()?;
            let (file, path) = create_segment(&self.cfg.dir, &self.cfg.sovereign_id, durable + 1)?;
            self.state.segment = file;
            self.state.segment_path = path;
            self.state.segment_bytes = 0;
            self.state.segment_entries = 0;
            self.room = 0;
        }
        if !self.checkpoints_wanted.is_empty() {
            let signed = self.write_checkpoint()?;
            for reply in self.checkpoints_wanted.drain(..) {
                let _ = reply.send(Ok(signed.clone()));
            }
        } else if durable - self.last_checkpoint_seq >= self.cfg.checkpoint_every {
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Signs and durably appends a checkpoint of the (durable) head, if it moved.
    fn checkpoint(&mut self) -> Result<(), JournalError> {
        if self.state.head_seq == self.last_checkpoint_seq {
            return Ok(());
        }
        self.write_checkpoint().map(drop)
    }

    /// Signs and durably appends a checkpoint of the (durable) head; `None` for an empty chain.
    fn write_checkpoint(&mut self) -> Result<Option<SignedCheckpoint>, JournalError> {
        let seq = self.state.head_seq;
        if seq == 0 {
            return Ok(None);
        }
        let cp = Checkpoint {
            count: seq,
            head_hash: self.state.head_hash.clone(),
            public_key: self.state.public_key.clone(),
            seq,
            sovereign_id: self.cfg.sovereign_id.clone(),
            timestamp: format_utc(SystemTime::now()),
        };
        let signed = cp.sign(&self.state.key)?;
        let line = signed.to_line()?;
        let path = &self.state.checkpoints_path;
        self.state
            .checkpoints
            .write_all(&line)
            .and_then(|()| self.state.checkpoints.sync_data())
            .map_err(JournalError::io(path))?;
        self.last_checkpoint_seq = seq;
        Ok(Some(signed))
    }

    /// Final flush and checkpoint (on `close`, or when every handle is gone).
    fn shut_down(&mut self, close: Option<Reply<u64>>) -> Result<(), JournalError> {
        self.write_buffered()?;
        self.sync()?;
        self.trim()?;
        self.checkpoint()?;
        self.permits.close();
        if let Some(reply) = close {
            let _ = reply.send(Ok(self.state.head_seq));
        }
        Ok(())
    }
}

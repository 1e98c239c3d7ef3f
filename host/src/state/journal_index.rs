//! Replicas: this replica's journal chain copied into the shared store entry by entry, so
//! `POST /v1/activity/logs` on any replica answers for all of them and verification walks every
//! chain (docs/SCALE-OUT.md). It follows the chain's files behind the writer (never on the
//! request path): every half second, and once more after the journal closed at shutdown. A
//! replica killed before its last entries were copied copies them when it starts again (it
//! resumes after the highest seq the store has).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use super::AppState;
use crate::journal::Tail;
use crate::store::{JournalRow, Store, StoreResult};

/// Between two passes.
const EVERY: Duration = Duration::from_millis(500);
/// Most entries copied in one transaction.
const BATCH: usize = 2_000;

/// The follower: where this replica's chain was read up to. Its lock is held for a whole pass,
/// from reading the files to the store's commit.
pub struct Indexer {
    tail: Arc<Mutex<Option<Tail>>>,
}

impl Indexer {
    pub fn new() -> Indexer {
        Indexer {
            tail: Arc::new(Mutex::new(None)),
        }
    }

    /// What the retention task drops pruned entries from the shared copy with.
    pub(super) fn pruner(&self, store: Arc<dyn Store>) -> IndexPruner {
        IndexPruner {
            store,
            tail: self.tail.clone(),
        }
    }
}

/// Drops a retention pass's pruned entries from the shared copy, under the follower's lock: a
/// pass that read entries from a segment just before retention removed it commits them before
/// this deletes them, never after (they would stay in the copy for good).
pub(super) struct IndexPruner {
    store: Arc<dyn Store>,
    tail: Arc<Mutex<Option<Tail>>>,
}

impl IndexPruner {
    pub(super) async fn prune(&self, replica: String, through_seq: i64) -> StoreResult<u64> {
        let _no_pass_under_way = self.tail.lock().await;
        self.store.prune_journal_index(replica, through_seq).await
    }
}

impl AppState {
    /// Whether this replica copies its journal into the shared store.
    fn indexes_journal(&self) -> bool {
        self.replicated() && self.0.config.journal.is_some()
    }

    /// Copies the chain into the store for as long as the gateway runs (the caller aborts it).
    pub async fn index_journal(self) {
        if !self.indexes_journal() {
            return;
        }
        loop {
            if let Err(e) = self.index_journal_now().await {
                tracing::warn!(error = %e, "copying the journal into the shared store failed; retrying");
            }
            tokio::time::sleep(EVERY).await;
        }
    }

    /// At start: what the shared store holds of this replica's chain must be this chain. It
    /// is not when another replica runs under the same `sovereign_id`, or when this replica's
    /// journal was lost or replaced while the store kept the old one: the store then already
    /// holds the seqs this chain writes next, so the copy would stop there without a word (and
    /// activity logs miss every later entry). Start-up refuses instead. Checked: the store's
    /// head is not beyond this chain's, and the entry at the lower of the two heads is the same
    /// line in both (unless retention pruned it here).
    pub(super) async fn check_journal_index(&self) -> anyhow::Result<()> {
        let (Some(settings), Some(journal)) = (
            self.0
                .config
                .journal
                .as_ref()
                .filter(|_| self.indexes_journal()),
            &self.0.journal,
        ) else {
            return Ok(());
        };
        let id = settings.open.sovereign_id.clone();
        let indexed =
            u64::try_from(self.0.store.journal_indexed_to(id.clone()).await?).unwrap_or(0);
        let local = journal.durable_seq();
        let conflict = |what: &str| {
            anyhow::anyhow!(
                "the shared store's copy of journal chain {id:?} {what}: another replica runs with \
                 sovereign_id {id:?}, or this replica's journal ({}) was lost or replaced. Give \
                 each replica its own sovereign_id and keep its data_dir",
                settings.open.dir.display()
            )
        };
        if indexed > local {
            return Err(conflict(&format!(
                "reaches seq {indexed}, but this replica's journal ends at seq {local}"
            )));
        }
        let at = indexed.min(local);
        if at == 0 {
            return Ok(());
        }
        let stored = self
            .0
            .store
            .journal_chain(id.clone(), i64::try_from(at - 1).unwrap_or(i64::MAX), 1)
            .await?;
        let (dir, chain) = (settings.open.dir.clone(), id.clone());
        let here = tokio::task::spawn_blocking(move || Tail::new(dir, chain, at).read(1)).await??;
        match (stored.first(), here.first()) {
            (Some(s), Some(h)) if h.record.entry.seq == at && s.line != h.text => Err(conflict(
                &format!("holds a different entry at seq {at} than this replica's journal"),
            )),
            _ => Ok(()),
        }
    }

    /// One pass: every complete entry not yet in the store. Returns how many were copied.
    pub async fn index_journal_now(&self) -> anyhow::Result<usize> {
        let Some(settings) = self
            .0
            .config
            .journal
            .as_ref()
            .filter(|_| self.indexes_journal())
        else {
            return Ok(0);
        };
        let mut guard = self.0.journal_index.tail.lock().await;
        let replica = settings.open.sovereign_id.clone();
        if guard.is_none() {
            let head = self.0.store.journal_indexed_to(replica.clone()).await?;
            let next = u64::try_from(head).unwrap_or(0) + 1;
            *guard = Some(Tail::new(settings.open.dir.clone(), replica.clone(), next));
        }
        let mut copied = 0;
        while let Some(mut tail) = guard.take() {
            let (tail, lines) = tokio::task::spawn_blocking(move || {
                let lines = tail.read(BATCH);
                (tail, lines)
            })
            .await?;
            let before = tail.next_seq();
            let lines = match lines {
                Ok(lines) => lines,
                Err(e) => {
                    *guard = Some(tail);
                    return Err(e.into());
                }
            };
            let n = lines.len();
            let rows: Vec<JournalRow> = lines
                .into_iter()
                .map(|l| JournalRow {
                    replica: replica.clone(),
                    seq: i64::try_from(l.record.entry.seq).unwrap_or(i64::MAX),
                    timestamp: l.record.entry.timestamp.clone(),
                    team_id: l.record.entry.team_id.clone(),
                    line: l.text,
                })
                .collect();
            if let Err(e) = self.0.store.index_journal(rows).await {
                // Read again from the store's head next time: nothing is skipped.
                drop(tail);
                tracing::debug!(
                    next = before,
                    "journal copy failed; the next pass starts over"
                );
                return Err(e.into());
            }
            *guard = Some(tail);
            copied += n;
            if n < BATCH {
                break;
            }
        }
        // What the store holds of this chain now has a signed head any replica can prove
        // against (`tlog_replicas.rs`).
        let indexed = guard.as_ref().map_or(0, |t| t.next_seq() - 1);
        drop(guard);
        if let Err(e) = self.publish_tlog_head(indexed).await {
            tracing::warn!(error = %e, "publishing the transparency log's head failed; retrying");
        }
        Ok(copied)
    }
}

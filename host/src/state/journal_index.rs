//! Replicas: this replica's journal chain copied into the shared store entry by entry, so
//! `POST /v1/activity/logs` on any replica answers for all of them and verification walks every
//! chain (docs/SCALE-OUT.md). It follows the chain's files behind the writer (never on the
//! request path): every half second, and once more after the journal closed at shutdown. A
//! replica killed before its last entries were copied copies them when it starts again (it
//! resumes after the highest seq the store has).

use std::time::Duration;

use tokio::sync::Mutex;

use super::AppState;
use crate::journal::Tail;
use crate::store::JournalRow;

/// Between two passes.
const EVERY: Duration = Duration::from_millis(500);
/// Most entries copied in one transaction.
const BATCH: usize = 2_000;

/// The follower: where this replica's chain was read up to.
pub struct Indexer {
    tail: Mutex<Option<Tail>>,
}

impl Indexer {
    pub fn new() -> Indexer {
        Indexer {
            tail: Mutex::new(None),
        }
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
        loop {
            let Some(mut tail) = guard.take() else {
                return Ok(copied);
            };
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
                return Ok(copied);
            }
        }
    }
}

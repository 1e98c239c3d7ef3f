//! Replicas and the transparency log (docs/JOURNAL.md, "Replicas"): each replica's chain is its
//! own log, with its own origin and key. After each copy of its chain into the shared store a
//! replica publishes its newest signed tree head there; any replica proves another's entries
//! from a mirror of that replica's log, rebuilt from the lines in the store
//! (`journal::tlog::Mirror`) and checked against the head that replica published.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;

use super::AppState;
use crate::journal::tlog::{Found, Mirror, TlogError};
use crate::store::TlogHead;

/// Rows read from the store at once while a mirror catches up.
const CATCH_UP: u32 = 5_000;

/// The mirrors of other replicas' logs, each behind its own lock while it catches up, and the
/// size of the last head this replica published.
#[derive(Default)]
pub struct Mirrors {
    logs: Mutex<HashMap<String, Arc<Mutex<Arc<Mirror>>>>>,
    published: AtomicU64,
}

impl AppState {
    /// Publishes this replica's signed head over the first `indexed` entries (those the store
    /// now holds), when it moved and they are durable. Called after each copy pass.
    pub(super) async fn publish_tlog_head(&self, indexed: u64) -> anyhow::Result<()> {
        let Some(journal) = &self.0.journal else {
            return Ok(());
        };
        let Ok(tlog) = journal.tlog() else {
            return Ok(());
        };
        let size = indexed.min(journal.durable_seq());
        if size == 0 || size <= self.0.tlog_mirrors.published.load(Ordering::Acquire) {
            return Ok(());
        }
        tlog.reach(size).await?;
        let t = tlog.clone();
        let head = tokio::task::spawn_blocking(move || t.sign(size)).await??;
        let replica = self.0.config.sovereign_id.clone();
        let published = TlogHead {
            size: i64::try_from(size)?,
            vkey: tlog.verifier_key(),
            note: head.note,
        };
        self.0.store.publish_tlog_head(replica, published).await?;
        self.0
            .tlog_mirrors
            .published
            .fetch_max(size, Ordering::AcqRel);
        Ok(())
    }

    /// The newest head `replica` published.
    pub async fn published_tlog_head(&self, replica: &str) -> anyhow::Result<Option<TlogHead>> {
        Ok(self.0.store.tlog_head(replica.to_string()).await?)
    }

    /// The mirror of `replica`'s log, caught up with every line the store holds of it.
    pub async fn tlog_mirror(&self, replica: &str) -> anyhow::Result<Arc<Mirror>> {
        let slot = {
            let mut logs = self.0.tlog_mirrors.logs.lock().await;
            match logs.get(replica) {
                Some(slot) => slot.clone(),
                None => {
                    let dir = self
                        .0
                        .config
                        .journal
                        .as_ref()
                        .ok_or_else(|| anyhow::anyhow!("the journal is disabled"))?
                        .open
                        .dir
                        .clone();
                    let name = replica.to_string();
                    let mirror =
                        tokio::task::spawn_blocking(move || Mirror::open(&dir, &name)).await??;
                    let slot = Arc::new(Mutex::new(Arc::new(mirror)));
                    logs.insert(replica.to_string(), slot.clone());
                    slot
                }
            }
        };
        let mirror = slot.lock().await;
        loop {
            let after = mirror.next_seq()? - 1;
            let rows = self
                .0
                .store
                .journal_chain(replica.to_string(), i64::try_from(after)?, CATCH_UP)
                .await?;
            if rows.is_empty() {
                break;
            }
            let full = rows.len() == CATCH_UP as usize;
            let m = mirror.clone();
            tokio::task::spawn_blocking(move || {
                m.add(
                    rows.iter()
                        .map(|r| (u64::try_from(r.seq).unwrap_or(0), r.line.as_bytes())),
                )
            })
            .await?
            .map_err(|e| match e {
                TlogError::Gap { .. } => anyhow::anyhow!(
                    "replica {replica}'s first entries are no longer in the shared store, so its \
                     log cannot be rebuilt here; ask replica {replica} itself"
                ),
                other => other.into(),
            })?;
            if !full {
                break;
            }
        }
        Ok(mirror.clone())
    }

    /// Which other replica's log holds `request_id`, and where.
    pub async fn find_in_replicas(
        &self,
        request_id: &str,
    ) -> anyhow::Result<Option<(String, Arc<Mirror>, Found)>> {
        let own = &self.0.config.sovereign_id;
        for replica in self.0.store.journal_replicas().await? {
            if replica == *own {
                continue;
            }
            let mirror = self.tlog_mirror(&replica).await?;
            let (m, rid) = (mirror.clone(), request_id.to_string());
            if let Some(found) = tokio::task::spawn_blocking(move || m.find(&rid)).await?? {
                return Ok(Some((replica, mirror, found)));
            }
        }
        Ok(None)
    }
}

//! Start-up steps of [`super::AppState`]: the data-directory lock, the journal opened (recovered
//! and verified) with its retention task, and the guardrail loaded before serving.

use std::sync::Arc;
use std::time::SystemTime;

use crate::journal::{Journal, retention};

/// Creates the data directory and takes an exclusive lock on `LOCK` in it: two gateways on one
/// store would each keep budget counters the other cannot see.
pub(super) fn lock_data_dir(dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use anyhow::Context as _;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the data directory {}", dir.display()))?;
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another gateway is using the data directory {} (one gateway per data_dir)",
            dir.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}

/// Opens (recovers and verifies) the journal before serving: a torn final record is cut and
/// logged; a chain that fails verification stops the start unless `[journal] force`.
pub(super) async fn open_journal(cfg: &crate::journal::JournalConfig) -> anyhow::Result<Journal> {
    let (journal, report) = Journal::open_async(cfg.clone())
        .await
        .map_err(|e| anyhow::anyhow!("activity journal {}: {e}", cfg.dir.display()))?;
    if let Some(torn) = &report.torn_tail {
        tracing::warn!(file = %torn.file.display(), bytes = torn.bytes, "journal: a torn final record (a crash mid-write) was cut off");
    }
    if let Some(problem) = &report.forced_past {
        tracing::error!(%problem, "journal: the chain fails verification; appending anyway because [journal] force = true");
    }
    tracing::info!(dir = %cfg.dir.display(), head_seq = report.head_seq, durability = ?cfg.durability, "journal open");
    Ok(journal)
}

/// Runs a retention pass at start and then every `interval`, on the blocking pool.
/// Retention passes on the chain; with replicas (`index` given), the shared index drops what a
/// pass pruned.
pub(super) fn retention_task(
    settings: crate::config::JournalSettings,
    index: Option<super::journal_index::IndexPruner>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(settings.retention.interval);
        loop {
            tick.tick().await;
            let s = settings.clone();
            let pass = tokio::task::spawn_blocking(move || {
                retention::prune(&s.open, &s.retention, SystemTime::now())
            })
            .await;
            match pass {
                Ok(Ok(report)) => {
                    if let (Some(index), true) = (&index, report.anchor_seq > 0) {
                        let replica = settings.open.sovereign_id.clone();
                        let through = i64::try_from(report.anchor_seq).unwrap_or(i64::MAX);
                        if let Err(e) = index.prune(replica, through).await {
                            tracing::warn!(error = %e, "pruning the shared journal index failed");
                        }
                    }
                }
                Ok(Err(e)) => tracing::error!(error = %e, "journal retention pass failed"),
                Err(e) => tracing::error!(error = %e, "journal retention task failed"),
            }
        }
    })
}

/// Loads the guardrail on the process's policy host: compiled, world-checked and smoke-called
/// before serving.
pub(super) async fn load_guardrail(
    host: &crate::policy::PolicyHost,
    g: &crate::config::GuardrailConfig,
) -> anyhow::Result<crate::policy::guardrail::GuardrailSlot> {
    use crate::policy::CallLimits;
    use crate::policy::guardrail::{GuardrailSlot, InputScaling};
    let host = host.clone();
    let wasm: Arc<[u8]> = match &g.component {
        Some(bytes) => bytes.clone(),
        None => Arc::from(policy_artifacts::PII_GUARDRAIL_COMPONENT),
    };
    let limits = CallLimits {
        deadline: g.deadline,
        memory_bytes: g.memory_bytes,
        pool: g.pool,
        warm_max_calls: g.warm_max_calls,
    };
    let scaling = InputScaling {
        deadline_per_mib: g.deadline_per_mib,
        memory_per_mib: g.memory_per_mib,
        max_bytes: g.max_scanned_bytes,
    };
    Ok(GuardrailSlot::load(host, limits, scaling, wasm, g.settings.clone()).await?)
}

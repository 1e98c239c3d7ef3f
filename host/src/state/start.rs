//! Start-up steps of [`super::AppState`]: the data directory (0700, its database 0600) and its
//! lock, the journal opened (recovered and verified) with its retention task, and the guardrail
//! loaded before serving.

use std::sync::Arc;
use std::time::SystemTime;

use crate::journal::{Journal, retention};

/// Creates the data directory (0700: the store holds webhook signing secrets, the directory the
/// journal's signing key; one readable by others is tightened, and the log says so) and takes an
/// exclusive lock on `LOCK` in it: two gateways on one store would each keep budget counters the
/// other cannot see.
pub(super) fn lock_data_dir(dir: &std::path::Path) -> anyhow::Result<std::fs::File> {
    use anyhow::Context as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating the data directory {}", dir.display()))?;
    private(dir, 0o700);
    let path = dir.join("LOCK");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
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

/// The SQLite database file, created 0600 before SQLite opens it (SQLite gives its `-wal` and
/// `-shm` files the database's mode): it holds webhook signing secrets. An existing one and its
/// companions readable by others are tightened to 0600.
pub(super) fn private_database(path: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        private(std::path::Path::new(&name), 0o600);
    }
    Ok(())
}

/// Takes group and other permissions off `path` (to `mode`) when it has any, saying so; a path
/// the gateway may not change is left as it is.
fn private(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(was) = std::fs::metadata(path).map(|m| m.permissions().mode() & 0o777) else {
        return;
    };
    if was & 0o077 == 0 {
        return;
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        Ok(()) => tracing::warn!(
            path = %path.display(),
            "{} was mode {was:04o}, readable by other users; now {mode:04o}",
            path.display()
        ),
        // Not the gateway's to change (a volume's root owned by another user, say): its
        // owner's choice; the files in it are 0600 either way.
        Err(e) => tracing::info!(
            path = %path.display(), error = %e,
            "{} is mode {was:04o} and could not be made {mode:04o}",
            path.display()
        ),
    }
}

/// Config keys revoked at start because the file no longer declares them (`access::bootstrap`):
/// each journaled as a revocation by `config`, like one made through the admin API, so the
/// chain says when and why the key stopped.
pub(super) async fn journal_config_revocations(
    journal: &Journal,
    keys: &[crate::store::KeyInfo],
) -> anyhow::Result<()> {
    for key in keys {
        let draft = crate::journal::EntryDraft {
            timestamp: SystemTime::now(),
            request_id: format!("req-{}", uuid::Uuid::now_v7().simple()),
            actor_id: "config".into(),
            team_id: key.team_id.0.clone(),
            key_id: key.id.0.clone(),
            auth: None,
            cert_sha256: None,
            charges: Vec::new(),
            action: "admin.keys.revoke".into(),
            model: None,
            prompt_hash: None,
            routing_policy: None,
            residency_boundary: None,
            retrieval_filtered: None,
            status: crate::journal::Status::Success,
            prompt_tokens: None,
            completion_tokens: None,
            latency_us: 0,
            mcp: None,
        };
        journal
            .append(draft)
            .await
            .map_err(|e| anyhow::anyhow!("journaling the revocation of {}: {e}", key.id.0))?;
    }
    Ok(())
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

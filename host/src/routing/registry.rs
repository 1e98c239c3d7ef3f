//! Router policy versions and hot swap: every version the gateway has loaded (from the config, an
//! admin upload or a changed file), which one is active, and the file watcher. A new version is
//! compiled, checked against the world and smoke-called before it can become active; the active
//! one sits in an [`ArcSwap`], so each request takes one `Arc` at its start and finishes on that
//! version whatever is swapped in meanwhile.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::policy::{
    CallLimits, Candidate, PolicyError, PolicyHost, PoolMode, ROUTER_WORLD, RouterPolicy,
};

/// Inactive and failed versions kept for listing and rollback; older ones are forgotten.
pub const MAX_KEPT_VERSIONS: usize = 20;
/// Largest router component accepted (WASM-HOST.md §3.2).
pub const MAX_COMPONENT_BYTES: usize = 32 << 20;
/// Largest routing document accepted.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// How often the watcher looks at the configured files.
pub const FILE_POLL: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Inactive,
    /// Failed validation; listed with its error, never activated.
    Failed,
}

/// Where a version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Config,
    Upload,
    FileReload,
    /// Uploaded to another replica, loaded here from the store.
    Replica,
}

/// One version as the admin API lists it.
#[derive(Debug, Clone, Serialize)]
pub struct VersionInfo {
    pub id: String,
    /// `component+document` (a router reading a document) or `component`.
    pub kind: &'static str,
    pub world: &'static str,
    /// `fresh` (an instance per call) or `warm` (a pool of reused instances).
    pub pool: PoolMode,
    /// The policy's name as its smoke call gave it (`X-Route-Policy`).
    pub name: Option<String>,
    pub component_sha256: String,
    pub document_sha256: Option<String>,
    pub status: Status,
    pub active: bool,
    /// Unix seconds.
    pub created: u64,
    pub origin: Origin,
    /// Why validation failed (`failed` versions only).
    pub error: Option<String>,
}

/// A validated version: the policy and what it was built from.
pub struct Loaded {
    pub id: Arc<str>,
    pub policy: RouterPolicy,
    wasm: Arc<[u8]>,
    document: Option<Arc<str>>,
}

/// What a version runs: its component, its document and its pool mode.
#[derive(Debug, Clone)]
pub struct Source {
    pub wasm: Arc<[u8]>,
    pub document: Option<Arc<str>>,
    pub pool: PoolMode,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The new version failed compile, world check or smoke call; the active one stays.
    #[error("router version `{id}` was rejected and not activated: {cause}")]
    Invalid { id: String, cause: PolicyError },
    #[error("No router policy version `{0}`.")]
    UnknownVersion(String),
    #[error("Router policy version `{id}` failed validation and cannot be activated: {reason}")]
    NotActivatable { id: String, reason: String },
}

struct Version {
    info: VersionInfo,
    loaded: Option<Arc<Loaded>>,
}

struct Versions {
    list: VecDeque<Version>,
    next: u64,
}

/// The loaded router versions and the active one.
pub struct PolicyRegistry {
    host: PolicyHost,
    limits: CallLimits,
    candidates: Vec<Candidate>,
    active: ArcSwap<Loaded>,
    versions: Mutex<Versions>,
    /// One load at a time, so "document alone reuses the current component" sees a settled state.
    loading: tokio::sync::Mutex<()>,
}

impl PolicyRegistry {
    /// Loads the first version (from the config); it becomes active.
    pub async fn new(
        host: PolicyHost,
        limits: CallLimits,
        candidates: Vec<Candidate>,
        wasm: Arc<[u8]>,
        document: Option<Arc<str>>,
    ) -> Result<PolicyRegistry, PolicyError> {
        let id = "pol_1";
        let loaded = Arc::new(
            load(
                &host,
                id,
                wasm.clone(),
                document.clone(),
                limits,
                &candidates,
            )
            .await?,
        );
        let info = describe(id, &wasm, document.as_deref(), limits.pool, Origin::Config);
        let info = VersionInfo {
            name: loaded.policy.name().map(str::to_string),
            ..info
        };
        Ok(PolicyRegistry {
            host,
            limits,
            candidates,
            active: ArcSwap::new(loaded.clone()),
            versions: Mutex::new(Versions {
                list: VecDeque::from([Version {
                    info,
                    loaded: Some(loaded),
                }]),
                next: 2,
            }),
            loading: tokio::sync::Mutex::new(()),
        })
    }

    /// The active version; a request holds this `Arc` until it is done.
    /// The policy host this registry loads on (the process's one engine).
    pub fn host(&self) -> &PolicyHost {
        &self.host
    }

    pub fn active(&self) -> Arc<Loaded> {
        self.active.load_full()
    }

    /// Validates a new version and records it; with `activate`, swaps it in. A missing component
    /// or document is taken from the active version; a missing pool mode too, except with a new
    /// component, which runs fresh unless told otherwise. A version that fails validation is
    /// listed as `failed` and the active version stays.
    pub async fn add(
        &self,
        component: Option<Vec<u8>>,
        document: Option<String>,
        pool: Option<PoolMode>,
        activate: bool,
        origin: Origin,
    ) -> Result<VersionInfo, RegistryError> {
        self.add_as(None, component, document, pool, activate, origin)
            .await
    }

    /// [`PolicyRegistry::add`] under a given id (`None`: the next `pol_N`): replicas name
    /// versions the same everywhere.
    pub async fn add_as(
        &self,
        id: Option<String>,
        component: Option<Vec<u8>>,
        document: Option<String>,
        pool: Option<PoolMode>,
        activate: bool,
        origin: Origin,
    ) -> Result<VersionInfo, RegistryError> {
        let _one_at_a_time = self.loading.lock().await;
        let current = self.active.load_full();
        // Unsaid, a new component runs fresh (its state between calls is not the gateway's to
        // vouch for); a new document alone keeps the active version's mode.
        let default_pool = match &component {
            Some(_) => PoolMode::Fresh,
            None => current.policy.limits().pool,
        };
        let wasm: Arc<[u8]> = component.map_or_else(|| current.wasm.clone(), Arc::from);
        let document: Option<Arc<str>> = document.map(Arc::from).or(current.document.clone());
        let limits = CallLimits {
            pool: pool.unwrap_or(default_pool),
            ..self.limits
        };
        drop(current);
        let id = id.unwrap_or_else(|| {
            let mut v = self.lock();
            let n = v.next;
            v.next += 1;
            format!("pol_{n}")
        });
        let info = describe(&id, &wasm, document.as_deref(), limits.pool, origin);
        let result = load(&self.host, &id, wasm, document, limits, &self.candidates).await;
        let mut versions = self.lock();
        match result {
            Ok(loaded) => {
                let loaded = Arc::new(loaded);
                let info = VersionInfo {
                    name: loaded.policy.name().map(str::to_string),
                    status: if activate {
                        Status::Active
                    } else {
                        Status::Inactive
                    },
                    active: activate,
                    ..info
                };
                if activate {
                    self.active.store(loaded.clone());
                    tracing::info!(version = id, name = ?info.name, ?origin, "router policy activated");
                }
                versions.list.push_back(Version {
                    info: info.clone(),
                    loaded: Some(loaded),
                });
                self.prune(&mut versions);
                Ok(info)
            }
            Err(cause) => {
                tracing::warn!(version = id, ?origin, error = %cause, "router policy rejected; the active one stays");
                let info = VersionInfo {
                    status: Status::Failed,
                    error: Some(cause.to_string()),
                    ..info
                };
                versions.list.push_back(Version { info, loaded: None });
                self.prune(&mut versions);
                Err(RegistryError::Invalid { id, cause })
            }
        }
    }

    /// Makes a loaded version active (a rollback activates an older one).
    pub fn activate(&self, id: &str) -> Result<VersionInfo, RegistryError> {
        let versions = self.lock();
        let version = versions
            .list
            .iter()
            .find(|v| v.info.id == id)
            .ok_or_else(|| RegistryError::UnknownVersion(id.to_string()))?;
        let Some(loaded) = &version.loaded else {
            return Err(RegistryError::NotActivatable {
                id: id.to_string(),
                reason: version.info.error.clone().unwrap_or_default(),
            });
        };
        self.active.store(loaded.clone());
        tracing::info!(version = id, "router policy activated");
        Ok(VersionInfo {
            status: Status::Active,
            active: true,
            ..version.info.clone()
        })
    }

    /// Whether a version with this id is kept (loaded or failed).
    pub fn contains(&self, id: &str) -> bool {
        self.lock().list.iter().any(|v| v.info.id == id)
    }

    /// What a loaded version runs (for the store).
    pub fn source(&self, id: &str) -> Option<Source> {
        let versions = self.lock();
        let loaded = versions
            .list
            .iter()
            .find(|v| v.info.id == id)?
            .loaded
            .clone()?;
        Some(Source {
            wasm: loaded.wasm.clone(),
            document: loaded.document.clone(),
            pool: loaded.policy.limits().pool,
        })
    }

    /// Every kept version, oldest first, with its current status.
    pub fn list(&self) -> Vec<VersionInfo> {
        let active = self.active.load();
        let versions = self.lock();
        versions
            .list
            .iter()
            .map(|v| {
                let is_active = v.info.id == *active.id;
                let status = match (&v.loaded, is_active) {
                    (None, _) => Status::Failed,
                    (Some(_), true) => Status::Active,
                    (Some(_), false) => Status::Inactive,
                };
                VersionInfo {
                    status,
                    active: is_active,
                    ..v.info.clone()
                }
            })
            .collect()
    }

    /// Keeps the active version and the newest [`MAX_KEPT_VERSIONS`] others.
    fn prune(&self, versions: &mut Versions) {
        let active = self.active.load();
        while versions.list.len() > MAX_KEPT_VERSIONS + 1 {
            let Some(oldest) = versions.list.iter().position(|v| v.info.id != *active.id) else {
                break;
            };
            versions.list.remove(oldest);
        }
    }

    /// The version list stays consistent under a panic elsewhere, so a poisoned lock is usable.
    fn lock(&self) -> std::sync::MutexGuard<'_, Versions> {
        self.versions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn load(
    host: &PolicyHost,
    id: &str,
    wasm: Arc<[u8]>,
    document: Option<Arc<str>>,
    limits: CallLimits,
    candidates: &[Candidate],
) -> Result<Loaded, PolicyError> {
    let mut settings = HashMap::new();
    if let Some(doc) = &document {
        settings.insert("policy".to_string(), doc.to_string());
    }
    let policy = RouterPolicy::load(
        host,
        id,
        wasm.to_vec(),
        settings,
        limits,
        candidates.to_vec(),
    )
    .await?;
    Ok(Loaded {
        id: id.into(),
        policy,
        wasm,
        document,
    })
}

fn describe(
    id: &str,
    wasm: &[u8],
    document: Option<&str>,
    pool: PoolMode,
    origin: Origin,
) -> VersionInfo {
    VersionInfo {
        id: id.to_string(),
        kind: if document.is_some() {
            "component+document"
        } else {
            "component"
        },
        world: ROUTER_WORLD,
        pool,
        name: None,
        component_sha256: sha256_hex(wasm),
        document_sha256: document.map(|d| sha256_hex(d.as_bytes())),
        status: Status::Inactive,
        active: false,
        created: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        origin,
        error: None,
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The files named in `[routing]`, watched for changes.
#[derive(Debug, Clone, Default)]
pub struct WatchedFiles {
    pub document: Option<PathBuf>,
    pub component: Option<PathBuf>,
}

/// Polls the files every `every` (a stat and, for the document, a read and a hash: cheap and
/// immune to editors that replace files by rename). A file whose content differs from the last
/// one tried is loaded like an upload with `activate`; a bad file is logged and the active
/// version stays. The task ends when the registry is dropped.
pub fn watch(registry: &Arc<PolicyRegistry>, files: WatchedFiles, every: Duration) {
    if files.document.is_none() && files.component.is_none() {
        return;
    }
    let weak: Weak<PolicyRegistry> = Arc::downgrade(registry);
    let active = registry.active();
    let mut seen_document = active.document.as_deref().map(|d| sha256_hex(d.as_bytes()));
    let mut seen_component = files.component.as_ref().map(|_| sha256_hex(&active.wasm));
    let mut component_stamp = None;
    drop(active);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(registry) = weak.upgrade() else {
                break;
            };
            let mut new_document = None;
            if let Some(path) = &files.document {
                match tokio::fs::read_to_string(path).await {
                    Ok(text) => {
                        let sha = sha256_hex(text.as_bytes());
                        if seen_document.as_deref() != Some(sha.as_str()) {
                            seen_document = Some(sha);
                            new_document = Some(text);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "cannot read the routing document")
                    }
                }
            }
            let mut new_component = None;
            if let Some(path) = &files.component {
                let stamp = tokio::fs::metadata(path)
                    .await
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()));
                if stamp.is_some() && stamp != component_stamp {
                    match tokio::fs::read(path).await {
                        Ok(bytes) if bytes.len() <= MAX_COMPONENT_BYTES => {
                            component_stamp = stamp;
                            let sha = sha256_hex(&bytes);
                            if seen_component.as_deref() != Some(sha.as_str()) {
                                seen_component = Some(sha);
                                new_component = Some(bytes);
                            }
                        }
                        Ok(_) => {
                            component_stamp = stamp;
                            tracing::warn!(path = %path.display(), "router component file is over the size limit");
                        }
                        Err(e) => {
                            tracing::warn!(path = %path.display(), error = %e, "cannot read the router component")
                        }
                    }
                }
            }
            if new_document.is_some() || new_component.is_some() {
                tracing::info!("routing files changed; loading a new router version");
                // Failures are logged (and listed) by `add`.
                let _ = registry
                    .add(new_component, new_document, None, true, Origin::FileReload)
                    .await;
            }
        }
    });
}

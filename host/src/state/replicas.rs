//! Router versions and the guardrail across replicas (docs/SCALE-OUT.md): an upload, an
//! activation or a guardrail swap on one replica is stored (`Store::save_policy`,
//! `activate_policy`) and announced; every other replica, when it hears it (and at start), loads
//! the stored versions it lacks under the same ids and follows the stored active one. On the
//! embedded store this is all a no-op: one process holds its versions in memory.

use super::AppState;
use crate::config::PoolMode;
use crate::routing::registry::Origin;
use crate::shared::Change;
use crate::store::{PolicyKind, StoredPolicy};

impl AppState {
    /// Whether replicas share this gateway's store (its policy versions are stored).
    pub fn replicated(&self) -> bool {
        self.0.config.store.is_shared()
    }

    /// An id for a new router version: `pol_N` on one process, unique across replicas else.
    pub fn new_policy_id(&self) -> Option<String> {
        self.replicated()
            .then(|| format!("pol_{}", uuid::Uuid::now_v7().simple()))
    }

    /// After a router version was uploaded here: stored (active if it was activated) and
    /// announced, so every replica loads it.
    pub async fn share_router_version(&self, id: &str, activated: bool) -> anyhow::Result<()> {
        let (Some(registry), true) = (self.0.router.registry(), self.replicated()) else {
            return Ok(());
        };
        let Some(source) = registry.source(id) else {
            return Ok(());
        };
        let policy = StoredPolicy {
            id: id.to_owned(),
            kind: PolicyKind::Router,
            component: source.wasm.to_vec(),
            document: source.document.map(|d| d.to_string()),
            pool: Some(source.pool.as_str().to_owned()),
            settings: None,
            created_at: self.0.access.now_ms(),
        };
        self.0.store.save_policy(policy, activated).await?;
        self.announce(Change::Policies).await;
        Ok(())
    }

    /// After a router version was activated here: the store's active one, announced. A version
    /// only this replica has (its config file's) is activated here alone.
    pub async fn share_router_activation(&self, id: &str) -> anyhow::Result<()> {
        if self.replicated()
            && self
                .0
                .store
                .activate_policy(PolicyKind::Router, id.to_owned())
                .await?
        {
            self.announce(Change::Policies).await;
        }
        Ok(())
    }

    /// After the guardrail was swapped here: stored as the active guardrail and announced.
    pub async fn share_guardrail(
        &self,
        loaded: &crate::policy::guardrail::Loaded,
    ) -> anyhow::Result<()> {
        if !self.replicated() {
            return Ok(());
        }
        let policy = StoredPolicy {
            id: format!("grd_{}", uuid::Uuid::now_v7().simple()),
            kind: PolicyKind::Guardrail,
            component: loaded.wasm.to_vec(),
            document: None,
            pool: None,
            settings: loaded.settings.clone(),
            created_at: self.0.access.now_ms(),
        };
        self.0.store.save_policy(policy, true).await?;
        self.announce(Change::Guardrail).await;
        Ok(())
    }

    /// Loads the stored router versions this replica lacks and follows the stored active one;
    /// the same for the guardrail. At start and whenever another replica announces a change.
    pub async fn follow_policies(&self) -> anyhow::Result<()> {
        if !self.replicated() {
            return Ok(());
        }
        if let Some(registry) = self.0.router.registry() {
            let (versions, active) = self.0.store.policies(PolicyKind::Router).await?;
            for v in versions {
                if registry.contains(&v.id) {
                    continue;
                }
                let pool = match v.pool.as_deref() {
                    Some("warm") => PoolMode::Warm,
                    _ => PoolMode::Fresh,
                };
                let id = v.id.clone();
                if let Err(e) = registry
                    .add_as(
                        Some(v.id),
                        Some(v.component),
                        v.document,
                        Some(pool),
                        false,
                        Origin::Replica,
                    )
                    .await
                {
                    tracing::warn!(version = id, error = %e, "another replica's router version did not load here");
                }
            }
            if let Some(id) = active
                && *registry.active().id != *id
                && let Err(e) = registry.activate(&id)
            {
                tracing::warn!(version = id, error = %e, "the replicas' active router version cannot be activated here");
            }
        }
        if let Some(slot) = &self.0.guardrail {
            let (versions, active) = self.0.store.policies(PolicyKind::Guardrail).await?;
            let current = slot.active();
            if let Some(v) = versions
                .into_iter()
                .find(|v| Some(&v.id) == active.as_ref())
                && (*current.wasm != *v.component || current.settings != v.settings)
            {
                slot.swap(Some(v.component), v.settings).await?;
                tracing::info!(
                    version = v.id,
                    "guardrail follows the replicas' active version"
                );
            }
        }
        Ok(())
    }

    async fn announce(&self, change: Change) {
        self.0.shared.announce(change, &self.0.metrics).await;
    }
}

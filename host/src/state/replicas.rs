//! Following the other replicas' router versions and guardrail (docs/SCALE-OUT.md): an upload,
//! an activation or a guardrail swap on one replica is stored and announced
//! (`crate::services::Policies`); every other replica, when it hears it (and at start), loads the
//! stored versions it lacks under the same ids and follows the stored active one. On the
//! embedded store this is all a no-op: one process holds its versions in memory.

use super::AppState;
use crate::config::PoolMode;
use crate::routing::registry::Origin;
use crate::store::PolicyKind;

impl AppState {
    /// Whether replicas share this gateway's store (its policy versions are stored).
    pub fn replicated(&self) -> bool {
        self.0.config.store.is_shared()
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
}

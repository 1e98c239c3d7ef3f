//! [`Policies`]: router policy versions uploaded and activated, the guardrail swapped. Each write
//! validates and applies the change on this replica, counts the swap, then — when replicas share
//! the store (docs/SCALE-OUT.md) — stores it (`PolicyStore::save_policy`, `activate_policy`) and
//! announces it, so every other replica loads it (`AppState::follow_policies` is that side). On
//! the embedded store one process holds its versions in memory and nothing is stored.

use std::sync::Arc;

use super::ServiceError;
use crate::access::Access;
use crate::metrics::Metrics;
use crate::policy::PoolMode;
use crate::policy::guardrail::{GuardrailSlot, Loaded};
use crate::routing::Router;
use crate::routing::breaker::BreakerStatus;
use crate::routing::registry::{Origin, PolicyRegistry, VersionInfo};
use crate::shared::{Change, Shared};
use crate::store::{PolicyKind, Store, StoreError, StoredPolicy};

/// What the policies' service borrows from the gateway (`AppState::policies`).
#[derive(Clone, Copy)]
pub struct PolicyParts<'a> {
    pub store: &'a Arc<dyn Store>,
    /// The clock of a stored version's `created_at`.
    pub access: &'a Access,
    pub router: &'a Router,
    pub guardrail: Option<&'a GuardrailSlot>,
    pub shared: &'a Shared,
    pub metrics: &'a Metrics,
    /// Whether replicas share the store (then versions are stored and announced).
    pub replicated: bool,
}

/// The policies' service: the router's versions and the guardrail, each present only when
/// configured.
pub struct Policies<'a> {
    parts: PolicyParts<'a>,
}

/// The router's versions (`[routing]` is configured).
pub struct RouterVersions<'a> {
    parts: PolicyParts<'a>,
    registry: &'a PolicyRegistry,
}

/// The guardrail (`[guardrail]` is configured).
pub struct Guardrail<'a> {
    parts: PolicyParts<'a>,
    slot: &'a GuardrailSlot,
}

impl<'a> Policies<'a> {
    pub fn new(parts: PolicyParts<'a>) -> Policies<'a> {
        Policies { parts }
    }

    pub fn router(&self) -> Result<RouterVersions<'a>, ServiceError> {
        let registry = self
            .parts
            .router
            .registry()
            .ok_or(ServiceError::RoutingNotConfigured)?;
        Ok(RouterVersions {
            parts: self.parts,
            registry,
        })
    }

    pub fn guardrail(&self) -> Result<Guardrail<'a>, ServiceError> {
        let slot = self
            .parts
            .guardrail
            .ok_or(ServiceError::GuardrailNotConfigured)?;
        Ok(Guardrail {
            parts: self.parts,
            slot,
        })
    }
}

impl RouterVersions<'_> {
    /// A new version (missing parts taken from the active one), validated (compile, world
    /// check, smoke call) before it can become active; shared with the other replicas.
    pub async fn upload(
        &self,
        component: Option<Vec<u8>>,
        document: Option<String>,
        pool: Option<PoolMode>,
        activate: bool,
    ) -> Result<VersionInfo, ServiceError> {
        let info = self
            .registry
            .add_as(
                self.new_id(),
                component,
                document,
                pool,
                activate,
                Origin::Upload,
            )
            .await?;
        if info.active {
            self.parts.metrics.by.policy_swapped("router");
        }
        self.share_version(&info.id, info.active)
            .await
            .map_err(not_shared)?;
        Ok(info)
    }

    /// Every kept version, oldest first.
    pub fn list(&self) -> Vec<VersionInfo> {
        self.registry.list()
    }

    /// The router's circuit breaker (a failing policy falls back to the default route).
    pub fn breaker(&self) -> BreakerStatus {
        self.parts.router.breaker_status()
    }

    /// Makes a loaded version active (also a rollback), on every replica.
    pub async fn activate(&self, id: &str) -> Result<VersionInfo, ServiceError> {
        let info = self.registry.activate(id)?;
        self.parts.metrics.by.policy_swapped("router");
        self.share_activation(id).await.map_err(not_shared)?;
        Ok(info)
    }

    /// An id for a new version: `pol_N` on one process, unique across replicas else.
    fn new_id(&self) -> Option<String> {
        self.parts
            .replicated
            .then(|| format!("pol_{}", uuid::Uuid::now_v7().simple()))
    }

    /// After a version was uploaded here: stored (active if it was activated) and announced,
    /// so every replica loads it.
    async fn share_version(&self, id: &str, activated: bool) -> Result<(), StoreError> {
        if !self.parts.replicated {
            return Ok(());
        }
        let Some(source) = self.registry.source(id) else {
            return Ok(());
        };
        let policy = StoredPolicy {
            id: id.to_owned(),
            kind: PolicyKind::Router,
            component: source.wasm.to_vec(),
            document: source.document.map(|d| d.to_string()),
            pool: Some(source.pool.as_str().to_owned()),
            settings: None,
            created_at: self.parts.access.now_ms(),
        };
        self.parts.store.save_policy(policy, activated).await?;
        announce(&self.parts, Change::Policies).await;
        Ok(())
    }

    /// After a version was activated here: the store's active one, announced. A version only
    /// this replica has (its config file's) is activated here alone.
    async fn share_activation(&self, id: &str) -> Result<(), StoreError> {
        if self.parts.replicated
            && self
                .parts
                .store
                .activate_policy(PolicyKind::Router, id.to_owned())
                .await?
        {
            announce(&self.parts, Change::Policies).await;
        }
        Ok(())
    }
}

impl Guardrail<'_> {
    /// The active guardrail.
    pub fn active(&self) -> Arc<Loaded> {
        self.slot.active()
    }

    /// A new component and/or settings, validated (compiled, world checked, smoke-called)
    /// before it replaces the active guardrail; in-flight requests finish on the one they
    /// started with. A rejected upload changes nothing.
    pub async fn swap(
        &self,
        component: Option<Vec<u8>>,
        settings: Option<String>,
    ) -> Result<Arc<Loaded>, ServiceError> {
        let loaded = self
            .slot
            .swap(component, settings)
            .await
            .map_err(ServiceError::GuardrailRejected)?;
        self.parts.metrics.by.policy_swapped("guardrail");
        self.share(&loaded).await.map_err(not_shared)?;
        Ok(loaded)
    }

    /// After the guardrail was swapped here: stored as the active guardrail and announced.
    async fn share(&self, loaded: &Loaded) -> Result<(), StoreError> {
        if !self.parts.replicated {
            return Ok(());
        }
        let policy = StoredPolicy {
            id: format!("grd_{}", uuid::Uuid::now_v7().simple()),
            kind: PolicyKind::Guardrail,
            component: loaded.wasm.to_vec(),
            document: None,
            pool: None,
            settings: loaded.settings.clone(),
            created_at: self.parts.access.now_ms(),
        };
        self.parts.store.save_policy(policy, true).await?;
        announce(&self.parts, Change::Guardrail).await;
        Ok(())
    }
}

async fn announce(parts: &PolicyParts<'_>, change: Change) {
    parts.shared.announce(change, parts.metrics).await;
}

/// The change is active on this replica but could not be stored for the others.
fn not_shared(e: StoreError) -> ServiceError {
    tracing::error!(error = %e, "storing a policy change for the other replicas failed");
    ServiceError::NotShared(e)
}

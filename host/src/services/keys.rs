//! [`Keys`]: API keys created, read, rotated and revoked. A rotation or revocation returns only
//! once the store has committed, this replica's cached entry is gone (no lookup already in flight
//! lets the old state back in) and every other replica has been told.

use std::sync::Arc;
use std::time::Duration;

use super::ServiceError;
use crate::access::Access;
use crate::budget::Budgets;
use crate::store::{BudgetScope, CreatedKey, KeyId, KeyInfo, KeyLimits, NewKey, Store, TeamId};

/// The keys' service, borrowing the gateway's parts (`AppState::keys`).
pub struct Keys<'a> {
    store: &'a Arc<dyn Store>,
    access: &'a Access,
    budgets: &'a Arc<Budgets>,
    /// How long a rotated key keeps working when the caller names no grace
    /// (`access.rotation_grace_seconds`).
    rotation_grace: Duration,
}

/// A rotation: the successor (its secret shown once) and the old key as it is now.
pub struct Rotated {
    pub created: CreatedKey,
    pub old_id: KeyId,
    pub old: Option<KeyInfo>,
}

impl<'a> Keys<'a> {
    pub fn new(
        store: &'a Arc<dyn Store>,
        access: &'a Access,
        budgets: &'a Arc<Budgets>,
        rotation_grace: Duration,
    ) -> Keys<'a> {
        Keys {
            store,
            access,
            budgets,
            rotation_grace,
        }
    }

    /// A new key of an existing team; its secret is in the answer only.
    pub async fn create(&self, new: NewKey) -> Result<CreatedKey, ServiceError> {
        if self.store.team(new.team_id.clone()).await?.is_none() {
            return Err(ServiceError::UnknownTeam(new.team_id));
        }
        Ok(self.store.create_key(new).await?)
    }

    /// Every key, or one team's; never a secret.
    pub async fn list(&self, team: Option<TeamId>) -> Result<Vec<KeyInfo>, ServiceError> {
        Ok(self.store.keys(team).await?)
    }

    pub async fn get(&self, id: &str) -> Result<KeyInfo, ServiceError> {
        self.store
            .key(KeyId(id.to_owned()))
            .await?
            .ok_or_else(|| ServiceError::KeyNotFound(id.to_owned()))
    }

    /// A successor for `id`; the old key keeps working for `grace_seconds` (default: the
    /// configured grace), then stops. Spend recorded so far moves to the successor, so it is
    /// flushed to the store first.
    pub async fn rotate(
        &self,
        id: String,
        grace_seconds: Option<u64>,
    ) -> Result<Rotated, ServiceError> {
        let grace_ms = match grace_seconds {
            Some(s) => i64::try_from(s.saturating_mul(1000)).unwrap_or(i64::MAX),
            None => i64::try_from(self.rotation_grace.as_millis()).unwrap_or(i64::MAX),
        };
        self.budgets.charger().flush().await;
        let old_id = KeyId(id);
        let created = self.store.rotate_key(old_id.clone(), grace_ms).await?;
        self.access.invalidate_key(&old_id.0).await;
        let old = self.store.key(old_id.clone()).await?;
        Ok(Rotated {
            created,
            old_id,
            old,
        })
    }

    /// Changes `id`'s limits: when this returns, the next request on any replica is held to
    /// them (the cached key is dropped everywhere; a new budget limit applies at once).
    pub async fn update_limits(
        &self,
        id: String,
        limits: KeyLimits,
    ) -> Result<KeyInfo, ServiceError> {
        let budget = limits.budget;
        let info = self.store.update_key_limits(KeyId(id), limits).await?;
        self.access.invalidate_key(&info.id.0).await;
        if let Some(limit) = budget {
            self.budgets
                .set_limit(&BudgetScope::Key(info.id.clone()), limit)
                .await;
        }
        Ok(info)
    }

    /// Revokes `id`: when this returns, the key authenticates on no replica.
    pub async fn revoke(&self, id: String) -> Result<KeyInfo, ServiceError> {
        let info = self.store.revoke_key(KeyId(id)).await?;
        // Committed in the store; now no cached entry (and no lookup already in flight) lets it in.
        self.access.invalidate_key(&info.id.0).await;
        Ok(info)
    }
}

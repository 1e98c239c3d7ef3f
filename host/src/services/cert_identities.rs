//! [`CertIdentities`]: client certificates mapped to a team and a role, created, read and deleted.
//! A creation authenticates from the moment it returns; a deletion stops authenticating then
//! (the store has committed, the in-memory table and cached principal are gone), on every
//! replica. Identities the config file declares are deleted there, not here.

use std::sync::Arc;

use super::ServiceError;
use crate::access::Access;
use crate::store::{CertIdentity, CertSource, NewCertIdentity, Store, StoreError};

/// The certificate identities' service, borrowing the gateway's parts
/// (`AppState::cert_identities`).
pub struct CertIdentities<'a> {
    store: &'a Arc<dyn Store>,
    access: &'a Access,
}

impl<'a> CertIdentities<'a> {
    pub fn new(store: &'a Arc<dyn Store>, access: &'a Access) -> CertIdentities<'a> {
        CertIdentities { store, access }
    }

    /// A new identity of an existing team; a certificate another identity maps is refused.
    pub async fn create(&self, new: NewCertIdentity) -> Result<CertIdentity, ServiceError> {
        if self.store.team(new.team_id.clone()).await?.is_none() {
            return Err(ServiceError::UnknownTeam(new.team_id));
        }
        let identity = self
            .store
            .create_cert_identity(new)
            .await
            .map_err(|e| match e {
                StoreError::Invalid { field: "match", .. } => {
                    ServiceError::CertificateAlreadyMapped(e)
                }
                e => e.into(),
            })?;
        self.access.add_cert_identity(identity.clone()).await;
        Ok(identity)
    }

    /// Every identity, or one team's.
    pub async fn list(&self, team: Option<&str>) -> Result<Vec<CertIdentity>, ServiceError> {
        Ok(self
            .store
            .cert_identities()
            .await?
            .into_iter()
            .filter(|c| team.is_none_or(|t| c.team_id.0 == t))
            .collect())
    }

    pub async fn get(&self, id: &str) -> Result<CertIdentity, ServiceError> {
        self.store
            .cert_identities()
            .await?
            .into_iter()
            .find(|c| c.id == id)
            .ok_or_else(|| ServiceError::CertIdentityNotFound(id.to_owned()))
    }

    /// Deletes an identity made through the API: when this returns, the certificate
    /// authenticates on no replica.
    pub async fn delete(&self, id: &str) -> Result<CertIdentity, ServiceError> {
        let identity = self.get(id).await?;
        if identity.source == CertSource::Config {
            return Err(ServiceError::CertIdentityDeclaredInConfig {
                id: identity.id,
                name: identity.name,
            });
        }
        self.store.delete_cert_identity(identity.id.clone()).await?;
        self.access.remove_cert_identity(&identity.id).await;
        Ok(identity)
    }
}

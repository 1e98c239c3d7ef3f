//! Certificate identities in memory: every mapping from the store, by matcher, so a request
//! with a verified client certificate finds its identity without a store call. Changes through
//! the admin API update the store first, then this table (and drop the cached principal), so a
//! deleted mapping stops authenticating when the call returns.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::store::CertIdentity;
use crate::tls::{CertMatch, PeerCert};

#[derive(Default)]
pub struct CertTable {
    by_match: RwLock<HashMap<CertMatch, Arc<CertIdentity>>>,
}

impl CertTable {
    /// Puts `all` in place of the table; returns the ids of identities no longer in it.
    pub fn replace(&self, all: Vec<CertIdentity>) -> Vec<String> {
        let ids: std::collections::HashSet<String> = all.iter().map(|c| c.id.clone()).collect();
        let map = all
            .into_iter()
            .map(|c| (c.matcher.clone(), Arc::new(c)))
            .collect();
        let old = std::mem::replace(&mut *self.write(), map);
        old.into_values()
            .filter(|c| !ids.contains(&c.id))
            .map(|c| c.id.clone())
            .collect()
    }

    pub fn insert(&self, identity: CertIdentity) {
        self.write()
            .insert(identity.matcher.clone(), Arc::new(identity));
    }

    pub fn remove(&self, id: &str) {
        self.write().retain(|_, c| c.id != id);
    }

    pub fn remove_team(&self, team_id: &str) {
        self.write().retain(|_, c| c.team_id.0 != team_id);
    }

    /// The identity a certificate maps to: its key pin first, then its SAN URIs, then its SAN
    /// DNS names.
    pub fn find(&self, peer: &PeerCert) -> Option<Arc<CertIdentity>> {
        let map = self
            .by_match
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.is_empty() {
            return None;
        }
        CertMatch::candidates(peer)
            .iter()
            .find_map(|m| map.get(m).cloned())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<CertMatch, Arc<CertIdentity>>> {
        self.by_match
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

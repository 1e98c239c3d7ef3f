//! The domain services over this state's parts (`crate::services`): how an endpoint writes keys,
//! teams, certificate identities and policies, never through the store or the caches directly.

use super::AppState;
use crate::services::{CertIdentities, Keys, Policies, PolicyParts, Teams};

impl AppState {
    pub fn keys(&self) -> Keys<'_> {
        let s = &self.0;
        Keys::new(
            &s.store,
            &s.access,
            &s.budgets,
            s.config.access.rotation_grace,
        )
    }

    pub fn teams(&self) -> Teams<'_> {
        let s = &self.0;
        Teams::new(&s.store, &s.access, &s.budgets, &s.config.teams)
    }

    pub fn cert_identities(&self) -> CertIdentities<'_> {
        CertIdentities::new(&self.0.store, &self.0.access)
    }

    pub fn policies(&self) -> Policies<'_> {
        let s = &self.0;
        Policies::new(PolicyParts {
            store: &s.store,
            access: &s.access,
            router: &s.router,
            guardrail: s.guardrail.as_ref(),
            shared: &s.shared,
            metrics: &s.metrics,
            replicated: self.replicated(),
        })
    }
}

//! The domain services over this state's parts (`crate::services`): how an endpoint writes keys,
//! teams, certificate identities, policies and webhook subscriptions, never through the store or
//! the caches directly.

use super::AppState;
use crate::services::{
    CertIdentities, Keys, McpServers, Policies, PolicyParts, Subscriptions, Teams,
};

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

    pub fn mcp_servers(&self) -> McpServers<'_> {
        McpServers::new(&self.0.store, &self.0.mcp, &self.0.shared, &self.0.metrics)
    }

    pub fn subscriptions(&self) -> Subscriptions<'_> {
        Subscriptions::new(&self.0.webhooks, &self.0.shared, &self.0.metrics)
    }
}

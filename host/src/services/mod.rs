//! The domain services: every write to keys, teams, certificate identities, policies and webhook
//! subscriptions goes through one of them. Each operation does the whole change in one place:
//! the store commits (a policy is validated and applied here first), what this replica holds in
//! memory follows (the key cache, the certificate table, budget limits and counters), and the
//! other replicas are told — so no caller can forget a step and leave a revoked key
//! authenticating somewhere. They know no HTTP: a refusal is a [`ServiceError`], which the admin
//! API maps to its answer. `AppState` hands them out (`app.keys()`, `app.teams()`,
//! `app.cert_identities()`, `app.policies()`, `app.subscriptions()`), each borrowing the parts it
//! needs.

mod cert_identities;
mod error;
mod keys;
mod mcp;
mod policies;
mod teams;
mod webhooks;

pub use cert_identities::CertIdentities;
pub use error::ServiceError;
pub use keys::{Keys, Rotated};
pub use mcp::McpServers;
pub use policies::{Guardrail, Policies, PolicyParts, RouterVersions};
pub use teams::Teams;
pub use webhooks::Subscriptions;

//! The domain services: every write to keys, teams, certificate identities, policies and webhook
//! subscriptions goes through one of them, and each operation commits to the store, then invalidates what this
//! replica holds in memory (the key cache, the certificate table, budget counters), then tells
//! the other replicas — in that order, in one place, so no caller can forget a step and leave a
//! revoked key authenticating. They know no HTTP: a refusal is a [`ServiceError`], which the
//! admin API maps to its answer. `AppState` hands them out (`app.keys()`, `app.teams()`,
//! `app.cert_identities()`, `app.policies()`, `app.subscriptions()`), borrowing the parts each one needs.

mod cert_identities;
mod error;
mod keys;
mod policies;
mod teams;
mod webhooks;

pub use cert_identities::CertIdentities;
pub use error::ServiceError;
pub use keys::{Keys, Rotated};
pub use policies::{Guardrail, Policies, PolicyParts, RouterVersions};
pub use teams::Teams;
pub use webhooks::Subscriptions;

//! [`ServiceError`]: why a domain service refused an operation, in the domain's terms (the admin
//! API gives each its status and `code`). Store and registry failures pass through unchanged.

use crate::policy::PolicyError;
use crate::routing::registry::RegistryError;
use crate::store::{StoreError, TeamId};
use crate::webhooks::WebhookError;

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A new key or certificate identity names a team that does not exist.
    #[error("No team with id `{0}`.")]
    UnknownTeam(TeamId),
    #[error("No key with id `{0}`.")]
    KeyNotFound(String),
    #[error("No team with id `{0}`.")]
    TeamNotFound(String),
    #[error("No certificate identity with id `{0}`.")]
    CertIdentityNotFound(String),
    /// The config file declares the team: deleted here, it would come back at the next start
    /// without the keys and certificate identities the deletion took.
    #[error(
        "Team `{0}` is declared in the config file ([[teams]] id = \"{0}\"); remove it there (with its keys and certificate identities) and restart."
    )]
    TeamDeclaredInConfig(String),
    #[error(
        "Certificate identity `{id}` is declared in the config file ([[cert_identities]] name = \"{name}\"); remove it there and restart."
    )]
    CertIdentityDeclaredInConfig { id: String, name: String },
    /// Another certificate identity already maps the certificate (the store's refusal).
    #[error("{0}")]
    CertificateAlreadyMapped(StoreError),
    #[error("Routing is not configured: add a `[routing]` section to the gateway's config.")]
    RoutingNotConfigured,
    #[error("No guardrail is configured: add a `[guardrail]` section to the gateway's config.")]
    GuardrailNotConfigured,
    /// The uploaded guardrail failed validation; the active one is unchanged.
    #[error("The guardrail was not activated: {0}")]
    GuardrailRejected(PolicyError),
    /// The change is active on this replica but could not be stored for the others.
    #[error(
        "The change is active on this replica, but the other replicas could not be told: {0}. Retry the call."
    )]
    NotShared(StoreError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Webhook(#[from] WebhookError),
    #[error("{0}")]
    Mcp(#[from] crate::mcp::McpError),
}

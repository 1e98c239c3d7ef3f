//! The admin API (`/v1/admin/…`): teams, keys, usage, policies, the guardrail, webhooks and their
//! shapers, journal verification. Every handler here is behind the admin role (usage: auditors
//! too), and speaks only to the domain modules' public faces: keys, teams, certificate identities
//! and policies are written through their services (`crate::services`), whose refusals become
//! answers here ([`ServiceError`] into [`ApiError`]).

pub mod cert_identities;
pub mod journal;
pub mod keys;
pub mod mcp;
pub mod policies;
pub mod shapers;
pub mod teams;
pub mod traffic;
pub mod usage;
pub mod webhooks;
pub mod worlds;

use base64::Engine as _;
use http::StatusCode;

use crate::routing::registry::{MAX_COMPONENT_BYTES, MAX_DOCUMENT_BYTES};
use crate::server::error::ApiError;
use crate::services::ServiceError;

/// Body limit of a policy upload: a component at its limit, base64-encoded, plus a document.
/// Independent of (and larger than) `server.max_body_bytes`.
pub const MAX_UPLOAD_BODY_BYTES: usize =
    MAX_COMPONENT_BYTES / 3 * 4 + 8 + MAX_DOCUMENT_BYTES + 4096;

/// An uploaded policy's `settings`: a JSON object, or its text, as the text the policy reads.
pub fn settings_text(v: Option<serde_json::Value>) -> Result<Option<String>, ApiError> {
    match v {
        None => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s)),
        Some(v @ serde_json::Value::Object(_)) => Ok(Some(v.to_string())),
        Some(_) => Err(ApiError::invalid(
            "settings",
            "`settings` must be a JSON object or its text.",
        )),
    }
}

/// An uploaded component (`component_base64`): base64, within the size limit. Every policy
/// upload decodes its component here.
pub fn decode_component(b64: &str) -> Result<Vec<u8>, ApiError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| {
            ApiError::invalid(
                "component_base64",
                format!("`component_base64` is not valid base64: {e}."),
            )
        })?;
    if bytes.len() > MAX_COMPONENT_BYTES {
        return Err(ApiError::invalid(
            "component_base64",
            format!("The component is larger than {MAX_COMPONENT_BYTES} bytes."),
        ));
    }
    Ok(bytes)
}

/// A body field of the wrong type or range: a 400 naming it and saying what it must be.
pub(crate) fn bad_type(field: &str, what: &str) -> ApiError {
    ApiError::invalid(field, format!("`{field}` must be {what}."))
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        let message = e.to_string();
        let conflict = |code: &'static str| {
            ApiError::new(
                StatusCode::CONFLICT,
                "invalid_request_error",
                message.clone(),
            )
            .with_code(code)
        };
        match e {
            ServiceError::UnknownTeam(_) => ApiError::invalid("team_id", message),
            ServiceError::KeyNotFound(_)
            | ServiceError::TeamNotFound(_)
            | ServiceError::CertIdentityNotFound(_) => ApiError::not_found(message),
            ServiceError::TeamDeclaredInConfig(_)
            | ServiceError::CertIdentityDeclaredInConfig { .. } => conflict("declared_in_config"),
            ServiceError::CertificateAlreadyMapped(_) => conflict("certificate_already_mapped"),
            ServiceError::RoutingNotConfigured => conflict("routing_not_configured"),
            ServiceError::GuardrailNotConfigured => conflict("guardrail_not_configured"),
            ServiceError::GuardrailRejected(_) => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
                    .with_code("invalid_policy")
            }
            ServiceError::NotShared(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "server_error", message)
                    .with_code("store_unavailable")
            }
            ServiceError::Registry(e) => e.into(),
            ServiceError::Store(e) => e.into(),
            ServiceError::Webhook(e) => e.into(),
            ServiceError::Mcp(e) => match e {
                crate::mcp::McpError::Invalid { field, .. } => ApiError::invalid(&field, message),
                crate::mcp::McpError::NotFound(_) => ApiError::not_found(message),
                crate::mcp::McpError::Exists(_) => conflict("mcp_server_exists"),
                crate::mcp::McpError::Declared(_) => conflict("declared_in_config"),
                crate::mcp::McpError::TooMany(_) => conflict("too_many_mcp_servers"),
            },
        }
    }
}

//! The admin API (`/v1/admin/…`): teams, keys, usage, policies, the guardrail, webhooks and their
//! shapers, journal verification. Every handler here is behind the admin role (usage: auditors
//! too), and speaks only to the domain modules' public faces.

pub mod cert_identities;
pub mod journal;
pub mod keys;
pub mod policies;
pub mod shapers;
pub mod teams;
pub mod usage;
pub mod webhooks;

use base64::Engine as _;

use crate::routing::registry::{MAX_COMPONENT_BYTES, MAX_DOCUMENT_BYTES};
use crate::server::error::ApiError;

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

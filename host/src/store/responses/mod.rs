//! The store's Responses API state (issue 22): a stored response, team-scoped — the messages its
//! turn added to the conversation (after the guardrail's redaction, in chat form) and the
//! response object as answered. `previous_response_id` chains are rebuilt from these rows, on any
//! replica that shares the store. [`sql`] reads and deletes them on both back ends; each back
//! end writes its batches itself (`put_in`, inside its charge's transaction).

pub(crate) mod sql;

use super::{TeamId, UnixMillis};

#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// `resp_` + UUIDv7 hex.
    pub id: String,
    pub team_id: TeamId,
    /// The caller's key or certificate identity id.
    pub key_id: String,
    pub previous_id: Option<String>,
    /// The chat messages this turn added (instructions excluded: they do not carry over).
    pub input: serde_json::Value,
    /// The response object as answered (its `output` items included).
    pub response: serde_json::Value,
    pub created_at: UnixMillis,
}

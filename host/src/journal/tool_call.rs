//! The MCP tool call an entry records (action `mcp.tools/call`; docs/MCP.md, "The journal"):
//! which server and tool, the hashes of the arguments and of the result — never their text —
//! and the gateway's decision, written as the entry's `mcp` object in RFC 8785 order.

use serde::{Deserialize, Serialize};

use super::canonical::{key_object, key_opt_str, key_str};

/// An entry's `mcp` member. Field names are the on-disk keys, in sorted order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRecord {
    /// `sha256:<hex>` of the RFC 8785 encoding of the arguments the client sent.
    pub arguments_hash: String,
    /// What the gateway decided: `allow`, `rewrite`, `redact`, `replace`, `deny`, `block`,
    /// `not_permitted`, `quota`.
    pub decision: String,
    /// `sha256:<hex>` of the RFC 8785 encoding of the result the client was given; `None` when
    /// none was (a refusal answered as a JSON-RPC error, an upstream failure).
    pub result_hash: Option<String>,
    /// The upstream server's name (the prefix of the listed tool name).
    pub server: String,
    /// The upstream's own tool name.
    pub tool: String,
}

/// `"mcp":{…},` in canonical form.
pub(super) fn encode(out: &mut Vec<u8>, record: &ToolCallRecord) {
    key_object(out, "mcp", |out| {
        key_str(out, "arguments_hash", &record.arguments_hash);
        key_str(out, "decision", &record.decision);
        key_opt_str(out, "result_hash", record.result_hash.as_deref());
        key_str(out, "server", &record.server);
        key_str(out, "tool", &record.tool);
    });
}

//! The tool policy's decision point: every `tools/call` is decided here once before it goes
//! upstream (`decide_call`) and once on its result (`decide_result`), by the active version of
//! the Wasm tool-policy world (`policy::tool::ToolPolicies`, hot-swapped by
//! `POST /v1/admin/tool-policy`; the built-in one allows every call and passes every result).
//! A policy that cannot decide (trap, timeout, an answer that fails its checks, input too large)
//! is a [`DecideError`]: the caller refuses the call (fail closed).

use serde_json::Value;

use crate::policy::tool::ToolPolicies;
pub use crate::policy::tool::{CallVerdict, ResultVerdict, ToolCall};

/// Why the decision point could not decide (the call is refused: fail closed).
#[derive(Debug, thiserror::Error)]
#[error("the tool policy failed: {0}")]
pub struct DecideError(pub String);

/// The active policy's verdict on `call`.
pub async fn decide_call(
    policies: &ToolPolicies,
    call: &ToolCall,
) -> Result<CallVerdict, DecideError> {
    policies
        .check_call(call)
        .await
        .map_err(|e| DecideError(e.to_string()))
}

/// The active policy's verdict on the `result` (a JSON `CallToolResult`) of `call`.
pub async fn decide_result(
    policies: &ToolPolicies,
    call: &ToolCall,
    result: &Value,
) -> Result<ResultVerdict, DecideError> {
    policies
        .check_result(call, &result.to_string())
        .await
        .map_err(|e| DecideError(e.to_string()))
}

//! The built-in tool policy: every MCP tool call is allowed with its arguments as they are, and
//! every result is passed as it is. What the gateway does with no tool policy installed; the
//! team and key allowlists, limits and the PII guardrail still apply around it (docs/MCP.md).

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::tool::{CallVerdict, ResultVerdict, ToolCall, ToolPolicy};

    struct AllowAll;

    impl ToolPolicy for AllowAll {
        fn check_call(_call: ToolCall) -> CallVerdict {
            CallVerdict::Allow
        }

        fn check_result(_call: ToolCall, _result: String) -> ResultVerdict {
            ResultVerdict::Pass
        }
    }

    sovereign_policy_sdk::export_tool_policy!(AllowAll);
}

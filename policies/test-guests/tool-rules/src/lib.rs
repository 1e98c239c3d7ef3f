//! A tool policy driven by its settings, for the tool policy world's tests (not shipped). Every
//! rule names the tools (their own names, not namespaced) it applies to:
//!
//! ```json
//! {"deny": {"delete_records": "deleting records is not allowed"},
//!  "rewrite": {"search": {"limit": 10}},
//!  "redact": ["4111 1111 1111 1111"],
//!  "bad_rewrite": ["t"], "bad_result": ["t"], "trap": ["t"]}
//! ```
//!
//! `deny`: refuse with the reason; `rewrite`: set these keys in the arguments; `redact`: replace
//! each string in the result's text blocks with `[REDACTED]`; `bad_rewrite`, `bad_result`: answer
//! what the host must refuse (arguments that are not an object, a result that is not a
//! `CallToolResult`); `trap`: abort. The logic is plain Rust, tested natively.

use serde_json::{Map, Value};

/// A decision on a call.
#[derive(Debug, PartialEq, Eq)]
pub enum OnCall {
    Allow,
    Deny(String),
    Rewrite(String),
    Trap,
}

/// A decision on a result.
#[derive(Debug, PartialEq, Eq)]
pub enum OnResult {
    Pass,
    Redact(String),
    Replace(String),
    Trap,
}

fn settings(text: Option<&str>) -> Map<String, Value> {
    text.and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default()
}

fn names(s: &Map<String, Value>, rule: &str, tool: &str) -> bool {
    s.get(rule)
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|t| t.as_str() == Some(tool)))
}

pub fn on_call(settings_text: Option<&str>, tool: &str, arguments: &str) -> OnCall {
    let s = settings(settings_text);
    if names(&s, "trap", tool) {
        return OnCall::Trap;
    }
    if let Some(reason) = s.get("deny").and_then(|d| d.get(tool)) {
        return OnCall::Deny(reason.as_str().unwrap_or("denied by policy").to_string());
    }
    if names(&s, "bad_rewrite", tool) {
        return OnCall::Rewrite("[1]".into());
    }
    if let Some(set) = s
        .get("rewrite")
        .and_then(|r| r.get(tool))
        .and_then(Value::as_object)
    {
        let mut args = serde_json::from_str::<Value>(arguments)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        for (k, v) in set {
            args.insert(k.clone(), v.clone());
        }
        return OnCall::Rewrite(Value::Object(args).to_string());
    }
    OnCall::Allow
}

pub fn on_result(settings_text: Option<&str>, tool: &str, result: &str) -> OnResult {
    let s = settings(settings_text);
    if names(&s, "trap", tool) {
        return OnResult::Trap;
    }
    if names(&s, "bad_result", tool) {
        return OnResult::Redact("{}".into());
    }
    let secrets: Vec<&str> = s
        .get("redact")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if secrets.is_empty() {
        return OnResult::Pass;
    }
    let Ok(mut value) = serde_json::from_str::<Value>(result) else {
        return OnResult::Replace(
            r#"{"content":[{"type":"text","text":"[unreadable result withheld]"}],"isError":true}"#
                .into(),
        );
    };
    let mut changed = false;
    if let Some(blocks) = value.get_mut("content").and_then(Value::as_array_mut) {
        for block in blocks {
            if let Some(Value::String(text)) = block.get_mut("text") {
                for secret in &secrets {
                    if text.contains(secret) {
                        *text = text.replace(secret, "[REDACTED]");
                        changed = true;
                    }
                }
            }
        }
    }
    if changed {
        OnResult::Redact(value.to_string())
    } else {
        OnResult::Pass
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::host::config_get;
    use sovereign_policy_sdk::tool::{CallVerdict, ResultVerdict, ToolCall, ToolPolicy};

    use crate::{OnCall, OnResult, on_call, on_result};

    struct Rules;

    impl ToolPolicy for Rules {
        fn check_call(call: ToolCall) -> CallVerdict {
            let settings = config_get("settings");
            match on_call(settings.as_deref(), &call.tool, &call.arguments) {
                OnCall::Allow => CallVerdict::Allow,
                OnCall::Deny(reason) => CallVerdict::Deny(reason),
                OnCall::Rewrite(args) => CallVerdict::Rewrite(args),
                OnCall::Trap => std::process::abort(),
            }
        }

        fn check_result(call: ToolCall, result: String) -> ResultVerdict {
            let settings = config_get("settings");
            match on_result(settings.as_deref(), &call.tool, &result) {
                OnResult::Pass => ResultVerdict::Pass,
                OnResult::Redact(r) => ResultVerdict::Redact(r),
                OnResult::Replace(r) => ResultVerdict::Replace(r),
                OnResult::Trap => std::process::abort(),
            }
        }
    }

    sovereign_policy_sdk::export_tool_policy!(Rules);
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = r#"{"deny":{"drop":"no"},"rewrite":{"search":{"limit":10}},"redact":["4111"]}"#;

    #[test]
    fn rules_apply_to_the_tools_they_name() {
        assert_eq!(on_call(Some(S), "drop", "{}"), OnCall::Deny("no".into()));
        assert_eq!(
            on_call(Some(S), "search", r#"{"q":"x","limit":999}"#),
            OnCall::Rewrite(r#"{"limit":10,"q":"x"}"#.into())
        );
        assert_eq!(on_call(Some(S), "echo", "{}"), OnCall::Allow);
        assert_eq!(on_call(None, "drop", "{}"), OnCall::Allow);
        let r = r#"{"content":[{"type":"text","text":"card 4111 end"}]}"#;
        assert_eq!(
            on_result(Some(S), "any", r),
            OnResult::Redact(
                r#"{"content":[{"text":"card [REDACTED] end","type":"text"}]}"#.into()
            )
        );
        assert_eq!(
            on_result(Some(S), "any", r#"{"content":[]}"#),
            OnResult::Pass
        );
    }
}

//! Tool policies: a component of the `tool-policy` world (the built-in one is
//! `policies/tool-allow`: allow every call, pass every result) deciding each MCP `tools/call`
//! before the upstream call (allow, deny with a reason, rewrite the arguments) and its result
//! after it (pass, redact, replace). Loaded like every policy (compile, world check,
//! pre-instantiation, smoke call, off the request path), called in a fresh store per decision
//! under a deadline and memory cap. Every answer is checked before use: a rewrite must be a JSON
//! object, a redacted or replaced result a JSON `CallToolResult`; anything else, a trap or a
//! timeout is a [`PolicyError`] and the caller fails the call closed.
//!
//! [`ToolPolicies`] holds the active version, hot-swapped by `POST /v1/admin/tool-policy` and kept
//! in `<data_dir>/policies` across restarts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::bindings::{
    CallState, ToolPolicyPre, WitCallVerdict, WitCaller, WitResultVerdict, WitToolCall,
};
use super::slot::{Installed, Kept, Slot};
use super::{CallLimits, PolicyError, PolicyHost};

/// The world every tool policy component must export.
pub const WORLD: &str = "sovereign:policy/tool-policy@0.1.0";
/// Largest `arguments` given to a policy or accepted in a rewrite.
pub const MAX_ARGUMENTS_BYTES: usize = 1 << 20;
/// Largest result given to a policy or accepted as a redaction or replacement.
pub const MAX_RESULT_BYTES: usize = 4 << 20;
/// Longest deny reason kept, in bytes (the rest is cut).
const MAX_REASON_BYTES: usize = 1024;

/// Limits of each decision: 10 ms of running time (a tool call is on an agent's request path)
/// and the 32 MiB of every policy.
pub fn limits() -> CallLimits {
    CallLimits {
        deadline: Duration::from_millis(10),
        ..CallLimits::default()
    }
}

/// One `tools/call`, in the host's types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub team: String,
    pub key_id: String,
    /// `admin`, `member` or `auditor`.
    pub role: String,
    /// The certificate identity's name, when the caller authenticated with a certificate.
    pub identity: Option<String>,
    /// The upstream server's registered name.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    /// One JSON object, as text.
    pub arguments: String,
}

/// A checked decision on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallVerdict {
    Allow,
    Deny {
        reason: String,
    },
    /// Call with these arguments instead: a JSON object (checked).
    Rewrite {
        arguments: String,
    },
}

/// A checked decision on a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultVerdict {
    Pass,
    /// The result to return instead: a JSON `CallToolResult` (checked).
    Redact {
        result: String,
    },
    /// The result to return instead: a JSON `CallToolResult` (checked).
    Replace {
        result: String,
    },
}

/// The call of every tool policy's smoke test.
pub fn smoke_call() -> ToolCall {
    ToolCall {
        team: "smoke".into(),
        key_id: "smoke".into(),
        role: "member".into(),
        identity: None,
        server: "smoke".into(),
        tool: "echo".into(),
        arguments: r#"{"text":"hello"}"#.into(),
    }
}

/// The result of every tool policy's smoke test.
pub const SMOKE_RESULT: &str = r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#;

/// A loaded tool policy. Cheap to share; calls run concurrently.
pub struct ToolPolicy {
    host: PolicyHost,
    id: Arc<str>,
    sha256: String,
    pre: ToolPolicyPre<CallState>,
    settings: Arc<HashMap<String, String>>,
    limits: CallLimits,
}

impl std::fmt::Debug for ToolPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolPolicy")
            .field("id", &self.id)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

impl ToolPolicy {
    /// Compiles (or reads from the cache), checks the exports against the `tool-policy` world,
    /// pre-instantiates off the runtime, then smoke-calls both decisions with [`smoke_call`] and
    /// [`SMOKE_RESULT`]: any checked verdict passes (a deny is a legitimate answer), an error
    /// fails the load. `settings` is what the policy reads with `config-get("settings")`.
    pub async fn load(
        host: &PolicyHost,
        wasm: Arc<[u8]>,
        settings: Option<String>,
        limits: CallLimits,
    ) -> Result<ToolPolicy, PolicyError> {
        let host = host.clone();
        let policy = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let (sha256, instance_pre) = super::call::compile_and_link(&host, &wasm, WORLD)?;
            let pre = ToolPolicyPre::new(instance_pre)
                .map_err(|e| super::call::wrong_world(WORLD, &e))?;
            tracing::info!(sha256, elapsed = ?started.elapsed(), "tool policy compiled");
            let mut map = HashMap::new();
            if let Some(s) = settings {
                map.insert("settings".to_string(), s);
            }
            Ok::<_, PolicyError>(ToolPolicy {
                limits: super::call::capped(&host, limits),
                host,
                id: "tool-policy".into(),
                sha256,
                pre,
                settings: Arc::new(map),
            })
        })
        .await
        .map_err(|e| PolicyError::Cancelled(e.to_string()))??;
        let call = smoke_call();
        let smoke = async {
            policy.check_call(&call).await?;
            policy.check_result(&call, SMOKE_RESULT).await
        };
        if let Err(e) = smoke.await {
            return Err(PolicyError::SmokeCall {
                policy: policy.id.to_string(),
                cause: Box::new(e),
            });
        }
        Ok(policy)
    }

    /// sha256 of the component, hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Decides a call before it reaches the upstream.
    pub async fn check_call(&self, call: &ToolCall) -> Result<CallVerdict, PolicyError> {
        self.fits("arguments", call.arguments.len(), MAX_ARGUMENTS_BYTES)?;
        let wit = WitToolCall::from(call);
        let mut store = self.store();
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| super::call::classify(&self.id, self.limits, &store, e, true))?;
        let answer = instance
            .sovereign_policy_tool()
            .call_check_call(&mut store, &wit)
            .await
            .map_err(|e| super::call::classify(&self.id, self.limits, &store, e, false))?;
        drop(store);
        checked_call(answer).map_err(|reason| self.bad_answer(reason))
    }

    /// Decides what of an upstream's result (`result`: its JSON `CallToolResult`) the caller
    /// sees.
    pub async fn check_result(
        &self,
        call: &ToolCall,
        result: &str,
    ) -> Result<ResultVerdict, PolicyError> {
        self.fits("arguments", call.arguments.len(), MAX_ARGUMENTS_BYTES)?;
        self.fits("result", result.len(), MAX_RESULT_BYTES)?;
        let wit = WitToolCall::from(call);
        let mut store = self.store();
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| super::call::classify(&self.id, self.limits, &store, e, true))?;
        let answer = instance
            .sovereign_policy_tool()
            .call_check_result(&mut store, &wit, result)
            .await
            .map_err(|e| super::call::classify(&self.id, self.limits, &store, e, false))?;
        drop(store);
        checked_result(answer).map_err(|reason| self.bad_answer(reason))
    }

    fn store(&self) -> wasmtime::Store<CallState> {
        let budget = self.host.ticks(self.limits.deadline);
        super::call::new_store(
            &self.host,
            self.id.clone(),
            self.settings.clone(),
            self.limits,
            budget,
        )
    }

    /// Input larger than the policy is given is refused before the call.
    fn fits(&self, what: &str, bytes: usize, max: usize) -> Result<(), PolicyError> {
        if bytes > max {
            tracing::debug!(what, bytes, max, "tool policy input too large");
            return Err(PolicyError::TooLarge {
                policy: self.id.to_string(),
                bytes,
                max,
            });
        }
        Ok(())
    }

    fn bad_answer(&self, reason: String) -> PolicyError {
        PolicyError::BadAnswer {
            policy: self.id.to_string(),
            reason,
        }
    }
}

impl From<&ToolCall> for WitToolCall {
    fn from(c: &ToolCall) -> Self {
        WitToolCall {
            caller: WitCaller {
                team_id: c.team.clone(),
                key_id: c.key_id.clone(),
                role: c.role.clone(),
                identity: c.identity.clone(),
            },
            server: c.server.clone(),
            tool: c.tool.clone(),
            arguments: c.arguments.clone(),
        }
    }
}

/// A call verdict checked: a rewrite must be a JSON object within the size limit.
fn checked_call(v: WitCallVerdict) -> Result<CallVerdict, String> {
    Ok(match v {
        WitCallVerdict::Allow => CallVerdict::Allow,
        WitCallVerdict::Deny(reason) => CallVerdict::Deny {
            reason: truncate(reason, MAX_REASON_BYTES),
        },
        WitCallVerdict::Rewrite(arguments) => {
            if arguments.len() > MAX_ARGUMENTS_BYTES {
                return Err(format!(
                    "rewritten arguments are {} bytes; the limit is {MAX_ARGUMENTS_BYTES}",
                    arguments.len()
                ));
            }
            match serde_json::from_str::<Value>(&arguments) {
                Ok(Value::Object(_)) => CallVerdict::Rewrite { arguments },
                Ok(_) => return Err("rewritten arguments must be a JSON object".into()),
                Err(e) => return Err(format!("rewritten arguments are not JSON: {e}")),
            }
        }
    })
}

/// A result verdict checked: a redaction or replacement must be a `CallToolResult`.
fn checked_result(v: WitResultVerdict) -> Result<ResultVerdict, String> {
    Ok(match v {
        WitResultVerdict::Pass => ResultVerdict::Pass,
        WitResultVerdict::Redact(result) => {
            call_tool_result(&result)?;
            ResultVerdict::Redact { result }
        }
        WitResultVerdict::Replace(result) => {
            call_tool_result(&result)?;
            ResultVerdict::Replace { result }
        }
    })
}

/// Whether `text` is an MCP `CallToolResult`: a JSON object whose `content` is an array of
/// objects each with a string `type`, `isError` a boolean when present and `structuredContent`
/// an object when present.
pub fn call_tool_result(text: &str) -> Result<(), String> {
    if text.len() > MAX_RESULT_BYTES {
        return Err(format!(
            "the result is {} bytes; the limit is {MAX_RESULT_BYTES}",
            text.len()
        ));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the result is not JSON: {e}"))?;
    let obj = value
        .as_object()
        .ok_or("the result must be a JSON object (a CallToolResult)")?;
    let content = obj
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the result must have a `content` array")?;
    for (i, block) in content.iter().enumerate() {
        if block.get("type").and_then(Value::as_str).is_none() {
            return Err(format!(
                "content block {i} must be an object with a string `type`"
            ));
        }
    }
    if obj.get("isError").is_some_and(|v| !v.is_boolean()) {
        return Err("`isError` must be a boolean".into());
    }
    if obj.get("structuredContent").is_some_and(|v| !v.is_object()) {
        return Err("`structuredContent` must be an object".into());
    }
    Ok(())
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// The active tool policy, hot-swappable: each decision runs on the version it loaded at its
/// start; a version that fails to load never becomes active.
pub struct ToolPolicies {
    host: PolicyHost,
    limits: CallLimits,
    slot: Slot<ToolPolicy>,
    /// Where an installed version is kept across restarts, when set.
    kept: Option<Kept>,
}

impl ToolPolicies {
    /// With the built-in policy (`policies/tool-allow`: allow, pass) active.
    pub async fn builtin(host: PolicyHost) -> Result<ToolPolicies, PolicyError> {
        let limits = limits();
        let wasm: Arc<[u8]> = Arc::from(policy_artifacts::TOOL_ALLOW_COMPONENT);
        let policy = ToolPolicy::load(&host, wasm.clone(), None, limits).await?;
        Ok(ToolPolicies {
            host,
            limits,
            slot: Slot::new(Installed {
                policy,
                wasm,
                settings: None,
                builtin: true,
            }),
            kept: None,
        })
    }

    /// Keeps installed versions in `dir` (`tool.wasm`, `tool.settings`) from now on, and
    /// makes the one kept there by an earlier run active again. One that no longer loads fails
    /// the start: the gateway never falls back to the built-in policy on its own.
    pub async fn kept_in(mut self, dir: std::path::PathBuf) -> Result<Self, PolicyError> {
        let kept = Kept { dir, name: "tool" };
        if let Some((wasm, settings)) = kept.read_async().await? {
            let wasm: Arc<[u8]> = Arc::from(wasm);
            let policy =
                ToolPolicy::load(&self.host, wasm.clone(), settings.clone(), self.limits).await?;
            tracing::info!(
                sha256 = policy.sha256(),
                "the installed tool policy restored"
            );
            self.slot.replace(Installed {
                policy,
                wasm,
                settings,
                builtin: false,
            });
        }
        self.kept = Some(kept);
        Ok(self)
    }

    pub fn active(&self) -> Arc<Installed<ToolPolicy>> {
        self.slot.active()
    }

    /// Loads a new version (the part not given taken from the active one), then makes it
    /// active; decisions in flight finish on the one they started with.
    pub async fn swap(
        &self,
        wasm: Option<Vec<u8>>,
        settings: Option<String>,
    ) -> Result<Arc<Installed<ToolPolicy>>, PolicyError> {
        let current = self.active();
        let builtin = wasm.is_none() && current.builtin;
        let wasm = wasm.map_or_else(|| current.wasm.clone(), Arc::from);
        let settings = settings.or_else(|| current.settings.clone());
        let policy =
            ToolPolicy::load(&self.host, wasm.clone(), settings.clone(), self.limits).await?;
        let installed = self.slot.replace(Installed {
            policy,
            wasm: wasm.clone(),
            settings: settings.clone(),
            builtin,
        });
        if let Some(kept) = &self.kept {
            kept.write_async(wasm, settings).await;
        }
        Ok(installed)
    }

    /// The active policy's decision on a call.
    pub async fn check_call(&self, call: &ToolCall) -> Result<CallVerdict, PolicyError> {
        self.active().policy.check_call(call).await
    }

    /// The active policy's decision on a result.
    pub async fn check_result(
        &self,
        call: &ToolCall,
        result: &str,
    ) -> Result<ResultVerdict, PolicyError> {
        self.active().policy.check_result(call, result).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_must_be_a_json_object() {
        assert_eq!(
            checked_call(WitCallVerdict::Rewrite(r#"{"a":1}"#.into())).unwrap(),
            CallVerdict::Rewrite {
                arguments: r#"{"a":1}"#.into()
            }
        );
        for bad in ["[1]", "1", "\"x\"", "{", "", "null"] {
            assert!(
                checked_call(WitCallVerdict::Rewrite(bad.into())).is_err(),
                "{bad}"
            );
        }
        let huge = format!(r#"{{"a":"{}"}}"#, "x".repeat(MAX_ARGUMENTS_BYTES));
        assert!(checked_call(WitCallVerdict::Rewrite(huge)).is_err());
    }

    #[test]
    fn deny_reasons_are_cut_on_a_character_boundary() {
        let long = "é".repeat(MAX_REASON_BYTES);
        let CallVerdict::Deny { reason } = checked_call(WitCallVerdict::Deny(long)).unwrap() else {
            panic!("not a deny")
        };
        assert!(reason.len() <= MAX_REASON_BYTES);
        assert!(reason.chars().all(|c| c == 'é'));
    }

    #[test]
    fn results_must_be_call_tool_results() {
        for ok in [
            r#"{"content":[]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#,
            r#"{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}"#,
        ] {
            assert!(call_tool_result(ok).is_ok(), "{ok}");
            assert!(checked_result(WitResultVerdict::Redact(ok.into())).is_ok());
            assert!(checked_result(WitResultVerdict::Replace(ok.into())).is_ok());
        }
        for bad in [
            "",
            "{",
            "[]",
            "{}",
            r#"{"content":{}}"#,
            r#"{"content":[1]}"#,
            r#"{"content":[{"text":"no type"}]}"#,
            r#"{"content":[],"isError":"yes"}"#,
            r#"{"content":[],"structuredContent":[1]}"#,
        ] {
            assert!(call_tool_result(bad).is_err(), "{bad}");
            assert!(checked_result(WitResultVerdict::Redact(bad.into())).is_err());
            assert!(checked_result(WitResultVerdict::Replace(bad.into())).is_err());
        }
        assert_eq!(
            checked_result(WitResultVerdict::Pass).unwrap(),
            ResultVerdict::Pass
        );
    }
}

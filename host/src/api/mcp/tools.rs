//! `tools/call` through the gateway's pipeline, top to bottom (authentication, the key's rate
//! and the journal's entry are the route's layers):
//!
//! 1. the listed name resolved by **the catalogue's rule** (`Mcp::resolve`): a tool the caller
//!    may not list is not callable, and both answer `Unknown tool`;
//! 2. the team's tool-call quota;
//! 3. the tool policy's decision on the call (`mcp::decide_call`: allow, deny, rewrite);
//! 4. the guardrail's input stage on every string of the arguments (block, or redact in place);
//! 5. the upstream call under its deadline;
//! 6. the guardrail's output stage on the result's texts (block, or redact);
//! 7. the tool policy's decision on the result (`mcp::decide_result`: pass, redact, replace);
//! 8. the journal's `mcp` record: server, tool, hashes of the arguments and of the result,
//!    the decision, and the status.
//!
//! A refusal by the policy or the guardrail is a result with `isError: true` that says why (the
//! model can read it and change course); an unknown tool, the quota and a failed upstream are
//! JSON-RPC errors. The upstream's own content never rides a refusal.

use serde_json::{Map, Value, json};

use super::jsonrpc::Failure;
use crate::journal::{Status, ToolCallRecord};
use crate::mcp::{
    CallVerdict, Caller, ResultVerdict, SEPARATOR, ToolCall, Unresolved, decide_call,
    decide_result, wire,
};
use crate::pipeline::audit::prompt_hash;
use crate::pipeline::call::Call;
use crate::pipeline::guard;

/// Longest listed tool name read.
const MAX_NAME: usize = 256;

/// What the entry will say, filled in as the steps run.
struct Record<'a> {
    call: &'a Call,
    server: String,
    tool: String,
    arguments_hash: String,
    decision: &'static str,
}

impl Record<'_> {
    fn write(&self, result: Option<&Value>, status: Status) {
        let record = ToolCallRecord {
            arguments_hash: self.arguments_hash.clone(),
            decision: self.decision.to_string(),
            result_hash: result.and_then(prompt_hash),
            server: self.server.clone(),
            tool: self.tool.clone(),
        };
        self.call.audit.tool_call(record, status);
        let m = self.call.app.metrics();
        crate::metrics::Metrics::inc(match status {
            Status::Success => &m.mcp_tool_calls_total,
            Status::Error => &m.mcp_tool_calls_failed_total,
            Status::Blocked | Status::Rejected => &m.mcp_tool_calls_refused_total,
        });
    }

    /// A refusal the caller reads as the tool's error.
    fn refuse(&mut self, decision: &'static str, why: &str) -> Value {
        self.decision = decision;
        let result = json!({
            "content": [{"type": "text", "text": format!("The gateway refused this tool call: {why}")}],
            "isError": true,
        });
        self.write(Some(&result), Status::Blocked);
        result
    }
}

/// `tools/call`: the result the client is given, or the JSON-RPC error.
pub async fn call(call: &Call, params: &Map<String, Value>) -> Result<Value, Failure> {
    let name = match params.get("name") {
        Some(Value::String(n)) if !n.is_empty() && n.len() <= MAX_NAME => n.as_str(),
        _ => {
            return Err(Failure::new(
                wire::INVALID_PARAMS,
                "`params.name` must be a tool name of 1 to 256 bytes",
            ));
        }
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(Failure::new(
                wire::INVALID_PARAMS,
                "`params.arguments` must be an object",
            ));
        }
    };
    let (server_part, tool_part) = name.split_once(SEPARATOR).unwrap_or(("", name));
    let mut rec = Record {
        call,
        server: server_part.to_string(),
        tool: tool_part.to_string(),
        arguments_hash: prompt_hash(&arguments).unwrap_or_default(),
        decision: "allow",
    };
    let mcp = call.app.mcp();
    let caller = Caller {
        team: &call.principal.team_id,
        key: &call.principal.key_id,
    };

    // 1. The catalogue's rule.
    let (server, tool) = match mcp.resolve(caller, name).await {
        Ok(found) => found,
        Err(Unresolved::NotPermitted) => {
            rec.decision = "not_permitted";
            rec.write(None, Status::Rejected);
            return Err(Failure::new(
                wire::INVALID_PARAMS,
                format!("Unknown tool: {name}"),
            ));
        }
        Err(Unresolved::Upstream(server, e)) => {
            rec.write(None, Status::Error);
            tracing::warn!(server = %server, error = %e, "MCP server could not list its tools");
            return Err(upstream_failed(&server, &e));
        }
    };

    // 2. The team's quota.
    if let Err(wait) = mcp.take_tool_call(&call.principal.team_id) {
        rec.decision = "quota";
        rec.write(None, Status::Rejected);
        return Err(Failure::new(
            wire::LIMITED,
            format!("The team's tool-call quota is spent; retry in {wait} s."),
        )
        .data(json!({"retry_after": wait})));
    }

    // 3. The tool policy on the call.
    let mut policy_call = ToolCall {
        team: call.principal.team_id.clone(),
        key_id: call.principal.key_id.clone(),
        role: call.principal.role.as_str().to_string(),
        identity: (call.principal.credential == crate::access::Credential::Certificate)
            .then(|| call.principal.key_name.clone()),
        server: server.name.clone(),
        tool: tool.clone(),
        arguments: arguments.to_string(),
    };
    let mut arguments = match decide_call(call.app.tool_policies(), &policy_call).await {
        Ok(CallVerdict::Allow) => arguments,
        Ok(CallVerdict::Rewrite { arguments: new }) => match serde_json::from_str(&new) {
            Ok(v @ Value::Object(_)) => {
                rec.decision = "rewrite";
                v
            }
            _ => return Ok(rec.refuse("deny", "the tool policy's rewrite was not a JSON object")),
        },
        Ok(CallVerdict::Deny { reason }) => return Ok(rec.refuse("deny", &reason)),
        Err(e) => {
            tracing::error!(error = %e, "tool policy failed; the call is refused");
            return Ok(rec.refuse("deny", "the tool policy could not decide"));
        }
    };

    // 4. The guardrail on the arguments.
    let mut places = Vec::new();
    strings(&arguments, String::new(), &mut places);
    let (paths, mut texts): (Vec<String>, Vec<String>) = places.into_iter().unzip();
    if !texts.is_empty() {
        let before = texts.clone();
        if let Err(e) = guard::tool_texts(call, false, &mut texts).await {
            return Ok(rec.refuse("block", &e.message));
        }
        if texts != before {
            write_back(&mut arguments, &paths, texts);
            rec.decision = "redact";
        }
    }
    policy_call.arguments = arguments.to_string();

    // 5. The upstream call.
    let started = std::time::Instant::now();
    let answered = server.call_tool(&tool, arguments).await;
    call.audit.upstream_time(started.elapsed());
    let mut result = match answered {
        Ok(r) if r.get("content").is_some_and(Value::is_array) => r,
        Ok(_) => {
            rec.write(None, Status::Error);
            let e = crate::mcp::UpstreamError::Malformed("a result without `content`".into());
            return Err(upstream_failed(&server.name, &e));
        }
        Err(e) => {
            rec.write(None, Status::Error);
            tracing::warn!(server = %server.name, tool = %tool, error = %e, "MCP tool call failed upstream");
            return Err(upstream_failed(&server.name, &e));
        }
    };

    // 6. The guardrail on the result.
    let mut places = Vec::new();
    if let Some(items) = result.get("content").and_then(Value::as_array) {
        for (i, item) in items.iter().enumerate() {
            if let Some(t) = item.get("text").and_then(Value::as_str) {
                places.push((format!("/content/{i}/text"), t.to_string()));
            }
        }
    }
    if let Some(s) = result.get("structuredContent") {
        strings(s, "/structuredContent".into(), &mut places);
    }
    let (paths, mut texts): (Vec<String>, Vec<String>) = places.into_iter().unzip();
    if !texts.is_empty() {
        let before = texts.clone();
        if let Err(e) = guard::tool_texts(call, true, &mut texts).await {
            return Ok(rec.refuse("block", &e.message));
        }
        if texts != before {
            write_back(&mut result, &paths, texts);
            rec.decision = "redact";
        }
    }

    // 7. The tool policy on the result.
    match decide_result(call.app.tool_policies(), &policy_call, &result).await {
        Ok(ResultVerdict::Pass) => {}
        Ok(ResultVerdict::Redact { result: r }) => match policy_result(&r) {
            Some(v) => {
                result = v;
                rec.decision = "redact";
            }
            None => return Ok(rec.refuse("deny", NOT_A_RESULT)),
        },
        Ok(ResultVerdict::Replace { result: r }) => match policy_result(&r) {
            Some(v) => {
                result = v;
                rec.decision = "replace";
            }
            None => return Ok(rec.refuse("deny", NOT_A_RESULT)),
        },
        Err(e) => {
            tracing::error!(error = %e, "tool policy failed on a result; it is withheld");
            return Ok(rec.refuse("deny", "the tool policy could not decide"));
        }
    }

    // 8. The journal's record.
    rec.write(Some(&result), Status::Success);
    Ok(result)
}

/// Why a policy's result is refused (the policy world checks it already; this is the last guard).
const NOT_A_RESULT: &str = "the tool policy's result was not a tool result";

/// A policy's redacted or replaced result, when it is a tool result.
fn policy_result(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|v| v.get("content").is_some_and(Value::is_array))
}

/// The JSON-RPC error of an upstream failure: which server, what kind — not its content.
fn upstream_failed(server: &str, e: &crate::mcp::UpstreamError) -> Failure {
    Failure::new(
        wire::UPSTREAM_FAILED,
        format!("The MCP server `{server}` failed: {e}."),
    )
    .data(json!({"server": server}))
}

/// Every string in `v` with its JSON pointer (under `at`), in document order.
fn strings(v: &Value, at: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) => out.push((at, s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                let key = k.replace('~', "~0").replace('/', "~1");
                strings(item, format!("{at}/{key}"), out);
            }
        }
        _ => {}
    }
}

fn write_back(v: &mut Value, paths: &[String], texts: Vec<String>) {
    for (p, t) in paths.iter().zip(texts) {
        if let Some(slot) = v.pointer_mut(p) {
            *slot = Value::String(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_is_found_and_written_back() {
        let mut v = json!({"q": "a", "list": ["b", {"x/y": "c"}], "n": 1});
        let mut found = Vec::new();
        strings(&v, String::new(), &mut found);
        let (paths, texts): (Vec<String>, Vec<String>) = found.into_iter().unzip();
        assert_eq!(texts, ["a", "b", "c"]);
        write_back(&mut v, &paths, vec!["A".into(), "B".into(), "C".into()]);
        assert_eq!(v, json!({"q": "A", "list": ["B", {"x/y": "C"}], "n": 1}));
    }
}

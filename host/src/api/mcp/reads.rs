//! `prompts/get` and `resources/read` through the gateway's pipeline, as `tools/call` goes
//! (`tools.rs`), top to bottom:
//!
//! 1. the name (`<server>__<prompt>`) or URI (`<server>+<uri>`) resolved by **the grant rule**
//!    (`Mcp::resolve_prompt`, `Mcp::resolve_resource`): one answer for "no such" and "not
//!    yours", `-32602`;
//! 2. the guardrail's input stage on a prompt's argument values (block, or redact in place);
//! 3. the upstream request under the call deadline (`-32050` when it fails);
//! 4. the guardrail's output stage on the returned texts (a prompt's messages, a resource's
//!    `contents[].text`): block (a JSON-RPC error naming the entity — a prompt or a resource has
//!    no `isError`), or redact;
//! 5. the journal's `mcp` record: server, the prompt's name or the resource's own URI (in
//!    `tool`), hashes of the arguments (a resource's: `{"uri": …}`) and of the result, decision.
//!
//! The tool policy is not asked: its world speaks of tool calls (docs/MCP.md).

use serde_json::{Map, Value, json};

use super::jsonrpc::Failure;
use crate::journal::{Status, ToolCallRecord};
use crate::mcp::{Caller, Unresolved, wire};
use crate::pipeline::audit::prompt_hash;
use crate::pipeline::call::Call;
use crate::pipeline::guard;

/// Longest prompt name or resource URI read (bytes).
const MAX_NAME: usize = 2_048;
/// Most prompt arguments.
const MAX_ARGUMENTS: usize = 64;

/// Which read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Prompt,
    Resource,
}

impl Read {
    fn key(self) -> &'static str {
        match self {
            Read::Prompt => "name",
            Read::Resource => "uri",
        }
    }

    fn method(self) -> &'static str {
        match self {
            Read::Prompt => "prompts/get",
            Read::Resource => "resources/read",
        }
    }
}

/// `prompts/get` or `resources/read`: the result the client is given, or the JSON-RPC error.
pub async fn read(call: &Call, what: Read, params: &Map<String, Value>) -> Result<Value, Failure> {
    let key = what.key();
    let listed = match params.get(key) {
        Some(Value::String(n)) if !n.is_empty() && n.len() <= MAX_NAME => n.as_str(),
        _ => {
            return Err(Failure::new(
                wire::INVALID_PARAMS,
                format!("`params.{key}` must be a string of 1 to {MAX_NAME} bytes"),
            ));
        }
    };
    let mut arguments = match (what, params.get("arguments")) {
        (Read::Resource, _) => json!({ "uri": listed }),
        (Read::Prompt, None | Some(Value::Null)) => json!({}),
        (Read::Prompt, Some(Value::Object(m)))
            if m.len() <= MAX_ARGUMENTS && m.values().all(Value::is_string) =>
        {
            Value::Object(m.clone())
        }
        (Read::Prompt, Some(_)) => {
            return Err(Failure::new(
                wire::INVALID_PARAMS,
                format!("`params.arguments` must be an object of at most {MAX_ARGUMENTS} strings"),
            ));
        }
    };
    let mut record = ToolCallRecord {
        arguments_hash: prompt_hash(&arguments).unwrap_or_default(),
        decision: "allow".into(),
        result_hash: None,
        server: String::new(),
        tool: listed.to_string(),
    };
    let mcp = call.app.mcp();
    let caller = Caller {
        team: &call.principal.team_id,
        key: &call.principal.key_id,
    };

    // 1. The grant rule.
    let resolved = match what {
        Read::Prompt => mcp.resolve_prompt(caller, listed),
        Read::Resource => mcp.resolve_resource(caller, listed),
    };
    let (server, own) = match resolved {
        Ok(found) => found,
        Err(Unresolved::NotPermitted | Unresolved::Upstream(..)) => {
            record.decision = "not_permitted".into();
            journal(call, record, Status::Rejected);
            let noun = if what == Read::Prompt {
                "prompt"
            } else {
                "resource"
            };
            return Err(Failure::new(
                wire::INVALID_PARAMS,
                format!("Unknown {noun}: {listed}"),
            ));
        }
    };
    record.server = server.name.clone();
    record.tool = own.clone();

    // 2. The guardrail on a prompt's arguments.
    if what == Read::Prompt
        && let Some(m) = arguments.as_object_mut()
    {
        let names: Vec<String> = m.keys().cloned().collect();
        let mut texts: Vec<String> = m
            .values()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect();
        if !texts.is_empty() {
            let before = texts.clone();
            if let Err(e) = guard::tool_texts(call, false, &mut texts).await {
                return Err(refuse(call, record, &e.message));
            }
            if texts != before {
                record.decision = "redact".into();
                for (n, t) in names.into_iter().zip(texts) {
                    m.insert(n, Value::String(t));
                }
            }
        }
    }

    // 3. The upstream request.
    let params = match what {
        Read::Prompt => json!({"name": own, "arguments": arguments}),
        Read::Resource => json!({ "uri": own }),
    };
    let started = std::time::Instant::now();
    let answered = server.request(what.method(), params, &own).await;
    call.audit.upstream_time(started.elapsed());
    let shape_ok = |r: &Value| match what {
        Read::Prompt => r.get("messages").is_some_and(Value::is_array),
        Read::Resource => r.get("contents").is_some_and(Value::is_array),
    };
    let mut result = match answered {
        Ok(r) if shape_ok(&r) => r,
        Ok(_) => {
            journal(call, record, Status::Error);
            return Err(failed(
                &server.name,
                &crate::mcp::UpstreamError::Malformed(format!("a {} result", what.method())),
            ));
        }
        Err(e) => {
            journal(call, record, Status::Error);
            tracing::warn!(server = %server.name, method = what.method(), error = %e, "MCP read failed upstream");
            return Err(failed(&server.name, &e));
        }
    };

    // 4. The guardrail on the texts.
    let mut paths = Vec::new();
    match what {
        Read::Prompt => {
            let n = result["messages"].as_array().map_or(0, Vec::len);
            for i in 0..n {
                paths.push(format!("/messages/{i}/content/text"));
                paths.push(format!("/messages/{i}/content/resource/text"));
            }
        }
        Read::Resource => {
            let n = result["contents"].as_array().map_or(0, Vec::len);
            for i in 0..n {
                paths.push(format!("/contents/{i}/text"));
            }
        }
    }
    paths.push("/description".into());
    let (paths, mut texts): (Vec<String>, Vec<String>) = paths
        .into_iter()
        .filter_map(|p| {
            let t = result.pointer(&p)?.as_str()?.to_string();
            Some((p, t))
        })
        .unzip();
    if !texts.is_empty() {
        let before = texts.clone();
        if let Err(e) = guard::tool_texts(call, true, &mut texts).await {
            return Err(refuse(call, record, &e.message));
        }
        if texts != before {
            record.decision = "redact".into();
            for (p, t) in paths.iter().zip(texts) {
                if let Some(slot) = result.pointer_mut(p) {
                    *slot = Value::String(t);
                }
            }
        }
    }

    // 5. The journal's record.
    record.result_hash = prompt_hash(&result);
    journal(call, record, Status::Success);
    Ok(result)
}

/// The read's journal record, counted in `/metrics` by how it ended.
fn journal(call: &Call, record: ToolCallRecord, status: Status) {
    call.audit.tool_call(record, status);
    let m = call.app.metrics();
    crate::metrics::Metrics::inc(match status {
        Status::Success => &m.mcp_reads_total,
        Status::Error => &m.mcp_reads_failed_total,
        Status::Blocked | Status::Rejected => &m.mcp_reads_refused_total,
    });
}

/// The guardrail refused: journaled as blocked, answered as a JSON-RPC error that says why
/// (never the upstream's content).
fn refuse(call: &Call, mut record: ToolCallRecord, why: &str) -> Failure {
    record.decision = "block".into();
    journal(call, record, Status::Blocked);
    Failure::new(
        wire::INVALID_REQUEST,
        format!("The gateway refused this request: {why}"),
    )
}

fn failed(server: &str, e: &crate::mcp::UpstreamError) -> Failure {
    Failure::new(
        wire::UPSTREAM_FAILED,
        format!("The MCP server `{server}` failed: {e}."),
    )
    .data(json!({"server": server}))
}

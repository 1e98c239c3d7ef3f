//! `sovereign policy test` for the tool and retrieval worlds: the component loaded as the gateway
//! would load it (compile, world check, smoke call, the production limits), then golden cases
//! (JSON Lines, docs/POLICIES.md "Testing a policy") run through it, each decision printed.
//! Without `--golden`, the smoke call's own input is the one case.

use std::sync::Arc;

use anyhow::Context as _;
use serde::Deserialize;
use serde_json::{Map, Value};

use sovereign::policy::retrieval::{self, Caller, Chunk, RetrievalPolicy};
use sovereign::policy::tool::{self, CallVerdict, ResultVerdict, ToolCall, ToolPolicy};
use sovereign::policy::{PolicyError, PolicyHost};

/// One tool case: the call, the result the upstream gave (optional) and what the policy must
/// answer (each optional: absent, any checked answer passes).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCase {
    name: String,
    call: CallInput,
    #[serde(default)]
    result: Option<Value>,
    /// `allow`, `deny` or `rewrite`.
    #[serde(default)]
    expect_call: Option<String>,
    /// With `rewrite`: the arguments the policy must give.
    #[serde(default)]
    expect_arguments: Option<Value>,
    /// `pass`, `redact` or `replace`.
    #[serde(default)]
    expect_result: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallInput {
    #[serde(default = "team")]
    team: String,
    #[serde(default = "key")]
    key_id: String,
    #[serde(default = "member")]
    role: String,
    #[serde(default)]
    identity: Option<String>,
    server: String,
    tool: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// One retrieval case: the caller, the query, the candidates (best first) and the document ids
/// the policy must keep, in order (absent: any checked answer passes).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RetrievalCase {
    name: String,
    #[serde(default)]
    caller: Option<CallerInput>,
    #[serde(default)]
    query: String,
    candidates: Vec<CandidateInput>,
    #[serde(default)]
    expect_keep: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallerInput {
    #[serde(default = "team")]
    team_id: String,
    #[serde(default = "key")]
    key_id: String,
    #[serde(default = "member")]
    role: String,
    #[serde(default)]
    identity: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidateInput {
    document_id: String,
    #[serde(default)]
    filename: String,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    text: String,
}

fn team() -> String {
    "team".into()
}

fn key() -> String {
    "key".into()
}

fn member() -> String {
    "member".into()
}

fn lines<T: serde::de::DeserializeOwned>(text: &str) -> anyhow::Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("line {}", i + 1)))
        .collect()
}

/// Loads `wasm` as a tool policy and runs the cases; `Ok(None)` when it is not of that world.
pub async fn test_tool(
    host: &PolicyHost,
    wasm: &[u8],
    settings: Option<String>,
    golden: Option<&str>,
) -> anyhow::Result<Option<bool>> {
    let policy = match ToolPolicy::load(host, Arc::from(wasm), settings, tool::limits()).await {
        Ok(p) => p,
        Err(PolicyError::WrongWorld { .. }) => return Ok(None),
        Err(e) => {
            println!("FAIL load: {e}");
            return Ok(Some(false));
        }
    };
    println!(
        "loaded a tool policy (sha256 {}, world {})",
        policy.sha256(),
        tool::WORLD
    );
    let cases: Vec<ToolCase> = match golden {
        Some(text) => lines(text)?,
        None => {
            let c = tool::smoke_call();
            vec![ToolCase {
                name: "smoke".into(),
                call: CallInput {
                    team: c.team,
                    key_id: c.key_id,
                    role: c.role,
                    identity: c.identity,
                    server: c.server,
                    tool: c.tool,
                    arguments: serde_json::from_str(&c.arguments)?,
                },
                result: Some(serde_json::from_str(tool::SMOKE_RESULT)?),
                expect_call: None,
                expect_arguments: None,
                expect_result: None,
            }]
        }
    };
    let mut passed = 0;
    for case in &cases {
        let ok = tool_case(&policy, case).await;
        passed += usize::from(ok);
    }
    println!("{passed} of {} cases passed", cases.len());
    Ok(Some(passed == cases.len()))
}

async fn tool_case(policy: &ToolPolicy, case: &ToolCase) -> bool {
    let i = &case.call;
    let call = ToolCall {
        team: i.team.clone(),
        key_id: i.key_id.clone(),
        role: i.role.clone(),
        identity: i.identity.clone(),
        server: i.server.clone(),
        tool: i.tool.clone(),
        arguments: Value::Object(i.arguments.clone()).to_string(),
    };
    let mut failures = Vec::new();
    let mut shown = Vec::new();
    match policy.check_call(&call).await {
        Ok(v) => {
            let (kind, args) = match &v {
                CallVerdict::Allow => ("allow", None),
                CallVerdict::Deny { .. } => ("deny", None),
                CallVerdict::Rewrite { arguments } => ("rewrite", Some(arguments.as_str())),
            };
            shown.push(format!("call: {v:?}"));
            if case.expect_call.as_deref().is_some_and(|e| e != kind) {
                failures.push(format!(
                    "expected call `{}`",
                    case.expect_call.as_deref().unwrap_or("")
                ));
            }
            if let (Some(want), Some(got)) = (&case.expect_arguments, args)
                && serde_json::from_str::<Value>(got).ok().as_ref() != Some(want)
            {
                failures.push(format!("expected arguments {want}"));
            }
        }
        Err(e) => failures.push(format!("check-call: {e}")),
    }
    if let Some(result) = &case.result {
        match policy.check_result(&call, &result.to_string()).await {
            Ok(v) => {
                let kind = match &v {
                    ResultVerdict::Pass => "pass",
                    ResultVerdict::Redact { .. } => "redact",
                    ResultVerdict::Replace { .. } => "replace",
                };
                shown.push(format!("result: {v:?}"));
                if case.expect_result.as_deref().is_some_and(|e| e != kind) {
                    failures.push(format!(
                        "expected result `{}`",
                        case.expect_result.as_deref().unwrap_or("")
                    ));
                }
            }
            Err(e) => failures.push(format!("check-result: {e}")),
        }
    }
    report(&case.name, &shown, &failures)
}

/// Loads `wasm` as a retrieval policy and runs the cases; `Ok(None)` when it is not of that
/// world.
pub async fn test_retrieval(
    host: &PolicyHost,
    wasm: &[u8],
    settings: Option<String>,
    golden: Option<&str>,
) -> anyhow::Result<Option<bool>> {
    let policy =
        match RetrievalPolicy::load(host, Arc::from(wasm), settings, retrieval::limits()).await {
            Ok(p) => p,
            Err(PolicyError::WrongWorld { .. }) => return Ok(None),
            Err(e) => {
                println!("FAIL load: {e}");
                return Ok(Some(false));
            }
        };
    println!(
        "loaded a retrieval policy (sha256 {}, world {})",
        policy.sha256(),
        retrieval::WORLD
    );
    let cases: Vec<RetrievalCase> = match golden {
        Some(text) => lines(text)?,
        None => vec![RetrievalCase {
            name: "smoke".into(),
            caller: None,
            query: "smoke call".into(),
            candidates: retrieval::smoke_candidates()
                .into_iter()
                .map(|c| CandidateInput {
                    document_id: c.document_id,
                    filename: c.filename,
                    metadata: Map::new(),
                    text: c.text,
                })
                .collect(),
            expect_keep: None,
        }],
    };
    let mut passed = 0;
    for case in &cases {
        passed += usize::from(retrieval_case(&policy, case).await);
    }
    println!("{passed} of {} cases passed", cases.len());
    Ok(Some(passed == cases.len()))
}

async fn retrieval_case(policy: &RetrievalPolicy, case: &RetrievalCase) -> bool {
    let caller = match &case.caller {
        Some(c) => Caller {
            team_id: c.team_id.clone(),
            key_id: c.key_id.clone(),
            role: c.role.clone(),
            identity: c.identity.clone(),
        },
        None => retrieval::smoke_caller(),
    };
    let n = case.candidates.len();
    let chunks: Vec<Chunk> = (0u64..)
        .zip(&case.candidates)
        .map(|(i, c)| Chunk {
            document_id: c.document_id.clone(),
            filename: c.filename.clone(),
            chunk_id: i,
            score: (n as f32 - i as f32) / n.max(1) as f32,
            confidence: 0.5,
            metadata: Value::Object(c.metadata.clone()).to_string(),
            text: c.text.clone(),
        })
        .collect();
    let mut failures = Vec::new();
    let mut shown = Vec::new();
    match policy.review(&caller, &case.query, &chunks).await {
        Ok(s) => {
            let kept: Vec<&str> = s
                .keep
                .iter()
                .filter_map(|&i| case.candidates.get(i).map(|c| c.document_id.as_str()))
                .collect();
            shown.push(format!(
                "keep {kept:?} (rule `{}`, {} removed)",
                s.rule,
                s.removed(n)
            ));
            if let Some(want) = &case.expect_keep
                && kept != want.iter().map(String::as_str).collect::<Vec<_>>()
            {
                failures.push(format!("expected {want:?}"));
            }
        }
        Err(e) => failures.push(format!("review: {e}")),
    }
    report(&case.name, &shown, &failures)
}

fn report(name: &str, shown: &[String], failures: &[String]) -> bool {
    let ok = failures.is_empty();
    println!(
        "{} {name}: {}{}",
        if ok { "PASS" } else { "FAIL" },
        shown.join("; "),
        if ok {
            String::new()
        } else {
            format!(" -- {}", failures.join("; "))
        }
    );
    ok
}

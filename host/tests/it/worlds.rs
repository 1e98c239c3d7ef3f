//! The tool and retrieval policy worlds (issue 46 item 4, issue 50 item 3; docs/POLICIES.md "Tool
//! policies", "Retrieval policies"): loaded as every policy is (compile, world check, smoke
//! call), their answers checked before use, hot-swapped without dropping a decision in flight.
//! The guests: the built-ins (`policies/tool-allow`, `policies/retrieval-keep`), the settings-
//! driven `policies/test-guests/tool-rules`, and `examples/rust-retrieval` (clearance, newest
//! first).

use std::sync::Arc;

use serde_json::json;
use sovereign::policy::PolicyError;
use sovereign::policy::retrieval::{
    self, Caller, Chunk, RetrievalPolicies, RetrievalPolicy, smoke_caller,
};
use sovereign::policy::tool::{
    self, CallVerdict, ResultVerdict, ToolCall, ToolPolicies, ToolPolicy,
};

use crate::policy::host;

fn wasm(path: &str) -> Arc<[u8]> {
    Arc::from(std::fs::read(path).unwrap())
}

async fn tool_rules(settings: serde_json::Value) -> ToolPolicy {
    ToolPolicy::load(
        host(),
        wasm(policy_artifacts::TOOL_RULES),
        Some(settings.to_string()),
        tool::limits(),
    )
    .await
    .unwrap()
}

fn call(tool: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        team: "team_a".into(),
        key_id: "key_1".into(),
        role: "member".into(),
        identity: None,
        server: "records".into(),
        tool: tool.into(),
        arguments: arguments.to_string(),
    }
}

const CARD_RESULT: &str = r#"{"content":[{"type":"text","text":"customer card 4111 1111 1111 1111, ok"}],"isError":false}"#;

#[tokio::test]
async fn the_builtin_tool_policy_allows_and_passes() {
    let p = ToolPolicies::builtin(host().clone()).await.unwrap();
    assert!(p.active().builtin);
    let c = call("delete_records", json!({"id": 7}));
    assert_eq!(p.check_call(&c).await.unwrap(), CallVerdict::Allow);
    assert_eq!(
        p.check_result(&c, CARD_RESULT).await.unwrap(),
        ResultVerdict::Pass
    );
}

#[tokio::test]
async fn a_tool_policy_denies_a_named_tool_and_allows_the_others() {
    let p =
        tool_rules(json!({"deny": {"delete_records": "deleting records is not allowed"}})).await;
    assert_eq!(
        p.check_call(&call("delete_records", json!({})))
            .await
            .unwrap(),
        CallVerdict::Deny {
            reason: "deleting records is not allowed".into()
        }
    );
    assert_eq!(
        p.check_call(&call("read_record", json!({}))).await.unwrap(),
        CallVerdict::Allow
    );
}

#[tokio::test]
async fn a_tool_policy_rewrites_arguments() {
    let p = tool_rules(json!({"rewrite": {"search": {"limit": 10}}})).await;
    let CallVerdict::Rewrite { arguments } = p
        .check_call(&call("search", json!({"q": "x", "limit": 5000})))
        .await
        .unwrap()
    else {
        panic!("not a rewrite")
    };
    let args: serde_json::Value = serde_json::from_str(&arguments).unwrap();
    assert_eq!(args, json!({"q": "x", "limit": 10}));
}

#[tokio::test]
async fn a_tool_policy_redacts_a_result() {
    let p = tool_rules(json!({"redact": ["4111 1111 1111 1111"]})).await;
    let c = call("lookup", json!({}));
    let ResultVerdict::Redact { result } = p.check_result(&c, CARD_RESULT).await.unwrap() else {
        panic!("not a redaction")
    };
    assert!(!result.contains("4111"), "{result}");
    assert!(result.contains("[REDACTED]"), "{result}");
    tool::call_tool_result(&result).unwrap();
    // Nothing to redact: passed.
    assert_eq!(
        p.check_result(&c, r#"{"content":[{"type":"text","text":"fine"}]}"#)
            .await
            .unwrap(),
        ResultVerdict::Pass
    );
}

#[tokio::test]
async fn answers_the_host_must_refuse_are_policy_errors() {
    let p = tool_rules(json!({"bad_rewrite": ["t"], "bad_result": ["t"], "trap": ["boom"]})).await;
    let c = call("t", json!({}));
    let e = p.check_call(&c).await.unwrap_err();
    assert!(
        matches!(&e, PolicyError::BadAnswer { reason, .. } if reason.contains("JSON object")),
        "{e}"
    );
    let e = p.check_result(&c, CARD_RESULT).await.unwrap_err();
    assert!(
        matches!(&e, PolicyError::BadAnswer { reason, .. } if reason.contains("content")),
        "{e}"
    );
    let boom = call("boom", json!({}));
    assert!(matches!(
        p.check_call(&boom).await.unwrap_err(),
        PolicyError::Trap { .. }
    ));
    // The policy still answers the next call (a trap kills one store, not the policy).
    assert_eq!(
        p.check_call(&call("other", json!({}))).await.unwrap(),
        CallVerdict::Allow
    );
    // Input beyond the limits is refused before the call.
    let mut huge = call("other", json!({}));
    huge.arguments = format!(r#"{{"a":"{}"}}"#, "x".repeat(tool::MAX_ARGUMENTS_BYTES));
    assert!(matches!(
        p.check_call(&huge).await.unwrap_err(),
        PolicyError::TooLarge { .. }
    ));
}

#[tokio::test]
async fn a_policy_that_traps_on_its_smoke_call_or_of_another_world_never_loads() {
    let e = ToolPolicy::load(
        host(),
        wasm(policy_artifacts::TOOL_RULES),
        Some(json!({"trap": ["echo"]}).to_string()),
        tool::limits(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PolicyError::SmokeCall { .. }), "{e}");
    let e = ToolPolicy::load(
        host(),
        wasm(policy_artifacts::RETRIEVAL_KEEP),
        None,
        tool::limits(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PolicyError::WrongWorld { .. }), "{e}");
    let e = RetrievalPolicy::load(
        host(),
        wasm(policy_artifacts::TOOL_ALLOW),
        None,
        retrieval::limits(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PolicyError::WrongWorld { .. }), "{e}");
}

#[tokio::test]
async fn a_tool_policy_swap_keeps_decisions_in_flight_on_their_version() {
    let p = Arc::new(ToolPolicies::builtin(host().clone()).await.unwrap());
    let held = p.active();
    let denied = call("delete_records", json!({}));
    // Decisions run concurrently with the swap; every one is a whole version's answer.
    let runner = {
        let p = p.clone();
        let denied = denied.clone();
        tokio::spawn(async move {
            let mut answers = Vec::new();
            for _ in 0..200 {
                answers.push(p.check_call(&denied).await.unwrap());
                tokio::task::yield_now().await;
            }
            answers
        })
    };
    let rules = std::fs::read(policy_artifacts::TOOL_RULES).unwrap();
    let swapped = p
        .swap(
            Some(rules),
            Some(json!({"deny": {"delete_records": "no"}}).to_string()),
        )
        .await
        .unwrap();
    assert!(!swapped.builtin);
    let answers = runner.await.unwrap();
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, CallVerdict::Allow | CallVerdict::Deny { .. }))
    );
    assert!(matches!(
        p.check_call(&denied).await.unwrap(),
        CallVerdict::Deny { .. }
    ));
    // The version held from before still answers as it did.
    assert_eq!(
        held.policy.check_call(&denied).await.unwrap(),
        CallVerdict::Allow
    );
    // A settings-only swap keeps the component; a bad one changes nothing.
    assert!(
        p.swap(None, Some(json!({"trap": ["echo"]}).to_string()))
            .await
            .is_err()
    );
    assert_eq!(p.active().policy.sha256(), swapped.policy.sha256());
    assert!(matches!(
        p.check_call(&denied).await.unwrap(),
        CallVerdict::Deny { .. }
    ));
}

fn chunk(i: u64, metadata: serde_json::Value) -> Chunk {
    Chunk {
        document_id: format!("doc_{i}"),
        filename: format!("d{i}.txt"),
        chunk_id: i,
        score: 1.0 / (1.0 + i as f32),
        confidence: 0.5,
        metadata: metadata.to_string(),
        text: format!("chunk {i}"),
    }
}

#[tokio::test]
async fn the_builtin_retrieval_policy_keeps_everything_in_order() {
    let p = RetrievalPolicies::builtin(host().clone()).await.unwrap();
    let candidates: Vec<Chunk> = (0..7).map(|i| chunk(i, json!({}))).collect();
    let s = p
        .active()
        .policy
        .review(&smoke_caller(), "q", &candidates)
        .await
        .unwrap();
    assert!(s.is_identity(7));
}

#[tokio::test]
async fn the_clearance_example_filters_above_clearance_and_puts_the_newest_first() {
    let p = RetrievalPolicy::load(
        host(),
        wasm(policy_artifacts::RUST_RETRIEVAL_EXAMPLE),
        Some(
            json!({"clearance": {"team:team_ops": "confidential"}, "default": "public",
                   "newest_first": "version"})
            .to_string(),
        ),
        retrieval::limits(),
    )
    .await
    .unwrap();
    let candidates = [
        chunk(0, json!({"classification": "secret", "version": "9"})),
        chunk(1, json!({"classification": "public", "version": "1"})),
        chunk(2, json!({"classification": "confidential", "version": "3"})),
        chunk(3, json!({"version": "2"})),
    ];
    let outsider = Caller {
        team_id: "team_x".into(),
        key_id: "key_x".into(),
        role: "member".into(),
        identity: None,
    };
    let s = p.review(&outsider, "q", &candidates).await.unwrap();
    assert_eq!(s.keep, [3, 1]);
    assert_eq!(s.removed(4), 2);
    let ops = Caller {
        team_id: "team_ops".into(),
        ..outsider
    };
    let s = p.review(&ops, "q", &candidates).await.unwrap();
    assert_eq!(s.keep, [2, 3, 1]);
    // Settings that do not parse: the policy rejects (5xx), which fails the load.
    let e = RetrievalPolicy::load(
        host(),
        wasm(policy_artifacts::RUST_RETRIEVAL_EXAMPLE),
        Some("{not json".into()),
        retrieval::limits(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, PolicyError::SmokeCall { .. }), "{e}");
}

//! Fallback and passive health in process (issue 7): the `model.fallback` event on the internal
//! channel, in the seed's shape, and the router seeing a model whose breaker is open as
//! unhealthy. (`tests/python/test_fallback.py` covers the rest through the binary.)

use serde_json::{Value, json};

use crate::Stack;

/// The demo's config with `fallbacks` for qwen2.5-coder-32b and a breaker opening after two
/// failures.
fn with_fallbacks(c: String) -> String {
    c.replace(
        "id = \"qwen2.5-coder-32b\"\n",
        "id = \"qwen2.5-coder-32b\"\nfallbacks = [\"magistral-small\"]\n",
    ) + "\n[health]\nfailure_threshold = 2\nopen_ms = 60000\n"
}

async fn next_event(stack: &mut Stack, kind: &str) -> Value {
    loop {
        let e = stack
            .events
            .try_recv()
            .unwrap_or_else(|e| panic!("no `{kind}` event: {e}"));
        if e.event == kind {
            let mut v = serde_json::to_value(&*e).unwrap();
            v.as_object_mut().unwrap().remove("timestamp");
            return v;
        }
    }
}

#[tokio::test]
async fn a_fallback_hop_emits_the_model_fallback_event() {
    let mut stack = Stack::start(with_fallbacks).await;
    stack
        .sim("qwen2.5-coder-32b", json!({"fail": "error500"}))
        .await;
    let r = stack
        .post("/v1/chat/completions")
        .json(&json!({"model": "qwen2.5-coder-32b", "user": "alice",
                      "messages": [{"role": "user", "content": "hello there"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-data-residency"], "eu-paris-1");
    let trace = r.headers()["x-audit-trace-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["model"], "magistral-small");
    assert_eq!(
        next_event(&mut stack, "model.fallback").await,
        json!({"event": "model.fallback", "request_id": trace,
               "details": {"primary": "qwen2.5-coder-32b", "fallback": "magistral-small",
                           "reason": "server_error", "status": 500},
               "metadata": {"team_id": "demo", "user_id": "alice"}})
    );
    assert!(stack.events.try_recv().is_err(), "one hop, one event");
}

#[tokio::test]
async fn the_router_sees_an_open_breaker_as_unhealthy() {
    let mut stack = Stack::start(with_fallbacks).await;
    stack
        .sim("jais-30b-chat", json!({"fail": "error500"}))
        .await;
    let arabic = json!({"model": "auto-router",
                        "messages": [{"role": "user", "content": "ما هي عاصمة فرنسا؟"}]});
    // The demo's rules send Arabic to jais; the rules router names the default (qwen) as its
    // fallback, which serves while jais fails.
    for _ in 0..2 {
        let r = stack
            .post("/v1/chat/completions")
            .json(&arabic)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["model"], "qwen2.5-coder-32b");
        assert_eq!(
            next_event(&mut stack, "routing.rule").await["details"]["rule"],
            "arabic"
        );
        let hop = next_event(&mut stack, "model.fallback").await;
        assert_eq!(
            hop["details"],
            json!({"primary": "jais-30b-chat", "fallback": "qwen2.5-coder-32b",
                   "reason": "server_error", "status": 500})
        );
    }
    // Two failures opened jais's breaker: the router passes its rule over.
    let r = stack
        .post("/v1/chat/completions")
        .json(&arabic)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["model"], "llama-3.2-3b-instruct");
    let routed = next_event(&mut stack, "routing.rule").await;
    assert_eq!(
        routed["details"],
        json!({"policy": "sovereign-default", "rule": "small-prompts", "model": "llama-3.2-3b-instruct"})
    );
    assert!(
        stack.events.try_recv().is_err(),
        "no hop: jais was never tried"
    );
}

//! The request path end to end: routing, headers, streaming, upstream failures, shutdown.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::Stack;

fn hello(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello there"}]})
}

#[tokio::test]
async fn chat_is_routed_readdressed_and_labelled() {
    let mut stack = Stack::start(|c| c).await;
    let arabic = json!({"model": "auto-router",
                        "messages": [{"role": "user", "content": "ما هي عاصمة فرنسا؟"}]});
    let r = stack
        .post("/v1/chat/completions")
        .json(&arabic)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["model"], "jais-30b-chat",
        "the demo's rules send Arabic to the Arabic-native model"
    );
    assert_eq!(h["x-audit-trace-id"].to_str().unwrap(), body["id"]);
    assert_eq!(h["x-sovereign-id"], "demo-riyadh-1");
    assert_eq!(h["x-data-residency"], "sa-riyadh-1");
    assert_eq!(h["x-route-policy"], "sovereign-default");
    let text = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        text.starts_with("مرحباً"),
        "an Arabic model answers in Arabic: {text}"
    );
    // The rule that decided went out on the internal events channel, in the seed's shape.
    let event = stack.events.try_recv().unwrap();
    assert_eq!(event.event, "routing.rule");
    assert_eq!(event.request_id.as_deref(), body["id"].as_str());
    assert_eq!(
        event.details,
        json!({"policy": "sovereign-default", "rule": "arabic", "model": "jais-30b-chat"})
    );
    assert_eq!(event.metadata.team_id.as_deref(), Some("demo"));
    // An explicit model is not a rule's decision: no event.
    let r = stack
        .post("/v1/chat/completions")
        .json(&hello("magistral-small"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(stack.events.try_recv().is_err());
}

#[tokio::test]
async fn streams_relay_each_chunk_as_it_arrives() {
    let stack = Stack::start(|c| c).await;
    stack
        .sim("magistral-small", json!({"token_interval_ms": 40}))
        .await;
    let mut body = hello("magistral-small");
    body["stream"] = json!(true);
    let start = Instant::now();
    let r = stack
        .post("/v1/chat/completions")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut stream = r.bytes_stream();
    let mut arrivals = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        arrivals.push(start.elapsed());
        text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
    let total = *arrivals.last().unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"));
    assert!(
        !text.contains("usage"),
        "usage hidden from a client that did not ask"
    );
    // ~18 tokens 40 ms apart: the first must be out long before the upstream finished.
    assert!(total >= Duration::from_millis(500), "{total:?}");
    assert!(
        arrivals[0] * 4 < total,
        "first {:?} of {total:?}",
        arrivals[0]
    );
}

#[tokio::test]
async fn upstream_failures_map_to_502_504_and_passed_on_4xx() {
    let stack = Stack::start(|c| {
        c.replace(
            "context_window = 8192\n",
            "context_window = 8192\nfirst_byte_timeout_ms = 300\n",
        )
    })
    .await;
    let cases = [
        (json!({"fail": "error500"}), 502, "upstream_unavailable"),
        (json!({"fail": "error429"}), 429, "upstream_rejected"),
        (json!({"fail": "hang"}), 504, "upstream_timeout"),
    ];
    for (behaviour, status, code) in cases {
        stack.sim("jais-30b-chat", behaviour.clone()).await;
        let started = Instant::now();
        let r = stack
            .post("/v1/chat/completions")
            .json(&hello("jais-30b-chat"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{behaviour}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{behaviour}: {body}");
        assert!(started.elapsed() < Duration::from_secs(3), "{behaviour}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_502_naming_the_model() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let stack = Stack::start(move |c| {
        // Point the French model at a port nobody listens on.
        let i = c.find("id = \"magistral-small\"").unwrap();
        let (head, tail) = c.split_at(i);
        let tail = tail.replacen(
            "base_url = \"http://127.0.0.1:",
            &format!("base_url = \"http://127.0.0.1:{port}/v1\"\n# was: \"http://127.0.0.1:"),
            1,
        );
        format!("{head}{tail}")
    })
    .await;
    let r = stack
        .post("/v1/chat/completions")
        .json(&hello("magistral-small"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    let body: Value = r.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("magistral-small") && msg.contains("connect"),
        "{msg}"
    );
}

#[tokio::test]
async fn shutdown_lets_an_inflight_stream_finish() {
    let mut stack = Stack::start(|c| c).await;
    stack
        .sim("qwen2.5-coder-32b", json!({"token_interval_ms": 30}))
        .await;
    let mut body = hello("qwen2.5-coder-32b");
    body["stream"] = json!(true);
    let r = stack
        .post("/v1/chat/completions")
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut stream = r.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    stack.shutdown_gateway();
    let mut rest = Vec::new();
    while let Some(chunk) = stream.next().await {
        rest.extend_from_slice(&chunk.unwrap());
    }
    assert!(rest.ends_with(b"data: [DONE]\n\n"), "the stream completed");
    let result = tokio::time::timeout(Duration::from_secs(10), &mut stack.gateway_task)
        .await
        .expect("gateway stopped after draining")
        .unwrap();
    assert!(result.is_ok());
    assert!(
        reqwest::get(format!("{}/healthz", stack.gateway))
            .await
            .is_err(),
        "no new connections after shutdown"
    );
}

/// The guardrail through the gateway: a card number is refused with 400 and the seed's
/// `guardrail.violation` event, exactly.
#[tokio::test]
async fn a_blocked_request_emits_the_seed_event() {
    let mut stack = Stack::start(|c| c).await;
    let r = stack
        .post("/v1/chat/completions")
        .json(&json!({"model": "jais-30b-chat", "user": "alice",
                      "messages": [{"role": "user", "content": "card 4111-1111-1111-1111, mail a@b.co"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let trace = r.headers()["x-audit-trace-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "guardrail_violation");
    assert_eq!(body["error"]["code"], "pii_detected");
    let e = stack.events.try_recv().unwrap();
    let mut v = serde_json::to_value(&*e).unwrap();
    assert!(v["timestamp"].as_str().unwrap().ends_with('Z'));
    v.as_object_mut().unwrap().remove("timestamp");
    assert_eq!(
        v,
        json!({"event": "guardrail.violation", "request_id": trace,
               "details": {"violation_type": "pii_detected", "entities": ["credit_card"],
                           "action_taken": "request_blocked"},
               "metadata": {"team_id": "demo", "user_id": "alice"}})
    );
}

//! The journal on the request path (issue 5), in process: a streamed answer's `[DONE]` reaches
//! the client only after its entry is durable, and a request whose entry cannot be written fails
//! (500 / an error event) instead of being served unrecorded.

use futures_util::StreamExt as _;
use serde_json::json;

use crate::Stack;

fn entries(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("journal-")
        })
        .collect();
    names.sort();
    names
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[tokio::test]
async fn done_reaches_the_client_only_after_the_entry_is_durable() {
    let stack = Stack::start(|c| c).await;
    stack
        .sim("magistral-small", json!({"token_interval_ms": 20}))
        .await;
    let journal = stack.journal.clone().unwrap();
    let r = stack
        .post("/v1/chat/completions")
        .json(&json!({"model": "magistral-small", "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let request_id = r.headers()["x-audit-trace-id"]
        .to_str()
        .unwrap()
        .to_string();
    let mut stream = r.bytes_stream();
    let mut frames = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        frames += 1;
        let found: Vec<_> = entries(&stack.journal_dir)
            .into_iter()
            .filter(|e| e["request_id"] == request_id.as_str())
            .collect();
        if chunk.ends_with(b"data: [DONE]\n\n") {
            // The moment the client sees [DONE], the entry is on disk and fsynced.
            assert_eq!(found.len(), 1, "exactly one entry");
            let e = &found[0];
            assert_eq!(e["status"], "success");
            assert!(e["completion_tokens"].as_u64().unwrap() > 0, "{e}");
            assert!(journal.durable_seq() >= e["seq"].as_u64().unwrap());
        } else {
            assert!(found.is_empty(), "no entry before the stream ended");
        }
    }
    assert!(frames > 3, "the answer was streamed ({frames} frames)");
}

#[tokio::test]
async fn a_request_whose_entry_cannot_be_written_fails() {
    let stack = Stack::start(|c| c).await;
    // The writer stops (as after a disk error): every later append fails.
    stack.journal.clone().unwrap().close().await.unwrap();
    let hi = json!({"model": "jais-30b-chat", "messages": [{"role": "user", "content": "hi"}]});
    let r = stack
        .post("/v1/chat/completions")
        .json(&hi)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert!(r.headers().contains_key("x-audit-trace-id"));
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(body["error"]["code"], "journal_unavailable");

    let mut streamed = hi.clone();
    streamed["stream"] = json!(true);
    let r = stack
        .post("/v1/chat/completions")
        .json(&streamed)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "headers went out before the end");
    let text = r.text().await.unwrap();
    assert!(!text.contains("[DONE]"), "never completed: {text}");
    assert!(text.contains("journal_unavailable"), "{text}");

    let metrics = crate::Stack::client()
        .get(format!("{}/metrics", stack.gateway))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("\nsovereign_journal_append_failures_total 2\n"),
        "{metrics}"
    );
}

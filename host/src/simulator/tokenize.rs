//! The tokenizer endpoints of vLLM and llama.cpp server, beside `/v1`, counting exactly the
//! prompt tokens the simulated chat bills for the same messages (`answer::prompt_tokens`), so a
//! gateway's exact `count_tokens` path can be checked end to end:
//!
//! - vLLM: `POST /tokenize` with `{"model", "messages", …}` → `{"count", "max_model_len",
//!   "tokens"}`;
//! - llama.cpp: `POST /apply-template` with `{"messages", …}` → `{"prompt"}` (a marker word per
//!   message, then its text), and `POST /tokenize` with `{"content"}` → `{"tokens"}`, one per
//!   word.
//!
//! Both are recorded (`/_sim/requests`); vLLM's, which names a model, meets the model's latency
//! and failure modes as the chat does.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use serde_json::{Value, json};

use super::{Sim, answer, parse_body};

/// What the simulated models' `max_model_len` is said to be.
const MAX_MODEL_LEN: u64 = 8192;

pub(super) async fn tokenize(State(sim): State<Sim>, headers: HeaderMap, bytes: Bytes) -> Response {
    let body = match parse_body(&bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    sim.record("/tokenize", &headers, &body);
    // llama.cpp: a prompt's text.
    if let Some(content) = body.get("content").and_then(Value::as_str) {
        let tokens = vec![0u32; content.split_whitespace().count()];
        return Json(json!({"tokens": tokens})).into_response();
    }
    // vLLM: a chat request.
    if let Err(e) = sim.admit(&body).await {
        return e.into_response();
    }
    let count = answer::prompt_tokens(&messages(&body));
    Json(json!({"count": count, "max_model_len": MAX_MODEL_LEN,
                "tokens": vec![0u32; usize::try_from(count).unwrap_or(0)], "token_strs": null}))
    .into_response()
}

pub(super) async fn apply_template(
    State(sim): State<Sim>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let body = match parse_body(&bytes) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    sim.record("/apply-template", &headers, &body);
    let prompt = messages(&body)
        .iter()
        .map(|m| {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
            format!("<|{role}|> {}", answer::content_text(m))
        })
        .collect::<Vec<_>>()
        .join("\n");
    Json(json!({"prompt": prompt})).into_response()
}

fn messages(body: &Value) -> Vec<Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

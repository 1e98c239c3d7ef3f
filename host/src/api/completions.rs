//! `POST /v1/completions` — legacy text completions (LlamaIndex's `OpenAILike` calls it by
//! default; vLLM, llama.cpp server, TGI and Ollama serve it), through the same phases as chat,
//! top to bottom in [`completions`]: the body checked; the guardrail's input stage on the
//! `prompt` (text redacted in place, token prompts decoded and checked); facts and routing from
//! the prompt's text; the budget; the upstream's `/completions` with fallback; the answer relayed
//! (streamed or whole) through the output stage, re-addressed, usage always answered, settled.

use axum::body::Body;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::chat::{answer, request_usage};
use super::validate::CompletionRequest;
use crate::config::ModelKind;
use crate::facts;
use crate::pipeline::call::Call;
use crate::pipeline::fallback::{self, encode_body};
use crate::pipeline::guard::{self, Shape};
use crate::pipeline::{route, spend};
use crate::server::error::ApiError;
use crate::upstream::Endpoint;

pub async fn completions(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request as the client sent it, checked.
    let request = CompletionRequest::parse(call.read_body(body).await?)?;
    call.identify(&request.body, request.body.get("prompt"));
    let CompletionRequest {
        body: mut upstream,
        stream,
        wants_usage,
    } = request;

    // 2. The guardrail's input stage on the prompt.
    let flagged = guard::text_field(&call, &mut upstream, "prompt").await?;

    // 3. Facts from the prompt's text, as if it were one user message.
    let classification = call
        .headers
        .get(facts::CLASSIFICATION_HEADER)
        .map(|v| v.as_bytes());
    let facts = call
        .app
        .0
        .facts
        .extract(&as_chat(&upstream), classification)?;
    facts::strip_gateway_fields(&mut upstream);
    let (route_facts, sensitive) = route::facts_for(&call, &facts, flagged);

    // 4. Routing (a text-completion request goes to chat models: the servers serve both).
    let routed = route::route(&call, ModelKind::Chat, &route_facts, sensitive).await?;

    // 5. Budget: the worst case.
    let max_out = spend::max_completion_tokens(&upstream, call.app.0.budgets.default_max_tokens());
    let reservation = spend::reserve(
        &call,
        &routed.route.model,
        u64::from(facts.prompt_tokens),
        max_out,
    )
    .await?;

    // 6. The upstream's `/completions`, with fallback.
    request_usage(&mut upstream, stream);
    let served = fallback::serve(
        &call,
        &routed,
        Endpoint::Completions,
        max_out,
        reservation,
        |m| {
            upstream.insert("model".into(), Value::String(m.upstream_model.clone()));
            encode_body(&upstream)
        },
    )
    .await;

    // 7. The answer, streamed or whole, labelled with the model that served.
    Ok(answer(
        &call,
        &routed,
        served,
        stream,
        wants_usage,
        Shape::Completion,
    )
    .await)
}

/// The body as facts read a chat request: the prompt's text as one user message.
fn as_chat(body: &Map<String, Value>) -> Map<String, Value> {
    let text = match body.get("prompt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let mut chat = body.clone();
    chat.shift_remove("prompt");
    chat.insert(
        "messages".into(),
        json!([{"role": "user", "content": text}]),
    );
    chat
}

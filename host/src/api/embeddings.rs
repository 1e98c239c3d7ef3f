//! `POST /v1/embeddings`, through the same phases as chat (`crate::pipeline`): validated, routed
//! to an embedding model inside the residency boundary, charged (the input's tokens reserved,
//! settled at the upstream's usage), proxied with fallback, and answered by the pipeline's
//! answer phase (`pipeline::answer`, `Kind::Embeddings`) in the convention's shape with the
//! gateway's model id. The built-in model (`multilingual-e5-small-q4`, the one the
//! document library embeds with) is served in process by [`builtin`] instead, unless a configured
//! model has the same id.

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::validate::EmbeddingsRequest;
use crate::domain::ModelKind;
use crate::pipeline::answer::{Kind, answer};
use crate::pipeline::call::Call;
use crate::pipeline::fallback::{self, encode_body};
use crate::pipeline::library::{answer_usage, library};
use crate::pipeline::{guard, route, spend};
use crate::policy::RouteFacts;
use crate::rag::BUILTIN_MODEL;
use crate::residency;
use crate::server::error::ApiError;
use crate::upstream::{Endpoint, Outbound};

pub async fn embeddings(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request, checked against the convention.
    let mut request = EmbeddingsRequest::parse(call.read_body(body).await?)?;
    call.identify(&request.body, request.body.get("input"));

    // The guardrail's input stage on what is sent to be embedded (block 400, redact text in
    // place, token arrays decoded and checked; flagged → local models only). The built-in model
    // runs on this machine.
    let flagged = guard::text_field(&call, &mut request.body, "input").await?;
    if request.model == BUILTIN_MODEL && call.app.config().model(BUILTIN_MODEL).is_none() {
        return builtin(&call, &request).await;
    }

    // 2. Route: an explicit embedding model; the residency guard.
    let facts = RouteFacts {
        requested_model: request.model.clone(),
        team_id: call.principal.team_id.clone(),
        key_id: call.principal.key_id.clone(),
        ..RouteFacts::default()
    };
    let sensitive = flagged
        || call
            .headers
            .get(crate::facts::CLASSIFICATION_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| residency::is_sensitive_label(&v.trim().to_ascii_lowercase()));
    let routed = route::route(&call, ModelKind::Embedding, &facts, sensitive).await?;

    // 3. Budget: the input's tokens.
    let input_tokens = input_tokens(&call, request.body.get("input"));
    let reservation = spend::reserve(&call, &routed.route.model, input_tokens, 0).await?;

    // 4. The upstream call, with fallback.
    let served = fallback::serve(&call, &routed, 0, reservation, |m| {
        request
            .body
            .insert("model".into(), Value::String(m.upstream_model.clone()));
        encode_body(&request.body).map(|b| Outbound::new(Endpoint::Embeddings, b))
    })
    .await;

    // 5. The answer, with the headers of the model that served (or failed last): the model's
    //    id named, settled at the upstream's usage (else the counted input).
    Ok(answer(&call, &routed, served, false, false, Kind::Embeddings).await)
}

/// Most inputs in one request to the built-in model (the convention's own limit).
const MAX_BUILTIN_INPUTS: usize = 2048;
/// Most tokens of one input to the built-in model (the convention's embedding models' context;
/// e5 reads it in 512-token windows).
const MAX_BUILTIN_INPUT_TOKENS: u64 = 8192;

/// The built-in model, in process: every input embedded as an e5 `query:` (symmetric
/// similarity), `float` or `base64` (little-endian f32) as asked; usage recorded at no spend and
/// counted against the key's and team's tokens per day. The compute is bounded before it starts
/// (an input over 8,192 tokens is 400, a request over `[documents] max_embedding_tokens` 413),
/// runs on the shared engine as interactive work for the caller's team, and stops when the
/// client goes away (this handler's future is dropped, and with it the engine's job).
async fn builtin(call: &Call, request: &EmbeddingsRequest) -> Result<Response, ApiError> {
    let library = library(call)?;
    let texts: Vec<String> = match request.body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => {
            return Err(ApiError::invalid(
                "input",
                format!(
                    "`{BUILTIN_MODEL}` embeds text: send a string or an array of strings, not tokens."
                ),
            ));
        }
    };
    if texts.len() > MAX_BUILTIN_INPUTS {
        return Err(ApiError::invalid(
            "input",
            format!("At most {MAX_BUILTIN_INPUTS} inputs per request."),
        ));
    }
    let dims = library.dims();
    if let Some(d) = request.body.get("dimensions").and_then(Value::as_u64)
        && d != dims as u64
    {
        return Err(ApiError::invalid(
            "dimensions",
            format!("`{BUILTIN_MODEL}` returns {dims} dimensions only."),
        ));
    }
    let base64 = request.body.get("encoding_format").and_then(Value::as_str) == Some("base64");
    let job = library.prepare_builtin(texts).await?;
    let tokens = job.tokens();
    if job.longest_text_tokens() > MAX_BUILTIN_INPUT_TOKENS {
        return Err(ApiError::invalid(
            "input",
            format!(
                "`{BUILTIN_MODEL}` embeds inputs of at most {MAX_BUILTIN_INPUT_TOKENS} tokens; an input has {}.",
                job.longest_text_tokens()
            ),
        )
        .with_code("context_length_exceeded"));
    }
    let cap = library.max_embedding_tokens();
    if tokens > cap {
        return Err(ApiError::new(
            http::StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!(
                "This request asks `{BUILTIN_MODEL}` for {tokens} tokens; one request may ask for at most {cap} ([documents] max_embedding_tokens). Split the inputs over several requests."
            ),
        )
        .with_param("input")
        .with_code("too_many_tokens"));
    }
    let vectors = library
        .run_builtin(job, &call.principal.team_id)
        .await
        .map_err(ApiError::from)?;
    answer_usage(call, BUILTIN_MODEL, tokens);
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                Value::String(base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    bytes,
                ))
            } else {
                serde_json::json!(v)
            };
            serde_json::json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    let mut response = Json(serde_json::json!({
        "object": "list",
        "data": data,
        "model": BUILTIN_MODEL,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
    .into_response();
    // Served on this machine: the gateway's own region.
    if let Ok(region) = http::HeaderValue::from_str(&call.app.config().region) {
        response
            .headers_mut()
            .insert(crate::pipeline::X_DATA_RESIDENCY, region);
    }
    Ok(response)
}

/// Tokens of an embeddings `input`: text counted with the tokenizer, token arrays by length.
fn input_tokens(call: &Call, input: Option<&Value>) -> u64 {
    let count = |v: &Value| -> u64 {
        match v {
            Value::String(s) => call.count_tokens(s),
            Value::Array(a) => a.len() as u64,
            _ => 0,
        }
    };
    match input {
        Some(Value::Array(items)) if items.iter().any(|i| !i.is_number()) => {
            items.iter().map(count).sum()
        }
        Some(v) => count(v),
        None => 0,
    }
}

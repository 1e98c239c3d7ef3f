//! `POST /v1/rag/query` — retrieval with citations and confidence (`docs/DOCUMENTS.md`), read
//! top to bottom in [`query`]:
//!
//! 1. the body read and checked; the actor named; the journal records the query's hash;
//! 2. the guardrail's input stage on the query (block 400; redact: the redacted query is what is
//!    embedded and searched);
//! 3. the search in the caller's team's collection, or in all of them when none is named (absent
//!    or empty): calibrated confidence, citations; then the retrieval policy on the ranked
//!    citations (`pipeline::library::review`): what it filters is never returned, cited or
//!    generated from, and the rest take its order;
//! 4. with `generate: true`, an answer through the chat phases (`pipeline::converse`, then
//!    `pipeline::answer`) — routing, guardrail, budget and the journal apply as to any chat
//!    request — from a prompt that numbers the citations, so the answer cites them inline as
//!    `[1]`, `[2]`.

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::validate::ChatRequest;
use crate::pipeline::answer::{Answer, Kind, Settle, answer_parts, sse_response};
use crate::pipeline::call::Call;
use crate::pipeline::converse::converse;
use crate::pipeline::guard::{self, Shape};
use crate::pipeline::library::{answer_usage, library, review};
use crate::pipeline::route;
use crate::rag::{Citation, Filters, Query, RagError, check_collection};
use crate::server::error::ApiError;

const MAX_QUERY_CHARS: usize = 8_000;
const DEFAULT_TOP_K: usize = 5;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RagRequest {
    query: String,
    #[serde(default)]
    collection: Option<String>,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    filters: Option<Filters>,
    #[serde(default)]
    min_confidence: Option<f64>,
    #[serde(default)]
    generate: bool,
    /// The chat model for `generate` (default: the gateway's `default_model`).
    #[serde(default)]
    model: Option<String>,
    /// For `generate`: the answer's token budget.
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f64>,
    /// Who the query is for (the journal's actor), as in chat requests.
    #[serde(default)]
    user: Option<String>,
}

pub async fn query(mut call: Call, body: Body) -> Result<Response, ApiError> {
    let library = library(&call)?;
    library.readiness().map_err(RagError::Unavailable)?;

    // 1. The body, checked; the query's hash for the journal.
    let map = call.read_body(body).await?;
    call.identify(&map, map.get("query"));
    let request: RagRequest = serde_json::from_value(Value::Object(map))
        .map_err(|e| ApiError::bad_request(format!("Invalid retrieval query: {e}.")))?;
    let (mut query, generate) = check(&call, &request)?;

    // 2. The guardrail on the query.
    let mut texts = vec![query.text];
    guard::texts(&call, &mut texts).await?;
    query.text = texts.pop().unwrap_or_default();

    // 3. The search; the model's work in usage.
    let mut retrieved = library.search(query.clone()).await?;
    answer_usage(&call, library.model_id(), retrieved.query_tokens);
    review(&call, &query.text, &mut retrieved).await?;
    let citations: Vec<Value> = retrieved.citations.iter().map(citation_json).collect();
    let mut result = json!({
        "object": "rag.result",
        "query": query.text,
        "collection": query.collection,
        "model": library.model_id(),
        "confidence": round(retrieved.confidence),
        "citations": citations,
    });

    // 4. An answer from the cited sources, through the chat phases.
    if !generate {
        return Ok(Json(result).into_response());
    }
    if retrieved.citations.is_empty() {
        result["answer"] = Value::Null;
        result["answer_skipped"] =
            json!("No citation met the query's confidence: no answer was generated.");
        return Ok(Json(result).into_response());
    }
    let default_model = call.app.config().default_model.0.clone();
    let chat = chat_request(&request, &default_model, &query.text, &retrieved.citations);
    // Checked and run like any chat request, for the actor it names.
    let mut chat = ChatRequest::parse(chat)?;
    call.identify(&chat.body, chat.body.get("messages"));
    let (routed, served) = converse(&call, &mut chat.body, false, Shape::Chat).await?;
    let (model, answered) =
        answer_parts(&call, served, false, false, Kind::Chat, Settle::Durable).await;
    let answer = match answered {
        Ok(Answer::Whole(answer)) => answer,
        // Never asked for: `chat_request` does not stream.
        Ok(Answer::Stream(body)) => return Ok(route::label(sse_response(body), &routed, &model)),
        // The chat phases' refusal (guardrail, upstream) as it is.
        Err(failed) => return Ok(route::label(failed, &routed, &model)),
    };
    result["answer"] = answer
        .pointer("/choices/0/message/content")
        .cloned()
        .unwrap_or(Value::Null);
    result["answer_model"] = answer.get("model").cloned().unwrap_or(Value::Null);
    result["usage"] = answer.get("usage").cloned().unwrap_or(Value::Null);
    // The route's sovereignty headers (route policy, residency) describe the answer.
    Ok(route::label(Json(result).into_response(), &routed, &model))
}

/// The request's fields checked against their limits.
fn check(call: &Call, r: &RagRequest) -> Result<(Query, bool), ApiError> {
    let text = r.query.trim();
    if text.is_empty() || r.query.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(
            "query",
            format!("`query` must be 1 to {MAX_QUERY_CHARS} characters of text."),
        ));
    }
    let top_k = r.top_k.unwrap_or(DEFAULT_TOP_K);
    if !(1..=crate::rag::MAX_TOP_K).contains(&top_k) {
        return Err(ApiError::invalid(
            "top_k",
            format!("`top_k` must be from 1 to {}.", crate::rag::MAX_TOP_K),
        ));
    }
    let min_confidence = r.min_confidence.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&min_confidence) {
        return Err(ApiError::invalid(
            "min_confidence",
            "`min_confidence` must be between 0 and 1.",
        ));
    }
    if !r.generate && (r.model.is_some() || r.max_tokens.is_some() || r.temperature.is_some()) {
        return Err(ApiError::invalid(
            "generate",
            "`model`, `max_tokens` and `temperature` apply to `generate: true` only.",
        ));
    }
    // None named (absent or empty, as a form left blank sends it): all the team's collections.
    let collection = match r.collection.as_deref() {
        None | Some("") => None,
        Some(c) => Some(check_collection(c)?),
    };
    Ok((
        Query {
            team_id: call.principal.team_id.clone(),
            text: text.to_string(),
            collection,
            top_k,
            filters: r.filters.clone().unwrap_or_default(),
            min_confidence,
        },
        r.generate,
    ))
}

/// The chat request that answers from the numbered citations.
fn chat_request(
    r: &RagRequest,
    default_model: &str,
    query: &str,
    citations: &[Citation],
) -> Map<String, Value> {
    let mut sources = String::new();
    for (i, c) in citations.iter().enumerate() {
        let place = match c.page {
            Some(page) => format!("{}, page {page}", c.filename),
            None => format!("{}, paragraph {}", c.filename, c.paragraph),
        };
        sources.push_str(&format!("[{}] ({place})\n{}\n\n", i + 1, c.text));
    }
    let system = format!(
        "Answer the question using only the numbered sources below, in the language of the \
         question. Cite the source of each statement inline with its number in square brackets, \
         like [1] or [2][3]. If the sources do not contain the answer, say that they do not.\n\n\
         {sources}"
    );
    let mut chat = Map::new();
    chat.insert(
        "model".into(),
        json!(r.model.as_deref().unwrap_or(default_model)),
    );
    chat.insert(
        "messages".into(),
        json!([
            {"role": "system", "content": system.trim_end()},
            {"role": "user", "content": query},
        ]),
    );
    if let Some(n) = r.max_tokens {
        chat.insert("max_tokens".into(), json!(n));
    }
    if let Some(t) = r.temperature {
        chat.insert("temperature".into(), json!(t));
    }
    if let Some(u) = &r.user {
        chat.insert("user".into(), json!(u));
    }
    chat
}

fn citation_json(c: &Citation) -> Value {
    json!({
        "document_id": c.document_id,
        "filename": c.filename,
        "page": c.page,
        "paragraph": c.paragraph,
        "chunk_id": format!("chk_{}", c.chunk_id),
        "text": c.text,
        "score": round(f64::from(c.score)),
        "confidence": round(c.confidence),
    })
}

/// Four decimals: more would be noise.
fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

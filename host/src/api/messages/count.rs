//! `POST /v1/messages/count_tokens` (issue 45; docs/MESSAGES.md, "Counting tokens"): the
//! Messages body without `max_tokens`, converted as `create` converts it, admitted by the same
//! phases up to routing (`pipeline::converse::count`: guardrail, facts, routing with the
//! residency guard), then counted for the routed model — by its server's tokenizer where the
//! model's `tokenize` setting names one, else estimated high. Answers `{"input_tokens": N}`
//! with `x-sovereign-token-count: exact | estimated`. The journal names the operation
//! `messages.count_tokens`; no budget is held and nothing is generated.

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue};
use serde_json::json;

use super::request::{Endpoint, MessagesRequest};
use crate::api::validate::ChatRequest;
use crate::pipeline::call::Call;
use crate::pipeline::converse;
use crate::pipeline::route;
use crate::server::error::ApiError;

/// Says how the count was made: `exact` (the model's own tokenizer and chat template) or
/// `estimated` (the gateway's count scaled up: never below what the model is billed, by design).
pub const X_SOVEREIGN_TOKEN_COUNT: HeaderName = HeaderName::from_static("x-sovereign-token-count");

pub async fn count_tokens(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The Messages body, converted to the chat body `create` would send.
    let body = call.read_body(body).await?;
    let request = MessagesRequest::parse(&body, Endpoint::CountTokens)?;
    let mut chat = ChatRequest::parse(request.chat)?;
    call.identify(&chat.body, body.get("messages"));

    // 2. Guardrail, facts, routing; the count for the routed model.
    let (routed, counted) = converse::count(&call, &mut chat.body).await?;

    // 3. The answer.
    let how = if counted.exact { "exact" } else { "estimated" };
    let mut response = Json(json!({"input_tokens": counted.tokens})).into_response();
    response
        .headers_mut()
        .insert(X_SOVEREIGN_TOKEN_COUNT, HeaderValue::from_static(how));
    let model = routed.route.model.clone();
    Ok(route::label(response, &routed, &model))
}

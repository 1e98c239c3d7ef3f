//! The Anthropic Messages API (`POST /v1/messages`; issue 45) served over the same phases as chat
//! completions, read top to bottom in [`create`]:
//!
//! 1. the body checked and converted to a chat body (`request.rs`: system, `tool_use` /
//!    `tool_result` pairing, images, tools, `tool_choice`; unknown fields accepted), then checked
//!    as a chat body like any other;
//! 2. the guardrail over every text of the Messages body (`native.rs`: system, text blocks, tool
//!    inputs and results, replayed thinking), then the conversation phases
//!    (`pipeline::converse_guarded`): facts, routing with the residency guard, the budget, the
//!    upstream call with fallback — each candidate gets the request it speaks, converted at this
//!    last step: the Messages body itself for a model declared `messages = "native"` (its
//!    `/v1/messages`, `anthropic-version` / `anthropic-beta` forwarded), the chat body otherwise;
//! 3. the answer phases (`pipeline::answer`; a native answer is read as chat by the upstream
//!    client, `upstream::messages`), then the answer re-told: a `message` (`reply.rs`) or the
//!    Messages stream's named events (`stream.rs`).
//!
//! Keys come as `x-api-key` or `Authorization: Bearer` (`auth`); every refusal on these routes is
//! re-told in the Anthropic error shape with a `request-id` header (`errors.rs`, a layer of the
//! route table). The journal names the operation `messages.create`. `POST
//! /v1/messages/count_tokens` is `count.rs`; the prompts `create` is billed for teach its
//! estimates.

pub mod count;
pub mod errors;
pub mod native;
pub mod reply;
pub mod request;
pub mod stream;

use axum::Json;
use axum::body::Body;
use axum::response::{IntoResponse, Response};

use super::validate::ChatRequest;
use crate::pipeline::answer::{Answer, Kind, Settle, answer_parts, sse_response};
use crate::pipeline::call::Call;
use crate::pipeline::converse::converse_guarded;
use crate::pipeline::guard::Shape;
use crate::pipeline::route;
use crate::server::error::ApiError;
use request::{Endpoint, MessagesRequest};

pub async fn create(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The Messages body, converted to the chat body every upstream speaks.
    let mut body = call.read_body(body).await?;
    let mut request = MessagesRequest::parse(&body, Endpoint::Create)?;
    let mut chat = ChatRequest::parse(std::mem::take(&mut request.chat))?;
    // The actor from `metadata.user_id` (the chat body's `user`); the prompt hash over the
    // messages as the client sent them.
    call.identify(&chat.body, body.get("messages"));

    // 2. The guardrail over the Messages body (the chat body made again when it redacted), then
    //    facts, routing, budget and the upstream call, each model sent what it speaks.
    let (flagged, redacted) = native::guard(&call, &mut body).await?;
    if redacted {
        request = MessagesRequest::parse(&body, Endpoint::Create)?;
        chat = ChatRequest::parse(std::mem::take(&mut request.chat))?;
    }
    let forwarded = native::forwarded(&call.headers);
    let (routed, served) = converse_guarded(
        &call,
        &mut chat.body,
        request.stream,
        Shape::Chat,
        flagged,
        |m| native::outbound(m, &body, &forwarded),
    )
    .await?;
    // The prompt as sent, counted as `count_tokens` counts it: the billed usage teaches the
    // ratio its estimates scale by.
    call.prompt_size = Some(call.app.facts().prompt_size(&chat.body));
    let prompt_tokens = served.as_ref().map_or(0, |s| s.reservation.prompt_tokens());

    // 3. The answer, re-told in the Messages API's shapes.
    let (model, answered) = answer_parts(
        &call,
        served,
        request.stream,
        true,
        Kind::Chat,
        Settle::Durable,
    )
    .await;
    let id = reply::message_id();
    let response = match answered {
        Ok(Answer::Whole(answer)) => Json(reply::message(
            &answer,
            &id,
            &model.id.0,
            &request.stop_sequences,
        ))
        .into_response(),
        Ok(Answer::Stream(chat_stream)) => {
            let teller = stream::Teller::new(
                id,
                model.id.0.clone(),
                request.stop_sequences,
                prompt_tokens,
            );
            sse_response(stream::events(call.clone(), teller, chat_stream))
        }
        Err(failed) => failed,
    };
    Ok(route::label(response, &routed, &model))
}

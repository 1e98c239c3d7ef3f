//! `POST /v1/chat/completions` — the gateway's main request path, read top to bottom in
//! [`chat_completions`]: parse, the pipeline's phases, the answer.
//!
//! 1. read and validate the body (`Call::read_body`, `validate`), name the actor;
//! 2. the conversation phases (`pipeline::converse`): guardrail input stage (block, redact in
//!    place, or flag sensitive), facts, routing with the residency guard, the budget's
//!    reservation, the upstream call with fallback;
//! 3. the answer phases (`pipeline::answer`): relay the stream event by event or check and
//!    re-address the JSON answer, so the client sees the gateway's request id and the id of the
//!    model that served; the guardrail's output stage; settle the reservation at the real usage
//!    (counted with the tokenizer when the upstream reports none), abandoned streams included;
//!    the route's headers; `request.completed`.
//!
//! Authentication, the key's address allow-list, rate and token limits ran before this
//! (middleware), and the journal layer around them gets its facts from the call's audit slot as
//! the phases learn them.

use axum::body::Body;
use axum::response::Response;

use super::validate::ChatRequest;
use crate::pipeline::answer::{Kind, answer};
use crate::pipeline::call::Call;
use crate::pipeline::converse::converse;
use crate::pipeline::guard::Shape;
use crate::server::error::ApiError;

pub async fn chat_completions(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request as the client sent it, checked against the convention.
    let mut request = ChatRequest::parse(call.read_body(body).await?)?;
    call.identify(&request.body, request.body.get("messages"));

    // 2. Guardrail, facts, routing, budget, the upstream call.
    let (routed, served) = converse(&call, &mut request.body, request.stream, Shape::Chat).await?;

    // 3. The answer, with the headers of the model that served (or failed last).
    Ok(answer(
        &call,
        &routed,
        served,
        request.stream,
        request.wants_usage,
        Kind::Chat,
    )
    .await)
}

//! `POST /v1/completions` — legacy text completions (LlamaIndex's `OpenAILike` calls it by
//! default; vLLM, llama.cpp server, TGI and Ollama serve it), through the same phases as chat,
//! top to bottom in [`completions`]: the body checked; the conversation phases on the `prompt`
//! (`pipeline::converse` in `Shape::Completion`: the guardrail's input stage with text redacted
//! in place and token prompts decoded and checked; facts and routing from the prompt's text; the
//! budget; the upstream's `/completions` with fallback); the answer relayed (streamed or whole)
//! through the output stage, re-addressed, usage always answered, settled.

use axum::body::Body;
use axum::response::Response;

use super::validate::CompletionRequest;
use crate::pipeline::answer::{Kind, answer};
use crate::pipeline::call::Call;
use crate::pipeline::converse::converse;
use crate::pipeline::guard::Shape;
use crate::server::error::ApiError;

pub async fn completions(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request as the client sent it, checked.
    let mut request = CompletionRequest::parse(call.read_body(body).await?)?;
    call.identify(&request.body, request.body.get("prompt"));

    // 2. Guardrail on the prompt, facts, routing, budget, the upstream's `/completions`.
    let (routed, served) =
        converse(&call, &mut request.body, request.stream, Shape::Completion).await?;

    // 3. The answer, streamed or whole, labelled with the model that served.
    Ok(answer(
        &call,
        &routed,
        served,
        request.stream,
        request.wants_usage,
        Kind::Completion,
    )
    .await)
}

//! The conversation phases of a generation request, in order, in [`converse`]: the guardrail's
//! input stage, facts, routing with the residency guard, the budget, the upstream call with
//! fallback. Chat (`/v1/chat/completions`), legacy completions, the Responses API (on the
//! conversation rebuilt from its stored chain) and retrieval's `generate` all run them; what
//! follows is the answer phase (`pipeline::answer`).

use serde_json::{Map, Value, json};

use super::call::Call;
use super::fallback::{self, NotServed, Served, encode_body};
use super::guard::{self, Shape};
use super::route::{self, Routed};
use super::spend;
use crate::domain::ModelKind;
use crate::facts;
use crate::server::error::ApiError;
use crate::upstream::Endpoint;

/// The phases from the guardrail's input stage to the upstream call, on a checked request body
/// (`shape`: a chat body, or a legacy completion's `prompt`): the guardrail (`body` redacted in
/// place), facts, routing, the budget, the upstream call with fallback. `body` is left as last
/// sent upstream.
pub async fn converse(
    call: &Call,
    body: &mut Map<String, Value>,
    stream: bool,
    shape: Shape,
) -> Result<(Routed, Result<Served, NotServed>), ApiError> {
    // The guardrail's input stage: block (400), redact (in place), or flag (sensitive).
    let flagged = match shape {
        Shape::Chat => guard::input(call, body).await?,
        Shape::Completion => guard::text_field(call, body, "prompt").await?,
    };

    // Facts: language, prompt tokens, routing hints (never the prompt itself); a completion's
    // prompt read as one user message.
    let classification = call
        .headers
        .get(facts::CLASSIFICATION_HEADER)
        .map(|v| v.as_bytes());
    let facts = match shape {
        Shape::Chat => call.app.facts().extract(body, classification)?,
        Shape::Completion => call.app.facts().extract(&as_chat(body), classification)?,
    };
    facts::strip_gateway_fields(body);
    let (route_facts, sensitive) = route::facts_for(call, &facts, flagged);

    // Routing: an explicit model, or the router policy's choice; the residency guard. A
    // text-completion request goes to chat models too: the servers serve both.
    let routed = route::route(call, ModelKind::Chat, &route_facts, sensitive).await?;

    // Budget: the worst case is held until the answer settles it.
    let max_out = spend::max_completion_tokens(body, call.app.budgets().default_max_tokens());
    let reservation = spend::reserve(
        call,
        &routed.route.model,
        u64::from(facts.prompt_tokens),
        max_out,
    )
    .await?;

    // The upstream call: the routed model, else its fallbacks (inside the boundary, not out of
    // rotation), until one answers; the reservation follows the model.
    request_usage(body, stream);
    let endpoint = match shape {
        Shape::Chat => Endpoint::ChatCompletions,
        Shape::Completion => Endpoint::Completions,
    };
    let served = fallback::serve(call, &routed, endpoint, max_out, reservation, |m| {
        body.insert("model".into(), Value::String(m.upstream_model.clone()));
        encode_body(body)
    })
    .await;
    Ok((routed, served))
}

/// When streaming, usage requested from the upstream so the gateway always learns the tokens
/// spent (the model name is set per candidate).
fn request_usage(body: &mut Map<String, Value>, stream: bool) {
    if stream {
        let opts = body
            .entry("stream_options")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(o) = opts {
            o.insert("include_usage".into(), Value::Bool(true));
        } else {
            *opts = json!({"include_usage": true});
        }
    }
}

/// A completion's body as facts read a chat request: the prompt's text as one user message.
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

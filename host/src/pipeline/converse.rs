//! The conversation phases of a generation request, in order, in [`converse`]: the guardrail's
//! input stage, facts, routing with the residency guard, the budget, the upstream call with
//! fallback. Chat (`/v1/chat/completions`), legacy completions, the Responses API (on the
//! conversation rebuilt from its stored chain) and retrieval's `generate` all run them; what
//! follows is the answer phase (`pipeline::answer`). The Messages API guards its own body and
//! runs the rest ([`converse_guarded`]), sending its own request to models that speak it.
//! [`count`] runs the same phases up to routing, then counts the prompt for the routed model
//! instead (`count_tokens`).

use serde_json::{Map, Value, json};

use super::call::Call;
use super::fallback::{self, NotServed, Served, encode_body};
use super::guard::{self, Shape};
use super::route::{self, Routed};
use super::spend;
use crate::domain::{ModelConfig, ModelKind, Tokenize};
use crate::facts;
use crate::server::error::ApiError;
use crate::upstream::{Endpoint, Outbound};

/// The result of the conversation phases: the route, and the upstream that answered (or why
/// none did).
pub type Conversed = (Routed, Result<Served, NotServed>);

/// The phases from the guardrail's input stage to the upstream call, on a checked request body
/// (`shape`: a chat body, or a legacy completion's `prompt`): the guardrail (`body` redacted in
/// place), facts, routing, the budget, the upstream call with fallback. `body` is left as last
/// sent upstream.
pub async fn converse(
    call: &Call,
    body: &mut Map<String, Value>,
    stream: bool,
    shape: Shape,
) -> Result<Conversed, ApiError> {
    let flagged = guard_input(call, body, shape).await?;
    converse_guarded(call, body, stream, shape, flagged, |_| None).await
}

/// [`converse`] after the guardrail's input stage (`flagged`: it flagged the request): facts,
/// routing, the budget, the upstream call with fallback. `own` gives a model's request when the
/// caller has its own for it (a Messages request to a model that speaks Messages); otherwise
/// the chat (or completion) body goes.
pub async fn converse_guarded(
    call: &Call,
    body: &mut Map<String, Value>,
    stream: bool,
    shape: Shape,
    flagged: bool,
    mut own: impl FnMut(&ModelConfig) -> Option<Result<Outbound, ApiError>>,
) -> Result<Conversed, ApiError> {
    let (routed, facts) = admit_guarded(call, body, shape, flagged).await?;

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
    let served = fallback::serve(call, &routed, max_out, reservation, |m| {
        if let Some(request) = own(m) {
            return request;
        }
        body.insert("model".into(), Value::String(m.upstream_model.clone()));
        encode_body(body).map(|b| Outbound::new(endpoint, b))
    })
    .await;
    Ok((routed, served))
}

/// The guardrail's input stage: block (400), redact (`body` in place), or flag (`true`:
/// sensitive).
async fn guard_input(
    call: &Call,
    body: &mut Map<String, Value>,
    shape: Shape,
) -> Result<bool, ApiError> {
    match shape {
        Shape::Chat => guard::input(call, body).await,
        Shape::Completion => guard::text_field(call, body, "prompt").await,
    }
}

/// The phases a guarded prompt passes before anything is sent anywhere: facts (the gateway's
/// fields stripped from `body`), routing with the residency guard.
async fn admit_guarded(
    call: &Call,
    body: &mut Map<String, Value>,
    shape: Shape,
    flagged: bool,
) -> Result<(Routed, facts::Facts), ApiError> {
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
    Ok((routed, facts))
}

/// A prompt's token count, and whether the deployment's tokenizer counted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    pub tokens: u64,
    /// Counted by the model's server (its tokenizer and chat template); else estimated.
    pub exact: bool,
}

/// Longest wait for a deployment's tokenizer before `count_tokens` estimates instead.
const TOKENIZE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The count-only path (`POST /v1/messages/count_tokens`): the prompt admitted as a generation's
/// would be — guardrail, facts, routing with the residency guard (a sensitive prompt is routed,
/// and so tokenized, only inside its boundary) — then counted for the routed model: by its
/// server where its `tokenize` setting names how, else (or when the server fails to answer)
/// the gateway's estimate, which errs high. No budget is held and nothing is generated.
/// `body` is left as the chat body the create call would send.
pub async fn count(
    call: &Call,
    body: &mut Map<String, Value>,
) -> Result<(Routed, Counted), ApiError> {
    let flagged = guard_input(call, body, Shape::Chat).await?;
    let (routed, _) = admit_guarded(call, body, Shape::Chat, flagged).await?;
    let model = &routed.route.model;
    body.insert("model".into(), Value::String(model.upstream_model.clone()));
    let app = &call.app;
    let size = app.facts().prompt_size(body);
    if model.tokenize != Tokenize::Estimate {
        let started = std::time::Instant::now();
        let asked =
            tokio::time::timeout(TOKENIZE_TIMEOUT, app.upstreams().count_prompt(model, body)).await;
        call.audit.upstream_time(started.elapsed());
        match asked {
            Ok(Ok(tokens)) => {
                // An exact count is the best lesson for the estimate, should the server fail.
                app.facts().ratios().observe(&model.id.0, &size, tokens);
                return Ok((
                    routed,
                    Counted {
                        tokens,
                        exact: true,
                    },
                ));
            }
            Ok(Err(e)) => {
                tracing::warn!(request_id = %call.ctx.id, model = %model.id, error = %e, "the model's tokenizer failed: estimated instead");
            }
            Err(_) => {
                tracing::warn!(request_id = %call.ctx.id, model = %model.id, "the model's tokenizer did not answer in time: estimated instead");
            }
        }
    }
    let tokens = app.facts().ratios().estimate(&model.id.0, &size);
    Ok((
        routed,
        Counted {
            tokens,
            exact: false,
        },
    ))
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

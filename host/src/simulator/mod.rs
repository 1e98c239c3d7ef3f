//! The simulated model fleet: an OpenAI-compatible server (chat, streaming and not, embeddings,
//! `/v1/models`) that also speaks the Anthropic Messages API (`/v1/messages`, `messages.rs`), with
//! configurable latency, time between streamed tokens, reasoning, fragmented tool arguments and
//! failure modes, for tests, benchmarks and the demo. Answers are deterministic and say which
//! model answered.
//!
//! `tokenize.rs`: vLLM's and llama.cpp's tokenizer endpoints, beside `/v1`.
//!
//! Control endpoints (no auth; the simulator is a test fixture that binds to loopback):
//! `GET /_sim/stats` (stream counters), `GET /_sim/requests` (the last request bodies received,
//! newest last), `PUT /_sim/models/{id}` (change one model's behaviour; `*` for all), `PUT /_sim/replies/{id}` (a fixed answer).

mod answer;
pub mod fleet;
mod messages;
mod tokenize;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use base64::Engine as _;
use http::{HeaderMap, StatusCode, header};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use fleet::SimModel;

/// How a simulated model behaves; all models start with the simulator's defaults.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Behaviour {
    /// Delay before the response headers (time to first byte).
    pub latency_ms: u64,
    /// Delay between two streamed tokens.
    pub token_interval_ms: u64,
    pub fail: FailMode,
    /// Streams the way TGI does: the last content chunk carries `finish_reason` (no separate
    /// finish chunk).
    pub finish_with_last_token: bool,
    /// Reports no `usage` (some servers do not), streamed or not.
    pub no_usage: bool,
    /// Reasons before answering: `reasoning_content` deltas (a `thinking` block on Messages).
    pub reasoning: bool,
    /// Streams tool-call arguments in many small fragments, as vLLM and llama.cpp do.
    pub fragment_tool_arguments: bool,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    #[default]
    None,
    /// Answer 500 with an error body.
    Error500,
    /// Answer 429 with an error body.
    Error429,
    /// Answer 400 with an error body (the upstream refusing the request itself).
    Error400,
    /// Never answer.
    Hang,
    /// Send half the answer, then cut the connection.
    DropMidStream,
}

/// Stream counters, to check that a client's disconnect cancels the upstream request.
#[derive(Debug, Default, Serialize)]
pub struct Stats {
    pub requests: u64,
    pub active_streams: u64,
    pub completed_streams: u64,
    pub cancelled_streams: u64,
}

const REQUEST_LOG_LEN: usize = 64;

/// The largest request body the simulator reads.
const SIM_MAX_BODY_BYTES: usize = 64 << 20;

#[derive(Clone)]
struct Sim(Arc<SimInner>);

struct SimInner {
    models: HashMap<&'static str, SimModel>,
    order: Vec<&'static str>,
    default_behaviour: Behaviour,
    behaviour: Mutex<HashMap<String, Behaviour>>,
    /// Fixed answers set by `PUT /_sim/replies/{id}` (tests of what models say).
    replies: Mutex<HashMap<String, String>>,
    requests: Mutex<VecDeque<Value>>,
    total_requests: AtomicU64,
    active: AtomicU64,
    completed: AtomicU64,
    cancelled: AtomicU64,
}

/// The simulator's routes, ready to serve.
pub fn router(models: Vec<SimModel>, default_behaviour: Behaviour) -> axum::Router {
    let order = models.iter().map(|m| m.id).collect();
    let sim = Sim(Arc::new(SimInner {
        models: models.into_iter().map(|m| (m.id, m)).collect(),
        order,
        default_behaviour,
        behaviour: Mutex::new(HashMap::new()),
        replies: Mutex::new(HashMap::new()),
        requests: Mutex::new(VecDeque::new()),
        total_requests: AtomicU64::new(0),
        active: AtomicU64::new(0),
        completed: AtomicU64::new(0),
        cancelled: AtomicU64::new(0),
    }));
    axum::Router::new()
        .route("/v1/models", get(list_models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/embeddings", post(embeddings))
        .route("/tokenize", post(tokenize::tokenize))
        .route("/apply-template", post(tokenize::apply_template))
        .route("/v1/messages", post(messages::create))
        .route("/_sim/stats", get(stats))
        .route("/_sim/requests", get(requests))
        .route("/_sim/models/{id}", put(set_behaviour))
        .route("/_sim/replies/{id}", put(set_reply))
        // Real servers take prompts up to the gateway's own limit (4 MiB by default) and more;
        // axum's default of 2 MiB would make the simulator the odd one out.
        .layer(axum::extract::DefaultBodyLimit::max(SIM_MAX_BODY_BYTES))
        .with_state(sim)
}

impl Sim {
    fn behaviour(&self, model: &str) -> Behaviour {
        let map = self
            .0
            .behaviour
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        map.get(model)
            .or_else(|| map.get("*"))
            .copied()
            .unwrap_or(self.0.default_behaviour)
    }

    fn record(&self, path: &str, headers: &HeaderMap, body: &Value) {
        self.0.total_requests.fetch_add(1, Ordering::Relaxed);
        let auth = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let traceparent = headers.get("traceparent").and_then(|v| v.to_str().ok());
        let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        let mut log = self
            .0
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if log.len() == REQUEST_LOG_LEN {
            log.pop_front();
        }
        log.push_back(
            json!({ "path": path, "authorization": auth, "traceparent": traceparent, "body": body,
                    "anthropic_version": h("anthropic-version"), "anthropic_beta": h("anthropic-beta") }),
        );
    }

    /// A request to one of the model endpoints: its JSON body read and recorded, its model looked
    /// up, latency and failure modes applied.
    async fn receive(
        &self,
        path: &str,
        headers: &HeaderMap,
        bytes: &Bytes,
    ) -> Result<(Value, SimModel, Behaviour), SimError> {
        let body = parse_body(bytes)?;
        self.record(path, headers, &body);
        let (model, behaviour) = self.admit(&body).await?;
        Ok((body, model, behaviour))
    }

    /// The fixed answer `PUT /_sim/replies/{id}` set for a model, if any.
    fn reply(&self, model: &str) -> Option<String> {
        let replies = self.0.replies.lock();
        replies
            .unwrap_or_else(PoisonError::into_inner)
            .get(model)
            .cloned()
    }

    /// Looks the model up and applies latency and failure modes common to all endpoints.
    async fn admit(&self, body: &Value) -> Result<(SimModel, Behaviour), SimError> {
        let name = body.get("model").and_then(Value::as_str).unwrap_or("");
        let Some(model) = self.0.models.get(name).cloned() else {
            return Err(sim_error(
                StatusCode::NOT_FOUND,
                &format!("The model `{name}` does not exist."),
            ));
        };
        let b = self.behaviour(name);
        if b.latency_ms > 0 {
            // Not even a zero sleep otherwise: it waits for tokio's next 1 ms timer tick.
            tokio::time::sleep(Duration::from_millis(b.latency_ms)).await;
        }
        match b.fail {
            FailMode::Error500 => Err(sim_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "simulated internal error",
            )),
            FailMode::Error429 => Err(sim_error(
                StatusCode::TOO_MANY_REQUESTS,
                "simulated overload",
            )),
            FailMode::Error400 => Err(sim_error(StatusCode::BAD_REQUEST, "simulated bad request")),
            FailMode::Hang => std::future::pending().await,
            FailMode::None | FailMode::DropMidStream => Ok((model, b)),
        }
    }
}

/// An error answer in the convention's shape, as real model servers send them.
struct SimError(StatusCode, String);

impl IntoResponse for SimError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"message": self.1, "type": "simulator_error", "param": null, "code": null}});
        (self.0, Json(body)).into_response()
    }
}

fn sim_error(status: StatusCode, message: &str) -> SimError {
    SimError(status, message.to_string())
}

fn parse_body(bytes: &Bytes) -> Result<Value, SimError> {
    serde_json::from_slice(bytes)
        .map_err(|e| sim_error(StatusCode::BAD_REQUEST, &format!("invalid JSON: {e}")))
}

async fn list_models(State(sim): State<Sim>) -> Json<Value> {
    let data: Vec<Value> = sim
        .0
        .order
        .iter()
        .filter_map(|id| sim.0.models.get(id))
        .map(|m| json!({"id": m.id, "object": "model", "created": 0, "owned_by": "simulator"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

async fn chat(State(sim): State<Sim>, headers: HeaderMap, bytes: Bytes) -> Response {
    let (body, model, behaviour) = match sim.receive("/v1/chat/completions", &headers, &bytes).await
    {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut tokens = match sim.reply(model.id) {
        Some(text) => answer::split(&text),
        None => answer::answer_tokens(&model, &messages),
    };
    // Structured output: a valid instance of the requested schema (or a JSON object) whose
    // strings carry the answer's text.
    if let Some(json) = answer::structured(&body, &tokens.concat()) {
        tokens = answer::split(&json);
    }
    let max = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64);
    let mut finish_reason = "stop";
    if let Some(max) = max.and_then(|m| usize::try_from(m).ok())
        && max < tokens.len()
    {
        tokens.truncate(max);
        finish_reason = "length";
    }
    let usage = json!({
        "prompt_tokens": answer::prompt_tokens(&messages),
        "completion_tokens": tokens.len(),
        "total_tokens": answer::prompt_tokens(&messages) + tokens.len() as u64,
    });
    let id = format!("sim-{}", sim.0.total_requests.load(Ordering::Relaxed));
    let created = unix_now();
    // Offered tools (and not answering a tool's result): a call of the first tool, whose
    // arguments carry the answer's text.
    let tool_call = answer::chat_tool_call(&body, &messages, &tokens.concat());
    let reasoning = answer::chat_reasoning(
        &model,
        &messages,
        behaviour.reasoning,
        sim.reply(model.id).as_deref(),
    );
    if tool_call.is_some() {
        finish_reason = "tool_calls";
    }
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        let chunk = |delta: Value, finish: Option<&str>| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created,
                   "model": model.id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        events.extend(
            reasoning
                .iter()
                .map(|t| chunk(json!({"reasoning_content": t}), None)),
        );
        match &tool_call {
            Some(call) => events.extend(
                answer::tool_call_deltas(call, behaviour.fragment_tool_arguments)
                    .into_iter()
                    .map(|d| chunk(json!({"tool_calls": [d]}), None)),
            ),
            None => events.extend(tokens.iter().map(|t| chunk(json!({"content": t}), None))),
        }
        match events.last_mut() {
            Some(last) if behaviour.finish_with_last_token && !tokens.is_empty() => {
                last["choices"][0]["finish_reason"] = json!(finish_reason);
            }
            _ => events.push(chunk(json!({}), Some(finish_reason))),
        }
        if include_usage && !behaviour.no_usage {
            events.push(
                json!({"id": id, "object": "chat.completion.chunk", "created": created,
                               "model": model.id, "choices": [], "usage": usage}),
            );
        }
        let mut frames: Vec<Bytes> = events
            .into_iter()
            .map(|e| Bytes::from(format!("data: {e}\n\n")))
            .collect();
        frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
        let cut_at = (behaviour.fail == FailMode::DropMidStream).then_some(frames.len() / 2);
        return stream_response(sim, frames, behaviour.token_interval_ms, cut_at);
    }
    let mut answer = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model.id,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": tokens.concat()},
                     "finish_reason": finish_reason, "logprobs": null}],
        "usage": usage,
    });
    if let Some(call) = tool_call {
        answer["choices"][0]["message"] =
            json!({"role": "assistant", "content": null, "tool_calls": [call]});
    }
    if behaviour.reasoning {
        answer["choices"][0]["message"]["reasoning_content"] = json!(reasoning.concat());
    }
    if behaviour.no_usage
        && let Some(obj) = answer.as_object_mut()
    {
        obj.remove("usage");
    }
    if behaviour.fail == FailMode::DropMidStream {
        let text = answer.to_string();
        let half = Bytes::from(text.as_bytes()[..text.len() / 2].to_vec());
        return stream_response(sim, vec![half, Bytes::new()], 0, Some(1));
    }
    Json(answer).into_response()
}

/// Counts a stream as active until it is dropped; completed or cancelled by then.
struct StreamGuard {
    sim: Sim,
    completed: bool,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.sim.0.active.fetch_sub(1, Ordering::Relaxed);
        let counter = if self.completed {
            &self.sim.0.completed
        } else {
            &self.sim.0.cancelled
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends `frames` `interval_ms` apart; with `cut_at`, errors at that frame so the connection drops.
fn stream_response(
    sim: Sim,
    frames: Vec<Bytes>,
    interval_ms: u64,
    cut_at: Option<usize>,
) -> Response {
    sim.0.active.fetch_add(1, Ordering::Relaxed);
    let guard = StreamGuard {
        sim,
        completed: false,
    };
    let state = (frames.into_iter().enumerate(), guard);
    let stream = futures_util::stream::unfold(state, move |(mut frames, mut guard)| async move {
        let (i, frame) = frames.next()?;
        if i > 0 && interval_ms > 0 {
            tokio::time::sleep(Duration::from_millis(interval_ms)).await;
        }
        if cut_at == Some(i) {
            guard.completed = true; // the simulator ended it on purpose
            return Some((
                Err(std::io::Error::other("simulated drop")),
                (frames, guard),
            ));
        }
        if frames.len() == 0 {
            guard.completed = true;
        }
        Some((Ok::<_, std::io::Error>(frame), (frames, guard)))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Legacy text completions: the same deterministic answer as chat, to the prompt (the first one
/// when there are several), as `text_completion` objects or chunks.
async fn completions(State(sim): State<Sim>, headers: HeaderMap, bytes: Bytes) -> Response {
    let (body, model, behaviour) = match sim.receive("/v1/completions", &headers, &bytes).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let prompt = match body.get("prompt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items.first().map_or_else(String::new, |p| match p {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        _ => String::new(),
    };
    let messages = [json!({"role": "user", "content": prompt})];
    let mut tokens = answer::answer_tokens(&model, &messages);
    let mut finish_reason = "stop";
    if let Some(max) = body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .and_then(|m| usize::try_from(m).ok())
        && max < tokens.len()
    {
        tokens.truncate(max);
        finish_reason = "length";
    }
    let prompt_tokens = answer::prompt_tokens(&messages);
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": tokens.len(),
                       "total_tokens": prompt_tokens + tokens.len() as u64});
    let id = format!("sim-cmpl-{}", sim.0.total_requests.load(Ordering::Relaxed));
    let created = unix_now();
    let chunk = |text: &str, finish: Option<&str>| {
        json!({"id": id, "object": "text_completion", "created": created, "model": model.id,
               "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": null}]})
    };
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let mut events: Vec<Value> = tokens.iter().map(|t| chunk(t, None)).collect();
        events.push(chunk("", Some(finish_reason)));
        if body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true)
            && !behaviour.no_usage
        {
            events.push(
                json!({"id": id, "object": "text_completion", "created": created,
                               "model": model.id, "choices": [], "usage": usage}),
            );
        }
        let mut frames: Vec<Bytes> = events
            .into_iter()
            .map(|e| Bytes::from(format!("data: {e}\n\n")))
            .collect();
        frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
        return stream_response(sim, frames, behaviour.token_interval_ms, None);
    }
    let mut answer = chunk(&tokens.concat(), Some(finish_reason));
    if !behaviour.no_usage {
        answer["usage"] = usage;
    }
    Json(answer).into_response()
}

async fn embeddings(State(sim): State<Sim>, headers: HeaderMap, bytes: Bytes) -> Response {
    let (body, model, _) = match sim.receive("/v1/embeddings", &headers, &bytes).await {
        Ok(x) => x,
        Err(e) => return e.into_response(),
    };
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
        // Token arrays: embed their decimal text, deterministically.
        Some(Value::Array(items)) => items.iter().map(|t| t.to_string()).collect(),
        _ => {
            return sim_error(
                StatusCode::BAD_REQUEST,
                "`input` must be a string or an array",
            )
            .into_response();
        }
    };
    let base64 = body.get("encoding_format").and_then(Value::as_str) == Some("base64");
    let mut tokens = 0;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            tokens += answer::word_count(text);
            let v = answer::embed(text);
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    Json(json!({
        "object": "list",
        "data": data,
        "model": model.id,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
    .into_response()
}

async fn stats(State(sim): State<Sim>) -> Json<Stats> {
    Json(Stats {
        requests: sim.0.total_requests.load(Ordering::Relaxed),
        active_streams: sim.0.active.load(Ordering::Relaxed),
        completed_streams: sim.0.completed.load(Ordering::Relaxed),
        cancelled_streams: sim.0.cancelled.load(Ordering::Relaxed),
    })
}

async fn requests(State(sim): State<Sim>) -> Json<Vec<Value>> {
    let log = sim
        .0
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    Json(log.iter().cloned().collect())
}

async fn set_behaviour(
    State(sim): State<Sim>,
    Path(id): Path<String>,
    Json(b): Json<Behaviour>,
) -> Response {
    if id != "*" && !sim.0.models.contains_key(id.as_str()) {
        return sim_error(StatusCode::NOT_FOUND, &format!("no model `{id}`")).into_response();
    }
    let mut map = sim
        .0
        .behaviour
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if id == "*" {
        map.clear(); // `*` sets every model, replacing earlier per-model settings
    }
    map.insert(id, b);
    Json(b).into_response()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `PUT /_sim/replies/{id}` `{"text": "..."}`: the model answers exactly this text from now on
/// (`{"text": null}` goes back to the usual answer).
async fn set_reply(
    State(sim): State<Sim>,
    axum::extract::Path(id): axum::extract::Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let mut replies = sim.0.replies.lock().unwrap_or_else(PoisonError::into_inner);
    match body.get("text").and_then(Value::as_str) {
        Some(t) => replies.insert(id, t.to_string()),
        None => replies.remove(&id),
    };
    http::StatusCode::NO_CONTENT.into_response()
}

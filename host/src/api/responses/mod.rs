//! `/v1/responses` — the OpenAI Responses API (the default of the Agents SDK, of the Vercel AI
//! SDK's `@ai-sdk/openai`, of `client.responses.create`), served over chat completions, which
//! every upstream speaks. [`create`] reads top to bottom:
//!
//! 1. the body checked (`convert::ResponsesRequest`: input items, function tools, `text.format`);
//! 2. the conversation so far rebuilt from the store when `previous_response_id` names a stored
//!    response of the caller's team (another team's id is 404);
//! 3. the conversation phases on the whole conversation (`pipeline::converse`: guardrail over every text —
//!    instructions, the chain, tool outputs — facts and routing, residency, budget, the upstream
//!    with fallback);
//! 4. the answer reshaped: output items and usage on a whole answer, or the typed event stream
//!    (`stream.rs`); with `store` (the default) the response and its turn's redacted messages are
//!    committed to the store **before** the answer (or `response.completed`) leaves, so a
//!    continuation sent the moment it arrives finds it.
//!
//! `GET /v1/responses/{id}`, `DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items`
//! read the caller's team's stored responses. Retention: `[responses] retention_hours`.

mod convert;
mod items;
mod stream;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::validate::ChatRequest;
use crate::access::Principal;
use crate::pipeline::answer::{Answer, Kind, Settle, answer_parts, sse_response};
use crate::pipeline::call::Call;
use crate::pipeline::converse::converse;
use crate::pipeline::guard::Shape;
use crate::pipeline::route;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::store::TeamId;
use crate::store::responses::StoredResponse;
use convert::ResponsesRequest;
use items::ItemIds;

/// Longest `previous_response_id` chain followed (each link is one store read).
const MAX_CHAIN: usize = 256;

pub async fn create(mut call: Call, body: Body) -> Result<Response, ApiError> {
    // 1. The request, checked against the Responses API's shapes (item references replaced by
    //    the stored items they name).
    let mut body = call.read_body(body).await?;
    resolve_references(&call, &mut body).await?;
    let request = ResponsesRequest::parse(body)?;
    call.identify(&request.body, request.body.get("input"));

    // 2. The conversation so far, from the caller's team's stored responses.
    let history = match &request.previous_response_id {
        Some(id) => chain(&call, id).await?,
        None => Vec::new(),
    };

    // 3. The chat phases on the whole conversation (guardrail, facts, route, budget, upstream).
    let mut chat = ChatRequest::parse(request.chat_body(history)?)?;
    chat.wants_usage = true;
    let turn_len = request.turn.len();
    let (routed, served) = converse(&call, &mut chat.body, chat.stream, Shape::Chat).await?;
    // This turn's messages and the instructions as the guardrail left them (redacted): what is
    // stored and shown.
    let messages = chat.body["messages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let turn = messages[messages.len().saturating_sub(turn_len)..].to_vec();
    let mut request = request;
    if request.instructions.is_some() {
        request.instructions = messages
            .first()
            .and_then(|m| m["content"].as_str())
            .map(str::to_string);
    }

    // 4. The answer, reshaped; stored before it leaves.
    // A stored answer's charge is queued and committed with the response (one transaction).
    let settle = if request.store {
        Settle::Queued
    } else {
        Settle::Durable
    };
    let (model, answered) =
        answer_parts(&call, served, request.stream, true, Kind::Chat, settle).await;
    let mut draft = Draft {
        id: format!("resp_{}", uuid::Uuid::now_v7().simple()),
        created_at: call.app.access().now_ms(),
        model: model.id.0.clone(),
        request,
        turn,
    };
    let response = match answered {
        Ok(Answer::Whole(answer)) => {
            let object = draft.finish(&answer);
            draft.store(&call, &object).await;
            Json(object).into_response()
        }
        Ok(Answer::Stream(body)) => sse_response(stream::events(call.clone(), draft, body)),
        Err(failed) => failed,
    };
    Ok(route::label(response, &routed, &model))
}

/// A response being made: what it needs to be finished, shaped and stored.
pub(super) struct Draft {
    id: String,
    created_at: i64,
    model: String,
    request: ResponsesRequest,
    turn: Vec<Value>,
}

impl Draft {
    /// The response object, with `status` `in_progress` and no output (the stream's first
    /// events), or finished by [`Draft::finish`] / [`Draft::with_output`].
    fn object(&self, status: &str, output: Vec<Value>, usage: Value) -> Value {
        let b = &self.request.body;
        let get = |k: &str, default: Value| {
            b.get(k)
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(default)
        };
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at / 1000,
            "status": status,
            "background": false,
            "error": null,
            "incomplete_details": if status == "incomplete" { json!({"reason": "max_output_tokens"}) } else { Value::Null },
            "instructions": self.request.instructions,
            "max_output_tokens": get("max_output_tokens", Value::Null),
            "metadata": get("metadata", json!({})),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": get("parallel_tool_calls", json!(true)),
            "previous_response_id": self.request.previous_response_id,
            "reasoning": {"effort": null, "summary": null},
            "store": self.request.store,
            "temperature": get("temperature", json!(1.0)),
            "text": get("text", json!({"format": {"type": "text"}})),
            "tool_choice": get("tool_choice", json!("auto")),
            "tools": get("tools", json!([])),
            "top_p": get("top_p", json!(1.0)),
            "truncation": "disabled",
            "usage": usage,
            "user": get("user", Value::Null),
        })
    }

    /// The finished response of a whole chat answer.
    fn finish(&self, answer: &Value) -> Value {
        let (output, status) = items::output_items(answer, &mut ItemIds::new(&self.id));
        self.object(status, output, items::usage(&answer["usage"]))
    }

    /// Commits the response when the request asked for it to be stored (the default): returns
    /// once it is committed, with the charge queued before it on the same queue (one transaction
    /// for everything finished meanwhile: `budget::Charger`). A failing store is retried there,
    /// and this waits: nothing is answered as stored that is not.
    async fn store(&mut self, call: &Call, object: &Value) {
        if !self.request.store {
            return;
        }
        call.app
            .budgets()
            .charger()
            .store_response(StoredResponse {
                id: self.id.clone(),
                team_id: TeamId(call.principal.team_id.clone()),
                key_id: call.principal.key_id.clone(),
                previous_id: self.request.previous_response_id.clone(),
                input: Value::Array(std::mem::take(&mut self.turn)),
                response: object.clone(),
                created_at: self.created_at,
            })
            .await;
    }
}

/// Most `item_reference` items resolved in one request.
const MAX_REFERENCES: usize = 256;

/// Replaces each `{"type": "item_reference", "id": …}` in `input` by the stored item it names (an
/// output or input item of one of the team's stored responses; item ids carry their response's
/// id). The Vercel AI SDK sends earlier turns so when `store` is on.
async fn resolve_references(
    call: &Call,
    body: &mut serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(Value::Array(items)) = body.get_mut("input") else {
        return Ok(());
    };
    let mut loaded: Vec<(String, Vec<Value>)> = Vec::new();
    let mut resolved = 0;
    for (i, item) in items.iter_mut().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("item_reference") {
            continue;
        }
        resolved += 1;
        if resolved > MAX_REFERENCES {
            return Err(ApiError::invalid(
                "input",
                format!("At most {MAX_REFERENCES} item references in one request."),
            ));
        }
        let at = format!("input[{i}].id");
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::invalid(&at, "An `item_reference` needs the item's `id`."))?
            .to_string();
        let response_id = items::response_of_item(&id).ok_or_else(|| {
            ApiError::invalid(&at, format!("`{id}` is not an item id of this gateway."))
        })?;
        if !loaded.iter().any(|(r, _)| *r == response_id) {
            let stored = call
                .app
                .stored_responses()
                .get(TeamId(call.principal.team_id.clone()), response_id.clone())
                .await?;
            let mut all = Vec::new();
            if let Some(stored) = stored {
                all.extend(items::input_items(
                    &stored.id,
                    stored.input.as_array().map_or(&[], Vec::as_slice),
                ));
                all.extend(
                    stored.response["output"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
            loaded.push((response_id.clone(), all));
        }
        let found = loaded
            .iter()
            .find(|(r, _)| *r == response_id)
            .and_then(|(_, all)| all.iter().find(|x| x["id"].as_str() == Some(id.as_str())))
            .cloned()
            .ok_or_else(|| {
                ApiError::new(
                    http::StatusCode::NOT_FOUND,
                    "invalid_request_error",
                    format!("Item with id '{id}' not found (items of stored responses of this team only)."),
                )
                .with_param(at.clone())
                .with_code("item_not_found")
            })?;
        *item = found;
    }
    Ok(())
}

/// The messages of a chain of stored responses ending at `id`, oldest first: each turn's input,
/// then its output.
async fn chain(call: &Call, id: &str) -> Result<Vec<Value>, ApiError> {
    let team = TeamId(call.principal.team_id.clone());
    let mut turns = Vec::new();
    let mut next = Some(id.to_string());
    while let Some(id) = next {
        if turns.len() == MAX_CHAIN {
            return Err(ApiError::invalid(
                "previous_response_id",
                format!("The conversation is longer than {MAX_CHAIN} responses; start a new one."),
            ));
        }
        let stored = call
            .app
            .stored_responses()
            .get(team.clone(), id.clone())
            .await?
            .ok_or_else(|| previous_not_found(&id))?;
        next = stored.previous_id.clone();
        turns.push(stored);
    }
    let mut messages = Vec::new();
    for t in turns.iter().rev() {
        messages.extend(t.input.as_array().cloned().unwrap_or_default());
        messages.extend(items::output_messages(
            t.response["output"].as_array().map_or(&[], Vec::as_slice),
        ));
    }
    Ok(messages)
}

fn previous_not_found(id: &str) -> ApiError {
    ApiError::new(
        http::StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!(
            "Previous response with id '{id}' not found (stored responses are kept for the gateway's retention period, within the team that made them)."
        ),
    )
    .with_param("previous_response_id")
    .with_code("previous_response_not_found")
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("Response with id '{id}' not found."))
}

async fn stored(
    app: &AppState,
    principal: &Principal,
    id: &str,
) -> Result<StoredResponse, ApiError> {
    app.stored_responses()
        .get(TeamId(principal.team_id.clone()), id.to_string())
        .await?
        .ok_or_else(|| not_found(id))
}

/// `GET /v1/responses/{id}`.
pub async fn get(
    State(app): State<AppState>,
    axum::Extension(principal): axum::Extension<std::sync::Arc<Principal>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(stored(&app, &principal, &id).await?.response))
}

/// `DELETE /v1/responses/{id}`.
pub async fn delete(
    State(app): State<AppState>,
    axum::Extension(principal): axum::Extension<std::sync::Arc<Principal>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let team = TeamId(principal.team_id.clone());
    if !app.stored_responses().delete(team, id.clone()).await? {
        return Err(not_found(&id));
    }
    Ok(Json(
        json!({"id": id, "object": "response.deleted", "deleted": true}),
    ))
}

/// `input_items`'s query: `limit`, `order`, `after`, `before`, and `include[]` (repeatable, read
/// and ignored: the items carry everything already).
#[derive(Debug, Default)]
struct ItemsQuery {
    limit: Option<usize>,
    order: Option<String>,
    after: Option<String>,
    before: Option<String>,
}

impl ItemsQuery {
    fn parse(raw: Option<&str>) -> Result<ItemsQuery, ApiError> {
        let mut q = ItemsQuery::default();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            match k.as_ref() {
                "limit" => {
                    q.limit = Some(v.parse().map_err(|_| {
                        ApiError::invalid("limit", "`limit` must be between 1 and 100.")
                    })?);
                }
                "order" => q.order = Some(v.into_owned()),
                "after" => q.after = Some(v.into_owned()),
                "before" => q.before = Some(v.into_owned()),
                "include" | "include[]" => {}
                other => {
                    return Err(ApiError::invalid(
                        "query",
                        format!(
                            "Unknown query parameter `{other}` (limit, order, after, before, include[])."
                        ),
                    ));
                }
            }
        }
        Ok(q)
    }
}

/// `GET /v1/responses/{id}/input_items`: this response's input items (its turn, after the
/// guardrail), `order` `desc` (default) or `asc`, `limit` 1–100 (default 20), `after`/`before`
/// an item id.
pub async fn input_items(
    State(app): State<AppState>,
    axum::Extension(principal): axum::Extension<std::sync::Arc<Principal>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q = ItemsQuery::parse(raw.as_deref())?;
    let limit = q.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            "`limit` must be between 1 and 100.",
        ));
    }
    let stored = stored(&app, &principal, &id).await?;
    let mut items = items::input_items(&id, stored.input.as_array().map_or(&[], Vec::as_slice));
    match q.order.as_deref() {
        None | Some("desc") => items.reverse(),
        Some("asc") => {}
        Some(_) => return Err(ApiError::invalid("order", "`order` is `asc` or `desc`.")),
    }
    let position = |cursor: &Option<String>, param: &str| -> Result<Option<usize>, ApiError> {
        match cursor {
            None => Ok(None),
            Some(c) => items
                .iter()
                .position(|i| i["id"].as_str() == Some(c))
                .map(Some)
                .ok_or_else(|| {
                    ApiError::invalid(param, format!("No input item `{c}` in this response."))
                }),
        }
    };
    let start = position(&q.after, "after")?.map_or(0, |p| p + 1);
    let end = position(&q.before, "before")?.unwrap_or(items.len());
    let window: Vec<Value> = items
        .get(start..end.max(start))
        .unwrap_or_default()
        .iter()
        .take(limit)
        .cloned()
        .collect();
    let has_more = start + window.len() < end;
    Ok(Json(json!({
        "object": "list",
        "data": window,
        "first_id": window.first().map(|i| i["id"].clone()),
        "last_id": window.last().map(|i| i["id"].clone()),
        "has_more": has_more,
    })))
}

/// Removes stored responses older than the retention (the gateway's upkeep calls it).
pub async fn purge(app: &AppState) {
    let keep = app.config().responses.retention;
    let before = app.access().now_ms() - i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
    match app.stored_responses().purge(before).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(purged = n, "stored responses past their retention removed"),
        Err(e) => tracing::warn!(error = %e, "purging stored responses failed"),
    }
}

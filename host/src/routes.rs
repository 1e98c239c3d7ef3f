//! The route table: every endpoint, the role group it belongs to, and the one middleware stack
//! (the pipeline's layers) every request passes through.

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
use http::StatusCode;

use crate::admin::{
    cert_identities, journal, keys, mcp as admin_mcp, policies, shapers, teams, traffic, usage,
    webhooks, worlds,
};
use crate::api::activity::transparency;
use crate::api::{
    activity, chat, completions, documents, embeddings, files, mcp, messages, models, rag,
    responses, vector_stores,
};
use crate::console;
use crate::domain::Role;
use crate::pipeline::{admission, audit, context, events, observe};
use crate::server::error::ApiError;
use crate::state::AppState;

/// The route table and the middleware stack (the pipeline's layers), outermost first:
/// 1. `request_context` — request id, `X-Sovereign-ID`/`X-Audit-Trace-ID` on every response,
///    request counters;
/// 2. `observe` — the request's audit slot, and its metrics once the answer is out (every
///    request, refusals included);
/// 3. `catch_panic` — a bug in a handler becomes a 500 in the error shape, not a dropped socket;
/// 4. `authenticate` — per-address rate limit, then the key (401), on everything except
///    `/healthz`, `/metrics` and the console's static files (`/console/…`);
/// 5. `audit::journal` — one activity-journal entry per authenticated request, durable before
///    the response completes. Inside `authenticate` (no entry without a valid key: those are
///    counted in metrics) and outside every other layer and handler, so refusals by later inner
///    layers (403, 429) and handlers (400, 404, 451, 5xx) all get their entry. New inner
///    layers go *above* it in the list of `route_layer` calls below;
/// 6. `admit` — the key's address allow-list (403), request rate and tokens per day (429);
/// 7. `require` — per route group, the key's role (403).
///
/// Body size and read-time limits are applied where bodies are read (`body::read_json_object`).
pub fn router(state: AppState) -> Router {
    // Route groups by who may call them (admin may call everything).
    let inference = Router::new()
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/completions", post(completions::completions))
        .route("/v1/messages", post(messages::create))
        .route(
            "/v1/messages/count_tokens",
            post(messages::count::count_tokens),
        )
        .route("/v1/responses", post(responses::create))
        .route(
            "/v1/responses/{id}",
            get(responses::get).delete(responses::delete),
        )
        .route(
            "/v1/responses/{id}/input_items",
            get(responses::input_items),
        )
        .route("/v1/embeddings", post(embeddings::embeddings))
        .route("/v1/documents/upload", post(documents::upload))
        .route("/v1/documents/{id}", delete(documents::delete))
        .route("/v1/documents/{id}/cancel", post(documents::cancel))
        .route("/v1/rag/query", post(rag::query))
        // The OpenAI files and vector-stores APIs over the same library (reads: `library`).
        .route("/v1/files", post(files::create))
        .route("/v1/files/{id}", delete(files::delete))
        .route("/v1/vector_stores", post(vector_stores::create))
        .route("/v1/vector_stores/{id}", delete(vector_stores::delete))
        .route("/v1/vector_stores/{id}/files", post(vector_stores::attach))
        .route(
            "/v1/vector_stores/{id}/files/{file_id}",
            delete(vector_stores::detach),
        )
        .route("/v1/vector_stores/{id}/search", post(vector_stores::search))
        .route(
            "/v1/vector_stores/{id}/file_batches",
            post(vector_stores::create_batch),
        )
        .route(
            "/v1/vector_stores/{id}/file_batches/{batch_id}/cancel",
            post(vector_stores::cancel_batch),
        )
        .route_layer(middleware::from_fn_with_state(
            state.events().clone(),
            events::events_persisted,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| admission::require(s, &[Role::Member], req, next),
        ));
    // The MCP door (issue 46): members' agents call their team's tools (docs/MCP.md).
    let tools = Router::new()
        .route("/mcp", post(mcp::post).get(mcp::get).delete(mcp::delete))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| admission::require(s, &[Role::Member], req, next),
        ));
    // The team's documents, files and vector stores: members (who upload them) and auditors
    // read them.
    let library = Router::new()
        .route("/v1/documents", get(documents::list))
        .route("/v1/documents/{id}", get(documents::get))
        .route("/v1/files", get(files::list))
        .route("/v1/files/{id}", get(files::get))
        .route("/v1/vector_stores", get(vector_stores::list))
        .route("/v1/vector_stores/{id}", get(vector_stores::get))
        .route(
            "/v1/vector_stores/{id}/files",
            get(vector_stores::list_files),
        )
        .route(
            "/v1/vector_stores/{id}/files/{file_id}",
            get(vector_stores::get_file),
        )
        .route(
            "/v1/vector_stores/{id}/file_batches/{batch_id}",
            get(vector_stores::get_batch),
        )
        .route(
            "/v1/vector_stores/{id}/file_batches/{batch_id}/files",
            get(vector_stores::list_batch_files),
        )
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| admission::require(s, &[Role::Member, Role::Auditor], req, next),
        ));
    let catalog = Router::new()
        .route("/v1/models", get(models::list_models))
        .route("/v1/models/{id}", get(models::get_model));
    let reading = Router::new()
        .route("/v1/admin/usage", get(usage::usage))
        // This replica's recent model traffic and the models' health (no team's data in it).
        .route("/v1/admin/traffic", get(traffic::traffic))
        .route("/v1/admin/models", get(traffic::models))
        // The journal's read API (an auditor sees its own team only: checked in the handler).
        .route("/v1/activity/logs", post(activity::logs))
        // The journal as a transparency log: signed tree heads, inclusion and consistency
        // proofs (an auditor proves its own team's entries only: checked in the handler).
        .route("/v1/activity/checkpoint", get(transparency::checkpoint))
        .route("/v1/activity/checkpoint/key", get(transparency::key))
        .route("/v1/activity/proof", get(transparency::proof))
        .route("/v1/activity/consistency", get(transparency::consistency))
        // Signed checkpoints of this replica's chain, for verifying an export off the host.
        .route(
            "/v1/admin/journal/checkpoints",
            get(journal::checkpoints).post(journal::checkpoint),
        )
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| admission::require(s, &[Role::Auditor], req, next),
        ));
    let admin = Router::new()
        .route(
            "/v1/admin/policies",
            get(policies::list).post(policies::upload),
        )
        .route("/v1/admin/policies/{id}/activate", post(policies::activate))
        .route("/v1/admin/teams", get(teams::list).post(teams::create))
        .route(
            "/v1/admin/teams/{id}",
            get(teams::get).patch(teams::update).delete(teams::delete),
        )
        .route("/v1/admin/keys", get(keys::list).post(keys::create))
        .route("/v1/admin/keys/{id}", get(keys::get).patch(keys::update))
        .route("/v1/admin/keys/{id}/rotate", post(keys::rotate))
        .route("/v1/admin/keys/{id}/revoke", post(keys::revoke))
        .route(
            "/v1/admin/cert-identities",
            get(cert_identities::list).post(cert_identities::create),
        )
        .route(
            "/v1/admin/cert-identities/{id}",
            get(cert_identities::get).delete(cert_identities::delete),
        )
        .route("/v1/admin/journal/verify", get(journal::verify))
        .route(
            "/v1/admin/mcp/servers",
            get(admin_mcp::list).post(admin_mcp::create),
        )
        .route(
            "/v1/admin/mcp/servers/{name}",
            get(admin_mcp::get)
                .patch(admin_mcp::edit)
                .delete(admin_mcp::delete),
        )
        .route(
            "/v1/admin/mcp/keys/{id}",
            get(admin_mcp::get_key)
                .put(admin_mcp::put_key)
                .delete(admin_mcp::delete_key),
        )
        .route(
            "/v1/admin/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route(
            "/v1/admin/webhooks/{id}",
            get(webhooks::get).delete(webhooks::delete),
        )
        .route("/v1/admin/webhooks/{id}/test", post(webhooks::test))
        .route("/v1/admin/webhooks/{id}/rotate", post(webhooks::rotate))
        .route(
            "/v1/admin/webhooks/{id}/deliveries",
            get(webhooks::deliveries),
        )
        .route(
            "/v1/admin/webhooks/{id}/deliveries/redrive",
            post(webhooks::redrive),
        )
        .route(
            "/v1/admin/guardrail",
            get(policies::guardrail_get).post(policies::guardrail_swap),
        )
        .route(
            "/v1/admin/tool-policy",
            get(worlds::tool_get).post(worlds::tool_swap),
        )
        .route(
            "/v1/admin/retrieval-policy",
            get(worlds::retrieval_get).post(worlds::retrieval_swap),
        )
        .route(
            "/v1/admin/webhook-shapers",
            get(shapers::list).post(shapers::put),
        )
        .route("/v1/admin/webhook-shapers/{name}", get(shapers::get))
        .route(
            "/v1/admin/webhook-shapers/{name}/shape",
            post(shapers::try_shape),
        )
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            |s, req, next| admission::require(s, &[], req, next),
        ));
    let authenticated = Router::new()
        .merge(inference)
        .merge(tools)
        .merge(library)
        .merge(catalog)
        .merge(reading)
        .merge(admin)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            admission::admit,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            audit::journal,
        ))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            admission::authenticate,
        ));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        // The console's static files: public code (no key), the data comes from the API.
        .route("/console", get(console::redirect))
        .route("/console/", get(console::index))
        .route("/console/{*path}", get(console::asset))
        .merge(authenticated)
        // The public routes too (`POST /healthz`): a 405 in the error shape, never a bare one.
        .method_not_allowed_fallback(method_not_allowed)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            context::panic_response,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            observe::observe,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            context::request_context,
        ))
        // Outermost: every answer on the Messages routes, refusals of the layers included, in
        // the Anthropic error shape with its `request-id` header.
        .layer(middleware::from_fn(messages::errors::anthropic_errors))
        .with_state(state)
}

async fn metrics(State(app): State<AppState>) -> impl IntoResponse {
    (
        [(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics().render(crate::rag::engine::metric_families()),
    )
}

async fn not_found(req: Request) -> ApiError {
    ApiError::not_found(format!("Unknown path `{}`.", req.uri().path()))
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!(
            "Method {} is not allowed on `{}`.",
            req.method(),
            req.uri().path()
        ),
    )
}

//! [`Call`]: one inference request as the phases see it — the one per-request context they
//! share (the state, the request id, the authenticated principal, the journal's audit slot, the
//! actor). Handlers extract it, then pass it to each phase in order (`guard`, `route`, `spend`,
//! `fallback`, `events`); a phase knows its own step and nothing of the endpoint.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::FromRequestParts;
use http::HeaderMap;
use http::request::Parts;
use serde_json::{Map, Value};

use super::RequestCtx;
use super::audit::Audit;
use super::audit::X_ACTOR_ID;
use crate::access::Principal;
use crate::auth::AuthError;
use crate::domain::ModelId;
use crate::facts::PromptSize;
use crate::residency::Boundary;
use crate::server::body;
use crate::server::error::ApiError;
use crate::state::AppState;
use crate::upstream::Usage;

/// The per-request context of an inference request. Cheap to clone (handles and `Arc`s), so a
/// stream's end can carry it.
#[derive(Clone)]
pub struct Call {
    pub app: AppState,
    pub ctx: RequestCtx,
    pub principal: Arc<Principal>,
    /// What the journal entry records, filled in as the phases learn it.
    pub audit: Audit,
    pub headers: Arc<HeaderMap>,
    /// Who the request is for: the body's `user`, else `X-Actor-ID`, else the key (set by
    /// [`Call::identify`]).
    pub actor: String,
    /// The prompt as the gateway counted it, set by an endpoint whose billed prompts teach
    /// `count_tokens`'s ratios (the Messages API): the answer phases hand it to
    /// [`Call::learn_ratio`] with the upstream's usage.
    pub prompt_size: Option<PromptSize>,
}

impl Call {
    /// A call made later on behalf of an earlier request (the ingestion queue's worker): that
    /// request's id, its principal and actor; no headers, nothing to journal.
    pub fn on_behalf(app: AppState, request_id: &str, principal: Principal, actor: String) -> Call {
        Call {
            app,
            ctx: RequestCtx {
                id: request_id.into(),
                started: tokio::time::Instant::now(),
                operation: None,
                trace: None,
            },
            principal: Arc::new(principal),
            audit: Audit::default(),
            headers: Arc::new(HeaderMap::new()),
            actor,
            prompt_size: None,
        }
    }
}

impl FromRequestParts<AppState> for Call {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Call, ApiError> {
        let (Some(ctx), Some(principal)) = (
            parts.extensions.get::<RequestCtx>().cloned(),
            parts.extensions.get::<Arc<Principal>>().cloned(),
        ) else {
            // Only a route outside the authenticated stack gets here.
            return Err(ApiError::from(AuthError::Missing));
        };
        let audit = parts.extensions.get::<Audit>().cloned().unwrap_or_default();
        let actor = principal.key_id.clone();
        Ok(Call {
            app: app.clone(),
            ctx,
            principal,
            audit,
            headers: Arc::new(parts.headers.clone()),
            actor,
            prompt_size: None,
        })
    }
}

impl Call {
    /// The body as a JSON object: content type, size and read-time limits (400/413/415).
    pub async fn read_body(&self, body: Body) -> Result<Map<String, Value>, ApiError> {
        body::read_json_object(&self.headers, body, &self.app.config().server).await
    }

    /// Who the request is for (the actor) and the hash of what it asks (`prompt`, never the text
    /// itself), both for the journal entry.
    pub fn identify(&mut self, body: &Map<String, Value>, prompt: Option<&Value>) {
        self.audit.prompt(prompt);
        self.actor = actor(body, &self.headers, &self.principal);
        self.audit.actor(&self.actor);
    }

    /// The residency boundary of this request: the key's regions and models, and local models
    /// only when it is `sensitive` (or the key says always).
    pub fn boundary(&self, sensitive: bool) -> Boundary<'_> {
        Boundary {
            allowed_regions: &self.principal.allowed_regions,
            allowed_models: &self.principal.allowed_models,
            sensitive: sensitive || self.principal.sensitive_only,
        }
    }

    /// `model` was billed `usage` for this call's prompt: the ratio `count_tokens` estimates
    /// with learns from it (when the endpoint counted the prompt, and the upstream reported).
    pub fn learn_ratio(&self, model: &ModelId, usage: Option<Usage>) {
        if let (Some(size), Some(usage)) = (&self.prompt_size, usage) {
            self.app
                .facts()
                .ratios()
                .observe(&model.0, size, usage.prompt_tokens);
        }
    }

    /// Counts `text` with the gateway's tokenizer (when an upstream reports no usage).
    pub fn count_tokens(&self, text: &str) -> u64 {
        u64::from(self.app.facts().tokens().count(text))
    }
}

/// Who the request is for: the body's `user`, else the `X-Actor-ID` header, else the key.
fn actor(body: &Map<String, Value>, headers: &HeaderMap, principal: &Principal) -> String {
    let from_body = body.get("user").and_then(Value::as_str);
    let from_header = headers.get(X_ACTOR_ID).and_then(|v| v.to_str().ok());
    match from_body.or(from_header).map(str::trim) {
        Some(a) if !a.is_empty() => a.chars().take(256).collect(),
        _ => principal.key_id.clone(),
    }
}

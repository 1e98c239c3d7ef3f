//! `[[models]]` and `default_model`: the upstream models (id, family, kind, languages, region,
//! base URL, prices, timeouts, fallbacks), each checked with its index in the path.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use url::Url;

use super::health;
use crate::domain::{
    AUTO_ROUTER, MessagesApi, ModelConfig, ModelId, ModelKind, Tokenize, UpstreamTimeouts,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    id: String,
    #[serde(default)]
    upstream_model: Option<String>,
    family: String,
    kind: ModelKind,
    #[serde(default)]
    languages: Vec<String>,
    region: String,
    #[serde(default)]
    local: bool,
    base_url: String,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    input_cost_per_mtok: f64,
    #[serde(default)]
    output_cost_per_mtok: f64,
    #[serde(default = "default_context_window")]
    context_window: u32,
    #[serde(default = "default_connect_timeout_ms")]
    connect_timeout_ms: u64,
    #[serde(default = "default_first_byte_timeout_ms")]
    first_byte_timeout_ms: u64,
    #[serde(default = "default_total_timeout_ms")]
    total_timeout_ms: u64,
    #[serde(default = "default_stream_idle_timeout_ms")]
    stream_idle_timeout_ms: u64,
    /// Models to try, in order, when this one fails before answering.
    #[serde(default)]
    fallbacks: Vec<String>,
    /// An `https` upstream's CA bundle and optional client certificate.
    #[serde(default)]
    tls: Option<super::tls::RawClientTls>,
    /// How `count_tokens` counts this model's prompts: `estimate` (default), `vllm`,
    /// `llama.cpp`.
    #[serde(default)]
    tokenize: Option<String>,
    /// `"native"`: Messages requests go to the upstream's own `/v1/messages`.
    #[serde(default)]
    messages: MessagesApi,
}

fn default_context_window() -> u32 {
    8192
}
fn default_connect_timeout_ms() -> u64 {
    2_000
}
fn default_first_byte_timeout_ms() -> u64 {
    60_000
}
fn default_total_timeout_ms() -> u64 {
    600_000
}
fn default_stream_idle_timeout_ms() -> u64 {
    60_000
}

/// Every model's `fallbacks`, checked against the other models (`health::check_fallbacks`).
pub(super) fn check_fallbacks(models: &[RawModel], err: &mut impl FnMut(String, &str)) {
    let kinds: HashMap<&str, ModelKind> = models.iter().map(|m| (m.id.as_str(), m.kind)).collect();
    for (i, m) in models.iter().enumerate() {
        health::check_fallbacks(i, &m.id, m.kind, &m.fallbacks, &kinds, err);
    }
}

/// The valid models, and every id seen (first index of each), valid model or not.
pub(super) fn validate(
    raw: Vec<RawModel>,
    base: &std::path::Path,
    err: &mut impl FnMut(String, &str),
) -> (Vec<Arc<ModelConfig>>, HashMap<String, usize>) {
    let mut models = Vec::new();
    let mut seen = HashMap::new();
    for (i, m) in raw.into_iter().enumerate() {
        let p = format!("models[{i}]");
        if let Err(e) = super::names::check_model_id(&m.id) {
            err(format!("{p}.id"), &e);
        } else if m.id == AUTO_ROUTER {
            err(format!("{p}.id"), "`auto-router` is reserved");
        } else if let Some(j) = seen.insert(m.id.clone(), i) {
            err(format!("{p}.id"), &format!("duplicate of models[{j}].id"));
        }
        if m.family.trim().is_empty() {
            err(format!("{p}.family"), "must not be empty");
        }
        if let Err(e) = super::names::check_region(&m.region) {
            err(format!("{p}.region"), &e);
        }
        for (j, l) in m.languages.iter().enumerate() {
            if !is_language_code(l) {
                err(
                    format!("{p}.languages[{j}]"),
                    "must be a lower-case ISO 639-1 code such as `ar`",
                );
            }
        }
        let base_url = match Url::parse(&m.base_url) {
            // Credentials in the URL would not be sent: the key goes in `api_key_env`.
            Ok(u) if !u.username().is_empty() || u.password().is_some() => {
                err(
                    format!("{p}.base_url"),
                    "must not carry credentials (user:password@); set the key with api_key_env",
                );
                None
            }
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                Some(with_trailing_slash(u))
            }
            _ => {
                err(
                    format!("{p}.base_url"),
                    "must be an http(s) URL such as http://127.0.0.1:8000/v1",
                );
                None
            }
        };
        for (name, v) in [
            ("input_cost_per_mtok", m.input_cost_per_mtok),
            ("output_cost_per_mtok", m.output_cost_per_mtok),
        ] {
            if !v.is_finite() || v < 0.0 {
                err(format!("{p}.{name}"), "must be a non-negative number");
            }
        }
        for (name, v) in [
            ("connect_timeout_ms", m.connect_timeout_ms),
            ("first_byte_timeout_ms", m.first_byte_timeout_ms),
            ("total_timeout_ms", m.total_timeout_ms),
            ("stream_idle_timeout_ms", m.stream_idle_timeout_ms),
        ] {
            if v == 0 {
                err(format!("{p}.{name}"), "must be at least 1");
            }
        }
        if let Some(env) = &m.api_key_env
            && env.trim().is_empty()
        {
            err(
                format!("{p}.api_key_env"),
                "must name an environment variable",
            );
        }
        let tokenize = match m.tokenize.as_deref().map(Tokenize::parse) {
            None => Tokenize::default(),
            Some(Some(t)) => t,
            Some(None) => {
                err(
                    format!("{p}.tokenize"),
                    &format!("must be one of {}", Tokenize::NAMES.join(", ")),
                );
                Tokenize::default()
            }
        };
        if m.messages == MessagesApi::Native && m.kind != ModelKind::Chat {
            err(
                format!("{p}.messages"),
                "`native` is for chat models (the Messages API generates text)",
            );
        }
        let tls = m
            .tls
            .and_then(|t| super::tls::validate_client(t, &format!("{p}.tls"), base, err));
        if let Some(base_url) = base_url {
            models.push(Arc::new(ModelConfig {
                upstream_model: m.upstream_model.unwrap_or_else(|| m.id.clone()),
                id: ModelId(m.id),
                family: m.family,
                kind: m.kind,
                languages: m.languages,
                region: m.region,
                local: m.local,
                base_url,
                api_key_env: m.api_key_env,
                input_cost_per_mtok: m.input_cost_per_mtok,
                output_cost_per_mtok: m.output_cost_per_mtok,
                context_window: m.context_window,
                timeouts: UpstreamTimeouts {
                    connect: Duration::from_millis(m.connect_timeout_ms),
                    first_byte: Duration::from_millis(m.first_byte_timeout_ms),
                    total: Duration::from_millis(m.total_timeout_ms),
                    stream_idle: Duration::from_millis(m.stream_idle_timeout_ms),
                },
                fallbacks: m.fallbacks.into_iter().map(ModelId).collect(),
                tls,
                tokenize,
                messages: m.messages,
            }));
        }
    }
    (models, seen)
}

/// `default_model` names a configured chat model (a model already reported invalid is not
/// reported again).
pub(super) fn check_default_model(
    default_model: &str,
    models: &[Arc<ModelConfig>],
    seen: &HashMap<String, usize>,
    err: &mut impl FnMut(String, &str),
) {
    match models.iter().find(|m| m.id.0 == default_model) {
        Some(m) if m.kind != ModelKind::Chat => {
            err("default_model".into(), "must name a chat model");
        }
        Some(_) => {}
        None if seen.contains_key(default_model) => {}
        None => err(
            "default_model".into(),
            &format!("`{default_model}` is not one of the configured models"),
        ),
    }
}

fn is_language_code(l: &str) -> bool {
    l.len() == 2 && l.bytes().all(|b| b.is_ascii_lowercase())
}

/// `Url::join` treats a base without a trailing slash as a file and drops its last segment.
fn with_trailing_slash(mut u: Url) -> Url {
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    u
}

//! The models the gateway serves, as the domain names them: a model's id ([`ModelId`], and the
//! reserved [`AUTO_ROUTER`]), its kind, its upstream and prices ([`ModelConfig`]) and its
//! timeouts. `crate::config` builds them from `[[models]]`; routing, the pipeline, the upstream
//! client and the library read them.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use url::Url;

/// Model id a client may send to let the gateway choose the model.
pub const AUTO_ROUTER: &str = "auto-router";

/// A model id as clients name it (newtype so ids are not mixed with other strings).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(pub String);

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    Chat,
    Embedding,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Chat => "chat",
            ModelKind::Embedding => "embedding",
        }
    }
}

/// How a model's upstream takes an Anthropic Messages request (`/v1/messages`; issue 45,
/// docs/MESSAGES.md): translated to a chat completion (every OpenAI-compatible server), or passed
/// through to the upstream's own `/v1/messages` (vLLM, Ollama ≥ 0.14, llama.cpp server, SGLang).
/// Chat, completions and embeddings requests go to the OpenAI endpoints either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessagesApi {
    #[default]
    Translate,
    Native,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub id: ModelId,
    /// The name the upstream server knows the model by.
    pub upstream_model: String,
    pub family: String,
    pub kind: ModelKind,
    pub languages: Vec<String>,
    pub region: String,
    pub local: bool,
    /// Base URL of an OpenAI-compatible server, ending in `/` (e.g. `http://host:8000/v1/`).
    pub base_url: Url,
    /// Name of the environment variable holding the upstream's API key.
    pub api_key_env: Option<String>,
    pub input_cost_per_mtok: f64,
    pub output_cost_per_mtok: f64,
    pub context_window: u32,
    pub timeouts: UpstreamTimeouts,
    /// Models to try, in order, when this one fails before answering (each exists, is of the
    /// same kind and is not this model).
    pub fallbacks: Vec<ModelId>,
    /// The private CA bundle (and client certificate) for an `https` base URL; `None`: the
    /// system's trust store.
    pub tls: Option<crate::tls::ClientSpec>,
    /// How `count_tokens` counts a prompt for this model (`tokenize` in the config).
    pub tokenize: Tokenize,
    /// How a Messages request reaches the upstream (`messages = "native"` in the config).
    pub messages: MessagesApi,
}

/// How the deployment counts a prompt's tokens for `POST /v1/messages/count_tokens`
/// (docs/MESSAGES.md, "Counting tokens"): the server's own tokenizer and chat template, or the
/// gateway's estimate that errs high.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tokenize {
    /// The gateway's o200k count scaled by the ratio learned for the model.
    #[default]
    Estimate,
    /// vLLM's `POST /tokenize` with the chat body (`count` of the templated prompt).
    Vllm,
    /// llama.cpp server's `POST /apply-template`, then `POST /tokenize` on the prompt.
    LlamaCpp,
}

impl Tokenize {
    /// The config file's names for it.
    pub const NAMES: [&str; 3] = ["estimate", "vllm", "llama.cpp"];

    pub fn parse(s: &str) -> Option<Tokenize> {
        match s {
            "estimate" => Some(Tokenize::Estimate),
            "vllm" => Some(Tokenize::Vllm),
            "llama.cpp" => Some(Tokenize::LlamaCpp),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct UpstreamTimeouts {
    pub connect: Duration,
    /// Until the upstream's response headers arrive.
    pub first_byte: Duration,
    /// Whole exchange, non-streaming and streaming alike.
    pub total: Duration,
    /// Longest silence between two streamed chunks.
    pub stream_idle: Duration,
}

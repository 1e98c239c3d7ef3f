//! A deployment's own tokenizer, for `POST /v1/messages/count_tokens` (docs/MESSAGES.md,
//! "Counting tokens"): the prompt counted by the server that will read it, with its chat
//! template and generation prompt, from the chat body the chat path sends.
//!
//! - vLLM: `POST /tokenize` with `{"model", "messages", "tools", "add_generation_prompt": true}`
//!   answers `{"count", …}`.
//! - llama.cpp server: `POST /apply-template` with the same messages and tools answers
//!   `{"prompt"}`; `POST /tokenize` with `{"content": prompt, "add_special": true}` answers
//!   `{"tokens": […]}`.
//!
//! Both live on the server's root, beside `/v1`: the base URL without its trailing `v1/`.

use http::Uri;
use serde::Serialize;
use serde_json::{Map, Value};
use url::Url;

use super::{Endpoint, Outbound, UpstreamError, Upstreams};
use crate::domain::{ModelConfig, Tokenize};

/// Longest tokenizer answer read (vLLM lists every token id: 8 bytes or so each).
const MAX_TOKENIZE_BYTES: usize = 64 * 1024 * 1024;

/// `path` on the server's root: the base URL without a trailing `v1/` (`http://h:8000/v1/` →
/// `http://h:8000/tokenize`; a prefix before it is kept).
pub(super) fn server_uri(base: &Url, path: &str) -> anyhow::Result<Uri> {
    let mut root = base.clone();
    if let Some(prefix) = base.path().strip_suffix("v1/") {
        root.set_path(prefix);
    }
    Ok(root.join(path)?.as_str().parse::<Uri>()?)
}

/// What the chat template reads: the messages and tools as the chat path sends them.
#[derive(Serialize)]
struct TemplateInput<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    messages: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    add_generation_prompt: Option<bool>,
}

impl Upstreams {
    /// The tokens of the prompt the chat body `chat` becomes on `model`'s server, counted by
    /// the server as its `tokenize` setting says. A model set to `estimate` has no tokenizer to
    /// ask: a `Protocol` error.
    pub async fn count_prompt(
        &self,
        model: &ModelConfig,
        chat: &Map<String, Value>,
    ) -> Result<u64, UpstreamError> {
        let empty = Value::Array(Vec::new());
        let messages = chat.get("messages").unwrap_or(&empty);
        let tools = chat.get("tools").filter(|t| !t.is_null());
        match model.tokenize {
            Tokenize::Vllm => {
                let input = TemplateInput {
                    model: Some(&model.upstream_model),
                    messages,
                    tools,
                    add_generation_prompt: Some(true),
                };
                let answer = self.call(model, Endpoint::Tokenize, &input).await?;
                answer
                    .get("count")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| protocol(model, "the /tokenize answer has no `count`"))
            }
            Tokenize::LlamaCpp => {
                let input = TemplateInput {
                    model: None,
                    messages,
                    tools,
                    add_generation_prompt: None,
                };
                let templated = self.call(model, Endpoint::ApplyTemplate, &input).await?;
                let prompt = templated
                    .get("prompt")
                    .and_then(Value::as_str)
                    .ok_or_else(|| protocol(model, "the /apply-template answer has no `prompt`"))?;
                let body = serde_json::json!({"content": prompt, "add_special": true, "parse_special": true});
                let tokens = self.call(model, Endpoint::Tokenize, &body).await?;
                tokens
                    .get("tokens")
                    .and_then(Value::as_array)
                    .map(|t| t.len() as u64)
                    .ok_or_else(|| protocol(model, "the /tokenize answer has no `tokens`"))
            }
            Tokenize::Estimate => Err(protocol(model, "no tokenizer is configured")),
        }
    }

    /// One tokenizer call: POSTed, its whole JSON answer read within the model's deadlines.
    async fn call(
        &self,
        model: &ModelConfig,
        endpoint: Endpoint,
        body: &impl Serialize,
    ) -> Result<Value, UpstreamError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| protocol(model, &format!("the request is not JSON ({e})")))?;
        let exchange = self
            .post(model, Outbound::new(endpoint, bytes.into()), None)
            .await?;
        let body = super::read_limited(
            &model.id,
            exchange.response.into_body(),
            MAX_TOKENIZE_BYTES,
            exchange.deadline,
        )
        .await?;
        serde_json::from_slice(&body)
            .map_err(|e| protocol(model, &format!("the tokenizer's answer is not JSON ({e})")))
    }
}

fn protocol(model: &ModelConfig, detail: &str) -> UpstreamError {
    UpstreamError::Protocol {
        model: model.id.clone(),
        detail: detail.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tokenizer_is_on_the_servers_root_beside_v1() {
        let at = |base: &str, path: &str| {
            server_uri(&Url::parse(base).unwrap(), path)
                .unwrap()
                .to_string()
        };
        assert_eq!(
            at("http://h:8000/v1/", "tokenize"),
            "http://h:8000/tokenize"
        );
        assert_eq!(
            at("http://h/vllm/v1/", "apply-template"),
            "http://h/vllm/apply-template"
        );
        // No `v1` to strip: beside the base path.
        assert_eq!(at("http://h/llm/", "tokenize"), "http://h/llm/tokenize");
    }
}

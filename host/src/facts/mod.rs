//! Request facts (step 4 of the chat request path): what the router and the policies learn about a
//! validated chat request without seeing the prompt — the requested model, the prompt's language
//! and token count, the routing profile, the data classification, `stream`.
//!
//! [`FactsEngine`] holds what is expensive to build (the language models, the tokenizer): build it
//! once at start-up, share it, and call [`FactsEngine::extract`] per request.

mod hints;
mod language;
mod ratio;
mod tokens;

use serde_json::{Map, Value};

use crate::config::Config;
use crate::domain::ModelKind;
use crate::policy::RouteFacts;

pub use hints::{CLASSIFICATION_HEADER, GATEWAY_FIELDS, Profile};
pub use language::{LanguageDetector, MAX_DETECT_CHARS, UNDETERMINED, supported_languages};
pub use ratio::{PromptSize, TokenRatios};
pub use tokens::TokenCounter;

/// A request's facts, in the types of the WIT `request-facts` they fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The body's `model`: an id or `auto-router`.
    pub requested_model: String,
    /// ISO 639-1 code of the last user message's language, or [`UNDETERMINED`].
    pub language: &'static str,
    /// Prompt size (o200k_base tokens, with the chat format's overhead): exact for o200k models,
    /// an estimate for the others.
    pub prompt_tokens: u32,
    pub profile: Option<Profile>,
    /// Lower-cased label, e.g. `confidential`.
    pub classification: Option<String>,
    pub stream: bool,
}

impl Facts {
    /// The router's facts: `ids` carries what the host knows about the caller (request, team,
    /// key, actor ids, allowed regions, labels); the fields this module owns are filled in.
    pub fn route_facts(&self, ids: RouteFacts) -> RouteFacts {
        RouteFacts {
            requested_model: self.requested_model.clone(),
            language: self.language.to_string(),
            prompt_tokens: self.prompt_tokens,
            profile: self.profile.map(|p| p.as_str().to_string()),
            classification: self.classification.clone(),
            stream: self.stream,
            ..ids
        }
    }
}

/// A request whose hints are wrong: a 400 `invalid_request_error` naming [`FactsError::param`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactsError {
    #[error("{message}")]
    Invalid { param: String, message: String },
}

impl FactsError {
    fn invalid(param: &str, message: impl Into<String>) -> FactsError {
        FactsError::Invalid {
            param: param.to_string(),
            message: message.into(),
        }
    }

    /// The offending parameter (`routing.profile`, `routing_preference`, `routing`,
    /// `routing.classification`, `X-Data-Classification`).
    pub fn param(&self) -> &str {
        match self {
            FactsError::Invalid { param, .. } => param,
        }
    }
}

/// Building the engine failed (start-up only).
#[derive(Debug, thiserror::Error)]
pub enum FactsInitError {
    #[error("building the o200k_base tokenizer: {0}")]
    Tokenizer(String),
}

/// The language detector and the tokenizer, built once.
#[derive(Debug)]
pub struct FactsEngine {
    detector: LanguageDetector,
    tokens: std::sync::Arc<TokenCounter>,
    /// Only a router reads the language; without one, detection (most of this step's cost) is
    /// skipped and the language is [`UNDETERMINED`].
    detect_language: bool,
    ratios: TokenRatios,
}

impl FactsEngine {
    /// Reports the languages that the configured chat models list. Takes ~0.2 s (tokenizer
    /// table, language models): call it at start-up, off the request path.
    pub fn new(config: &Config) -> Result<FactsEngine, FactsInitError> {
        let languages = config
            .models
            .iter()
            .filter(|m| m.kind == ModelKind::Chat)
            .flat_map(|m| m.languages.iter().map(String::as_str));
        let mut engine = Self::with_languages(languages)?;
        engine.detect_language = config.routing.is_some();
        Ok(engine)
    }

    /// Reports the given languages (ISO 639-1 codes) that the detector supports.
    pub fn with_languages<'a>(
        languages: impl IntoIterator<Item = &'a str>,
    ) -> Result<FactsEngine, FactsInitError> {
        Ok(FactsEngine {
            detector: LanguageDetector::new(languages),
            tokens: std::sync::Arc::new(TokenCounter::new()?),
            detect_language: true,
            ratios: TokenRatios::default(),
        })
    }

    pub fn detector(&self) -> &LanguageDetector {
        &self.detector
    }

    pub fn tokens(&self) -> &TokenCounter {
        &self.tokens
    }

    /// The per-model ratios `count_tokens` estimates with, learned from billed prompts.
    pub fn ratios(&self) -> &TokenRatios {
        &self.ratios
    }

    /// A chat body as `count_tokens` estimates it (the facts' count, by script, with tools).
    pub fn prompt_size(&self, chat: &Map<String, Value>) -> PromptSize {
        PromptSize::of(&self.tokens, chat)
    }

    /// The tokenizer, shared (the document chunker counts with it on blocking threads).
    pub fn shared_tokens(&self) -> std::sync::Arc<TokenCounter> {
        std::sync::Arc::clone(&self.tokens)
    }

    /// The facts of a chat body that passed `api::validate::ChatRequest::parse`.
    /// `classification_header` is the raw `X-Data-Classification` value, if sent.
    ///
    /// Cost: a few µs of hints, ~1.5 µs per 50 bytes of message text for the token count
    /// (~30 µs per KiB), and one language detection over at most [`MAX_DETECT_CHARS`]
    /// characters. A multi-megabyte prompt takes tens of milliseconds to count: callers may run
    /// large bodies on a blocking thread.
    pub fn extract(
        &self,
        body: &Map<String, Value>,
        classification_header: Option<&[u8]>,
    ) -> Result<Facts, FactsError> {
        let profile = hints::profile(body)?;
        let classification = hints::classification(body, classification_header)?;
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let requested_model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Only the router reads the language: a request naming its model skips the detector,
        // which is most of this step's cost (~60 µs of ~70).
        let routed = requested_model == crate::domain::AUTO_ROUTER;
        let language = match user_text(messages) {
            Some(text) if self.detect_language && routed => self.detector.detect(&text),
            _ => UNDETERMINED,
        };
        Ok(Facts {
            requested_model: requested_model.to_string(),
            language,
            prompt_tokens: self.tokens.count_messages(messages),
            profile,
            classification,
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// Removes the fields the gateway reads for itself ([`GATEWAY_FIELDS`]) before a body goes
/// upstream; model servers reject or ignore unknown fields unpredictably.
pub fn strip_gateway_fields(body: &mut Map<String, Value>) {
    for f in GATEWAY_FIELDS {
        body.shift_remove(*f);
    }
}

/// The text language detection reads: the last user message that has any letters (its string
/// content, or its text parts joined by newlines), newest first. System prompts and assistant
/// turns are not read: they are often boilerplate in another language than the user's; for the
/// same reason neither are text parts that are wholly an agent's `<system-reminder>` (Claude Code
/// puts one, in English, ahead of the user's prompt in the same message).
/// Only the first few hundred bytes of each message are taken.
fn user_text(messages: &[Value]) -> Option<String> {
    const MAX_BYTES: usize = MAX_DETECT_CHARS * 4;
    for m in messages.iter().rev() {
        if m.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        let mut text = String::new();
        match m.get("content") {
            Some(Value::String(s)) => push_bounded(&mut text, s, MAX_BYTES),
            Some(Value::Array(parts)) => {
                for t in parts
                    .iter()
                    .filter_map(tokens::text_of_part)
                    .filter(|t| !is_agent_reminder(t))
                {
                    if text.len() >= MAX_BYTES {
                        break;
                    }
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    push_bounded(&mut text, t, MAX_BYTES);
                }
            }
            _ => {}
        }
        if text.chars().any(char::is_alphabetic) {
            return Some(text);
        }
    }
    None
}

/// A text part that is only a coding agent's reminder to itself.
fn is_agent_reminder(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("<system-reminder>") && t.ends_with("</system-reminder>")
}

/// Appends as much of `s` as fits in `max` bytes, on a character boundary.
fn push_bounded(out: &mut String, s: &str, max: usize) {
    let mut end = max.saturating_sub(out.len()).min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&s[..end]);
}

#[cfg(test)]
mod tests;

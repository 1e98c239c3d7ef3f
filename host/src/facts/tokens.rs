//! Prompt token counts with a real tokenizer: OpenAI's `o200k_base` BPE (tiktoken-rs, which ships
//! the BPE file inside the crate, so nothing is fetched). Built once per process; exact for
//! o200k models, an estimate for every other model family (Llama, Jais, Mistral, … tokenize
//! differently, typically within ±20% on prose and further apart on Arabic script).

use serde_json::Value;
use tiktoken_rs::CoreBPE;

use super::FactsInitError;

/// Tokens the chat format adds around each message (`<|start|>{role}<|message|>…<|end|>`), as in
/// OpenAI's cookbook count for o200k/cl100k chat models.
pub const TOKENS_PER_MESSAGE: u32 = 3;
/// A message's `name` costs its tokens plus this.
pub const TOKENS_PER_NAME: u32 = 1;
/// Every reply is primed with `<|start|>assistant<|message|>`.
pub const TOKENS_REPLY_PRIMING: u32 = 3;

/// The tokenizer. Building it parses the 200k-entry BPE table (about 160 ms, 45 MB): do it once
/// at start-up and share it.
pub struct TokenCounter {
    bpe: CoreBPE,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &"o200k_base")
            .finish()
    }
}

impl TokenCounter {
    pub fn new() -> Result<TokenCounter, FactsInitError> {
        let bpe =
            tiktoken_rs::o200k_base().map_err(|e| FactsInitError::Tokenizer(format!("{e:#}")))?;
        Ok(TokenCounter { bpe })
    }

    /// Tokens in `text`, special-token markers counted as ordinary text (a prompt that contains
    /// `<|endoftext|>` is text, not a control token).
    pub fn count(&self, text: &str) -> u32 {
        if text.is_empty() {
            return 0;
        }
        u32::try_from(self.bpe.encode_ordinary(text).len()).unwrap_or(u32::MAX)
    }

    /// The texts a token array may stand for, to check what it says: decoded with o200k_base
    /// (this gateway's tokenizer) and with cl100k_base (what OpenAI-style clients such as
    /// LangChain use for a model they do not know). A tokenizer that does not know one of the ids
    /// gives no decoding; bytes that are not UTF-8 are replaced.
    pub fn decodings(&self, tokens: &[u32]) -> Vec<String> {
        [
            self.bpe.decode_bytes(tokens).ok(),
            tiktoken_rs::cl100k_base_singleton()
                .decode_bytes(tokens)
                .ok(),
        ]
        .into_iter()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
    }

    /// The prompt's tokens for a validated `messages` array: per message
    /// [`TOKENS_PER_MESSAGE`] + role + content (a string, or the `text` of its text parts) +
    /// `name` ([`TOKENS_PER_NAME`] extra) + assistant `tool_calls` (function names and
    /// arguments); then [`TOKENS_REPLY_PRIMING`]. Images, audio and files are not counted, nor
    /// are `tools` definitions. Saturates at `u32::MAX`.
    pub fn count_messages(&self, messages: &[Value]) -> u32 {
        let mut total = TOKENS_REPLY_PRIMING;
        for m in messages {
            let Some(m) = m.as_object() else { continue };
            let mut n = TOKENS_PER_MESSAGE;
            if let Some(role) = m.get("role").and_then(Value::as_str) {
                n = n.saturating_add(self.count(role));
            }
            match m.get("content") {
                Some(Value::String(s)) => n = n.saturating_add(self.count(s)),
                Some(Value::Array(parts)) => {
                    for text in parts.iter().filter_map(text_of_part) {
                        n = n.saturating_add(self.count(text));
                    }
                }
                _ => {}
            }
            if let Some(name) = m.get("name").and_then(Value::as_str) {
                n = n
                    .saturating_add(self.count(name))
                    .saturating_add(TOKENS_PER_NAME);
            }
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                for f in calls.iter().filter_map(|c| c.get("function")) {
                    for key in ["name", "arguments"] {
                        if let Some(s) = f.get(key).and_then(Value::as_str) {
                            n = n.saturating_add(self.count(s));
                        }
                    }
                }
            }
            total = total.saturating_add(n);
        }
        total
    }
}

/// The text of a `{"type": "text", "text": …}` content part (`input_text` too).
pub(super) fn text_of_part(part: &Value) -> Option<&str> {
    match part.get("type").and_then(Value::as_str) {
        Some("text" | "input_text") => part.get("text").and_then(Value::as_str),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::LazyLock;

    static COUNTER: LazyLock<TokenCounter> = LazyLock::new(|| TokenCounter::new().unwrap());

    #[test]
    fn token_arrays_are_read_back_in_either_tokenizer() {
        let tokens = TokenCounter::new().unwrap();
        let text = "pay with card 4111 1111 1111 1111";
        let cl100k: Vec<u32> = tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .into_iter()
            .collect();
        let o200k: Vec<u32> = tokens.bpe.encode_ordinary(text).into_iter().collect();
        assert!(tokens.decodings(&cl100k).iter().any(|d| d == text));
        assert!(tokens.decodings(&o200k).iter().any(|d| d == text));
        // An id neither tokenizer has: nothing to read.
        assert!(tokens.decodings(&[u32::MAX]).is_empty());
    }

    #[test]
    fn known_strings() {
        // Reference counts from OpenAI's tiktoken (o200k_base).
        let c = &*COUNTER;
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("hello world"), 2);
        assert_eq!(c.count("Summarize this article in three bullet points"), 9);
        assert_eq!(c.count("Bonjour, comment ça va ?"), 6);
        assert_eq!(c.count("كيف أتعلم البرمجة بلغة Python بسرعة؟"), 12);
        // A control token in user text is text: more than one token.
        assert!(c.count("<|endoftext|>") > 1);
    }

    #[test]
    fn messages_carry_the_per_message_overhead() {
        let c = &*COUNTER;
        // 3 (priming) + 3 + "user" (1) + "hello world" (2)
        let one = json!([{"role": "user", "content": "hello world"}]);
        assert_eq!(c.count_messages(one.as_array().unwrap()), 9);
        // Text parts count like strings; an image part adds nothing.
        let parts = json!([{"role": "user", "content": [
            {"type": "text", "text": "hello world"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]);
        assert_eq!(c.count_messages(parts.as_array().unwrap()), 9);
        // name: its tokens + 1; a second message: 3 + role + content.
        let two = json!([
            {"role": "system", "content": "hello world", "name": "bob"},
            {"role": "assistant", "content": null,
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}]);
        let expect = 3
            + (3 + c.count("system") + 2 + c.count("bob") + 1)
            + (3 + c.count("assistant") + c.count("get_weather") + c.count("{\"city\":\"Paris\"}"));
        assert_eq!(c.count_messages(two.as_array().unwrap()), expect);
    }
}

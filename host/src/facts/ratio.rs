//! `count_tokens` where the deployment cannot tokenize (docs/MESSAGES.md, "Counting tokens"): an
//! estimate that errs high. The gateway counts a chat body with its own tokenizer (o200k), split
//! by script ([`PromptSize`]: text in ASCII letters — English, code, JSON — and text in any other
//! script, which other tokenizers split far more finely), and scales each part by a ratio
//! learned per model from the prompts it was billed for ([`TokenRatios`]: the upstream's
//! `prompt_tokens` ÷ the gateway's count, the largest seen), with a margin, a fixed allowance
//! and a conservative prior until a ratio is learned.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use serde_json::{Map, Value};

use super::tokens::{
    TOKENS_PER_MESSAGE, TOKENS_PER_NAME, TOKENS_REPLY_PRIMING, TokenCounter, text_of_part,
};

/// The learned (or prior) ratio is multiplied by this: prose, code and JSON tokenize
/// differently, and a ratio learned on one may be short for another (SmolLM2: 1.03 on English
/// prose, 1.20 on Rust code; docs/MESSAGES.md, "Counting tokens").
pub const MARGIN: f64 = 1.25;
/// Added to every estimate: what a template adds once (a beginning-of-text token, a default
/// system prompt some templates insert when there is none).
pub const ALLOWANCE: u64 = 16;
/// Tokens counted for each image (or other non-text part): vision models spend from a few
/// hundred to a few thousand per image, by model and resolution; never learned.
pub const IMAGE_TOKENS: u64 = 1600;
/// What a template adds around tool definitions (an instruction paragraph, a format example).
pub const TOOLS_ALLOWANCE: u64 = 200;
/// The ratios used before any is learned, for ASCII text and for other scripts. Measured in
/// docs/MESSAGES.md: tokenizers of open models need up to ~1.3× o200k's tokens on English and
/// code, and from 1× (Llama 3, Qwen) to over 4× (English-centred vocabularies) on Arabic.
pub const PRIOR: [f64; 2] = [1.5, 4.0];
/// No ratio is learned below this: no open model's tokenizer we know needs much fewer tokens
/// than o200k, and a server that bills part of the prompt low (a compact tool rendering) or not
/// at all (the simulator bills no tools) must not teach an estimate below the prompt's size.
pub const FLOOR: f64 = 1.0;
/// A prompt smaller than this (in its main script) teaches nothing: the template's fixed cost
/// would dominate its ratio.
pub const MIN_LEARN_TOKENS: u64 = 256;
/// A prompt teaches its main script's ratio only when the other script is at most this share
/// of it (all its tokens are put down to the main script, which errs high).
pub const MAX_MINOR_SHARE: f64 = 0.2;

const LATIN: usize = 0;
const OTHER: usize = 1;

/// A chat body as the gateway counts it (o200k tokens), split by script.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptSize {
    /// Text whose letters are ASCII (English, code, JSON), and the chat format's overhead.
    pub latin: u64,
    /// Text in any other script (Arabic, accented Latin, CJK, …).
    pub other: u64,
    /// Images and other non-text parts.
    pub images: u64,
    /// Tokens added as they are, never scaled nor learned from ([`TOOLS_ALLOWANCE`]).
    pub fixed: u64,
}

impl PromptSize {
    /// The chat body's prompt: every message (the chat format's overhead, role, text parts,
    /// `name`, tool calls and their ids), the tool definitions (their JSON and
    /// [`TOOLS_ALLOWANCE`]), the reply's priming.
    pub fn of(tokens: &TokenCounter, chat: &Map<String, Value>) -> PromptSize {
        let mut size = PromptSize {
            latin: u64::from(TOKENS_REPLY_PRIMING),
            ..PromptSize::default()
        };
        let messages = chat.get("messages").and_then(Value::as_array);
        for m in messages.into_iter().flatten().filter_map(Value::as_object) {
            size.latin += u64::from(TOKENS_PER_MESSAGE);
            for key in ["role", "tool_call_id"] {
                if let Some(s) = m.get(key).and_then(Value::as_str) {
                    size.text(tokens, s);
                }
            }
            if let Some(name) = m.get("name").and_then(Value::as_str) {
                size.latin += u64::from(TOKENS_PER_NAME);
                size.text(tokens, name);
            }
            match m.get("content") {
                Some(Value::String(s)) => size.text(tokens, s),
                Some(Value::Array(parts)) => {
                    for part in parts {
                        match text_of_part(part) {
                            Some(t) => size.text(tokens, t),
                            None => size.images += 1,
                        }
                    }
                }
                _ => {}
            }
            let calls = m.get("tool_calls").and_then(Value::as_array);
            for call in calls.into_iter().flatten() {
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    size.text(tokens, id);
                }
                for key in ["name", "arguments"] {
                    if let Some(s) = call
                        .pointer(&format!("/function/{key}"))
                        .and_then(Value::as_str)
                    {
                        size.text(tokens, s);
                    }
                }
            }
        }
        if let Some(tools) = chat.get("tools").filter(|t| !t.is_null()) {
            size.fixed += TOOLS_ALLOWANCE;
            size.text(tokens, &tools.to_string());
        }
        size
    }

    /// `text` counted run by run: a run of ASCII letters (with the spaces, digits and
    /// punctuation around them) is `latin`, a run of other letters `other`.
    fn text(&mut self, tokens: &TokenCounter, text: &str) {
        let mut start = 0;
        let mut current: Option<usize> = None;
        for (i, c) in text.char_indices() {
            let class = if c.is_ascii_alphabetic() {
                Some(LATIN)
            } else if !c.is_ascii() && !c.is_whitespace() {
                Some(OTHER)
            } else {
                None
            };
            match (current, class) {
                (Some(run), Some(k)) if run != k => {
                    self.add(run, tokens.count(&text[start..i]));
                    start = i;
                    current = Some(k);
                }
                (None, Some(k)) => current = Some(k),
                _ => {}
            }
        }
        self.add(current.unwrap_or(LATIN), tokens.count(&text[start..]));
    }

    fn add(&mut self, class: usize, n: u32) {
        if class == LATIN {
            self.latin += u64::from(n);
        } else {
            self.other += u64::from(n);
        }
    }
}

/// The ratios learned per model (upstream prompt tokens ÷ the gateway's count), by script.
#[derive(Debug, Default)]
pub struct TokenRatios {
    learned: RwLock<HashMap<String, [Option<f64>; 2]>>,
}

impl TokenRatios {
    /// The ratios an estimate for `model` uses: learned (never below [`FLOOR`]), else
    /// [`PRIOR`].
    pub fn ratios(&self, model: &str) -> [f64; 2] {
        let learned = self
            .learned
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(model)
            .copied()
            .unwrap_or_default();
        [
            learned[LATIN].map_or(PRIOR[LATIN], |r| r.max(FLOOR)),
            learned[OTHER].map_or(PRIOR[OTHER], |r| r.max(FLOOR)),
        ]
    }

    /// The estimate for a prompt of `size` on `model`: each script's tokens times its ratio,
    /// times [`MARGIN`], plus [`ALLOWANCE`], the fixed tokens and [`IMAGE_TOKENS`] per image.
    pub fn estimate(&self, model: &str, size: &PromptSize) -> u64 {
        let r = self.ratios(model);
        let text = (size.latin as f64 * r[LATIN] + size.other as f64 * r[OTHER]) * MARGIN;
        // Rounded up, but not for float noise (1.1 × 190 is 209.00000000000003).
        let text = (text - 1e-9).ceil().max(0.0) as u64;
        text.saturating_add(ALLOWANCE)
            .saturating_add(size.fixed)
            .saturating_add(size.images.saturating_mul(IMAGE_TOKENS))
    }

    /// `model` was billed `prompt_tokens` for a prompt of `size`: its main script's ratio is
    /// raised to what that implies (all the prompt put down to the main script), once the
    /// prompt is large enough and mostly in one script. Prompts with images teach nothing.
    pub fn observe(&self, model: &str, size: &PromptSize, prompt_tokens: u64) {
        if size.images > 0 {
            return;
        }
        let (main, x, minor) = if size.latin >= size.other {
            (LATIN, size.latin, size.other)
        } else {
            (OTHER, size.other, size.latin)
        };
        let (x, minor, billed) = (x as f64, minor as f64, prompt_tokens as f64);
        if x < MIN_LEARN_TOKENS as f64 || minor > MAX_MINOR_SHARE * (x + minor) {
            return;
        }
        let seen = (billed - (ALLOWANCE + size.fixed) as f64).max(0.0) / x;
        let mut learned = self.learned.write().unwrap_or_else(PoisonError::into_inner);
        let slot = &mut learned.entry(model.to_string()).or_default()[main];
        let raised = slot.is_none_or(|r| seen > r);
        if raised {
            *slot = Some(seen);
        }
        tracing::debug!(
            model,
            script = if main == LATIN { "latin" } else { "other" },
            ratio = seen,
            tokens = x,
            minor,
            billed,
            raised,
            "count_tokens ratio observed"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::LazyLock;

    static COUNTER: LazyLock<TokenCounter> = LazyLock::new(|| TokenCounter::new().unwrap());

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn size(latin: u64, other: u64) -> PromptSize {
        PromptSize {
            latin,
            other,
            ..PromptSize::default()
        }
    }

    #[test]
    fn a_prompt_is_counted_by_script_with_its_tools_and_images() {
        let c = &*COUNTER;
        let english = PromptSize::of(
            c,
            &body(
                json!({"messages": [{"role": "user", "content": "Summarize this article in three bullet points"}]}),
            ),
        );
        // Priming, one message's overhead, its role, its text: the facts' count exactly.
        let messages =
            [json!({"role": "user", "content": "Summarize this article in three bullet points"})];
        assert_eq!(english.latin, u64::from(c.count_messages(&messages)));
        assert_eq!((english.other, english.images), (0, 0));

        let arabic = PromptSize::of(
            c,
            &body(
                json!({"messages": [{"role": "user", "content": "كيف أتعلم البرمجة بلغة Python بسرعة؟"}]}),
            ),
        );
        assert!(arabic.other >= 8, "{arabic:?}");
        // Priming, the message's overhead, its role, the word `Python`.
        assert!(arabic.latin >= 8, "{arabic:?}");

        let tools = json!([{"type": "function", "function": {"name": "get_weather",
                                                         "parameters": {"type": "object"}}}]);
        let with = PromptSize::of(
            c,
            &body(json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Riyadh\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}],
                "tools": tools})),
        );
        assert_eq!(with.images, 1);
        assert_eq!(with.fixed, TOOLS_ALLOWANCE);
        assert!(
            with.latin > u64::from(c.count(&tools.to_string())) + 3 * 3,
            "{with:?}"
        );
    }

    #[test]
    fn an_unknown_model_gets_the_prior_with_margin_allowance_and_images() {
        let r = TokenRatios::default();
        assert_eq!(r.ratios("m"), PRIOR);
        // (100 × 1.5 + 10 × 4) × 1.25 = 237.5, + 16, the fixed 200, 2 images.
        let s = PromptSize {
            latin: 100,
            other: 10,
            images: 2,
            fixed: 200,
        };
        assert_eq!(r.estimate("m", &s), 238 + 16 + 200 + 2 * IMAGE_TOKENS);
    }

    #[test]
    fn the_largest_ratio_seen_is_kept_per_model_and_script_and_the_estimate_covers_it() {
        let r = TokenRatios::default();
        // Below the prior: learned, and used instead of it.
        r.observe("m", &size(1000, 0), 1116);
        assert!((r.ratios("m")[0] - 1.1).abs() < 1e-9);
        assert_eq!(
            r.ratios("m")[1],
            PRIOR[1],
            "the other script is not learned"
        );
        assert_eq!(r.ratios("n"), PRIOR, "other models are not touched");
        // A larger one raises it; a smaller one does not lower it.
        r.observe("m", &size(1000, 100), 1316);
        assert!((r.ratios("m")[0] - 1.3).abs() < 1e-9);
        r.observe("m", &size(2000, 0), 2216);
        assert!((r.ratios("m")[0] - 1.3).abs() < 1e-9);
        // Every prompt seen is covered by the estimate for the same size.
        for (s, billed) in [
            (size(1000, 0), 1116),
            (size(1000, 100), 1316),
            (size(2000, 0), 2216),
        ] {
            assert!(r.estimate("m", &s) >= billed, "{s:?}");
        }
        // Arabic-heavy prompts teach the other script's ratio.
        r.observe("m", &size(40, 600), 1816);
        assert!((r.ratios("m")[1] - 3.0).abs() < 1e-9);
        assert!(r.estimate("m", &size(40, 600)) >= 1816);
        // Fixed tokens (the tools' allowance) are taken off before the ratio is learned.
        let tools = PromptSize {
            fixed: TOOLS_ALLOWANCE,
            ..size(3000, 0)
        };
        r.observe("m", &tools, 16 + 200 + 4500);
        assert!((r.ratios("m")[0] - 1.5).abs() < 1e-9);
        assert!(r.estimate("m", &tools) >= 16 + 200 + 4500);
    }

    #[test]
    fn no_ratio_is_used_below_the_floor() {
        // A server that bills less than the gateway counts (the simulator bills words, and no
        // tools): the floor keeps the estimate above the prompt's own size.
        let r = TokenRatios::default();
        r.observe("m", &size(1000, 0), 516);
        assert_eq!(r.ratios("m")[0], FLOOR);
        assert_eq!(r.estimate("m", &size(1000, 0)), 1250 + ALLOWANCE);
        // A bill below the allowance teaches nothing negative.
        r.observe("n", &size(300, 0), 3);
        assert_eq!(r.ratios("n")[0], FLOOR);
    }

    #[test]
    fn small_mixed_or_illustrated_prompts_teach_nothing() {
        let r = TokenRatios::default();
        r.observe("m", &size(100, 0), 50); // too small: the template's cost dominates
        r.observe("m", &size(600, 400), 500); // neither script is 80 %
        let illustrated = PromptSize {
            images: 1,
            ..size(1000, 0)
        };
        r.observe("m", &illustrated, 300);
        assert_eq!(r.ratios("m"), PRIOR);
    }
}

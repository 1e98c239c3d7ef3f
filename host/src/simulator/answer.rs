//! What a simulated model says: a deterministic answer in the model's own language that names the
//! model and echoes the question, split into stream tokens; word-count token usage; and
//! deterministic embeddings (hashed character trigrams, so similar texts get similar vectors).

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fleet::{EMBEDDING_DIMENSIONS, SimModel};

/// The answer's tokens: words, each but the first led by its space, so they concatenate back.
pub fn answer_tokens(model: &SimModel, messages: &[Value]) -> Vec<String> {
    let question = last_user_text(messages);
    let snippet: String = question.chars().take(80).collect();
    let text = match model.speaks {
        "ar" => format!(
            "مرحباً! أنا {}، نموذج عربي يعمل في المنطقة {}. سؤالك كان: «{}».",
            model.id, model.region, snippet
        ),
        "fr" => format!(
            "Bonjour ! Je suis {}, servi depuis la région {}. Vous avez demandé : « {} ».",
            model.id, model.region, snippet
        ),
        _ => format!(
            "Hello! I am {}, served from region {}. You asked: \"{}\".",
            model.id, model.region, snippet
        ),
    };
    split(&text)
}

/// A text as stream tokens: one per word, each after the first with its leading space.
pub fn split(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for (i, word) in text.split(' ').enumerate() {
        tokens.push(if i == 0 {
            word.to_string()
        } else {
            format!(" {word}")
        });
    }
    tokens
}

fn last_user_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(content_text)
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text of a message's `content`: a string, or the text parts of an array.
fn content_text(message: &Value) -> String {
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// Prompt tokens as the simulator counts them: words in every message, plus one per message.
pub fn prompt_tokens(messages: &[Value]) -> u64 {
    messages
        .iter()
        .map(|m| content_text(m).split_whitespace().count() as u64 + 1)
        .sum()
}

pub fn word_count(text: &str) -> u64 {
    text.split_whitespace().count().max(1) as u64
}

/// A unit vector of [`EMBEDDING_DIMENSIONS`] from the text's character trigrams.
pub fn embed(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; EMBEDDING_DIMENSIONS];
    let chars: Vec<char> = format!("  {}  ", text.to_lowercase()).chars().collect();
    for w in chars.windows(3) {
        let gram: String = w.iter().collect();
        let h = Sha256::digest(gram.as_bytes());
        let idx = usize::from(u16::from_le_bytes([h[0], h[1]])) % EMBEDDING_DIMENSIONS;
        let sign = if h[2] & 1 == 0 { 1.0 } else { -1.0 };
        v[idx] += sign;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulator::fleet::demo_fleet;
    use serde_json::json;

    #[test]
    fn arabic_models_answer_in_arabic_and_tokens_rejoin() {
        let fleet = demo_fleet();
        let jais = fleet.iter().find(|m| m.id == "jais-30b-chat").unwrap();
        let msgs = [json!({"role": "user", "content": "ما هي عاصمة فرنسا؟"})];
        let tokens = answer_tokens(jais, &msgs);
        let text = tokens.concat();
        assert!(text.starts_with("مرحباً"), "{text}");
        assert!(text.contains("jais-30b-chat") && text.contains("عاصمة فرنسا"));
        assert_eq!(tokens, answer_tokens(jais, &msgs), "deterministic");
    }

    #[test]
    fn embeddings_are_unit_length_and_similar_for_similar_text() {
        let a = embed("the capital of France is Paris");
        let b = embed("Paris is the capital of France");
        let c = embed("ترتيب الأرقام في جدول");
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!((dot(&a, &a) - 1.0).abs() < 1e-5);
        assert!(dot(&a, &b) > dot(&a, &c) + 0.3);
    }
}

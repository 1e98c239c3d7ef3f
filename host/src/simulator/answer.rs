//! What a simulated model says: a deterministic answer in the model's own language that names the
//! model and echoes the question, split into stream tokens; its reasoning (when asked) and its
//! signature; the tool call it makes when offered tools, whole or as the many small argument
//! fragments real servers stream; word-count token usage; and deterministic embeddings (hashed
//! character trigrams, so similar texts get similar vectors).

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fleet::{EMBEDDING_DIMENSIONS, SimModel};

/// The answer a request for structured output gets: `response_format` `json_schema` → a valid
/// instance of the schema (every property present, the first `enum`/`anyOf` choice, strings set to
/// the answer's text); `json_object` → `{"answer": text}`. `None` for plain text.
pub fn structured(body: &Value, text: &str) -> Option<String> {
    let format = body.get("response_format")?;
    match format.get("type").and_then(Value::as_str)? {
        "json_schema" => {
            let schema = format.pointer("/json_schema/schema")?;
            Some(instance(schema, text, 0).to_string())
        }
        "json_object" => Some(serde_json::json!({ "answer": text }).to_string()),
        _ => None,
    }
}

/// A deterministic instance of a JSON schema (the subset structured output uses).
fn instance(schema: &Value, text: &str, depth: usize) -> Value {
    use serde_json::json;
    if depth > 16 {
        return Value::Null;
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
        {
            return instance(first, text, depth + 1);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // `["string", "null"]`: the first type.
        Some(Value::Array(types)) => types.first().and_then(Value::as_str).unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "null",
    };
    match kind {
        "object" => {
            let mut out = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, sub) in props {
                    out.insert(name.clone(), instance(sub, text, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = schema
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .max(1);
            let item = schema
                .get("items")
                .map_or(Value::Null, |i| instance(i, text, depth + 1));
            Value::Array(vec![item; usize::try_from(min.min(8)).unwrap_or(1)])
        }
        "string" => json!(text),
        "integer" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "number" => schema.get("minimum").cloned().unwrap_or(json!(1.5)),
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

/// The reasoning a model streams before its answer when reasoning is on: deterministic, naming
/// the model and the question (and the fixed answer `PUT /_sim/replies/{id}` set, which the model
/// then thinks through first), as tokens.
pub fn reasoning_tokens(model: &SimModel, question: &str, fixed: Option<&str>) -> Vec<String> {
    let snippet: String = question.chars().take(40).collect();
    let plan = match fixed {
        Some(text) => format!("I will say: {text}"),
        None => "I answer plainly.".to_string(),
    };
    split(&format!(
        "The user asks \"{snippet}\". I am {}; {plan}",
        model.id
    ))
}

/// The signature the simulator gives a thinking block (and checks on a replayed one).
pub fn signature(thinking: &str) -> String {
    format!(
        "simsig-{}",
        hex::encode(&Sha256::digest(thinking.as_bytes())[..8])
    )
}

/// The tool call a simulated model answers with when the request offers tools and the last
/// message is not a tool's result: the first tool (chat's `function.name`, else Messages'
/// `name`), arguments `{"text": <the answer's text>}`.
pub fn tool_call(body: &Value, answering_a_tool: bool, text: &str) -> Option<(String, Value)> {
    let tool = body.get("tools").and_then(Value::as_array)?.first()?;
    let name = tool
        .pointer("/function/name")
        .or_else(|| tool.get("name"))
        .and_then(Value::as_str)?;
    (!answering_a_tool).then(|| (name.to_owned(), serde_json::json!({ "text": text })))
}

/// [`tool_call`] as a chat `tool_calls` entry (the chat door's).
pub fn chat_tool_call(body: &Value, messages: &[Value], text: &str) -> Option<Value> {
    let answering_a_tool =
        messages.last().and_then(|m| m.get("role")) == Some(&Value::from("tool"));
    let (name, args) = tool_call(body, answering_a_tool, text)?;
    Some(serde_json::json!({"id": "call_sim_1", "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}}))
}

/// The chat door's reasoning tokens: none unless the model's behaviour says `reasoning`.
pub fn chat_reasoning(
    model: &SimModel,
    messages: &[Value],
    on: bool,
    fixed: Option<&str>,
) -> Vec<String> {
    if on {
        reasoning_tokens(model, &last_user_text(messages), fixed)
    } else {
        Vec::new()
    }
}

/// Tool-call arguments as streamed: whole, or (`fragmented`) in pieces of a few characters, as
/// vLLM and llama.cpp send them.
pub fn fragments(arguments: &str, fragmented: bool) -> Vec<String> {
    if !fragmented {
        return vec![arguments.to_owned()];
    }
    let chars: Vec<char> = arguments.chars().collect();
    chars.chunks(5).map(|c| c.iter().collect()).collect()
}

/// A chat tool call as stream deltas: the first names it, the rest carry argument fragments.
pub fn tool_call_deltas(call: &Value, fragmented: bool) -> Vec<Value> {
    let args = call["function"]["arguments"].as_str().unwrap_or_default();
    let mut deltas: Vec<Value> = fragments(args, fragmented)
        .into_iter()
        .map(|piece| serde_json::json!({"index": 0, "function": {"arguments": piece}}))
        .collect();
    if let Some(first) = deltas.first_mut() {
        first["id"] = call["id"].clone();
        first["type"] = serde_json::json!("function");
        first["function"]["name"] = call["function"]["name"].clone();
    }
    deltas
}

/// The answer's tokens: words, each but the first led by its space, so they concatenate back.
pub fn answer_tokens(model: &SimModel, messages: &[Value]) -> Vec<String> {
    // After a tool's result, the answer echoes that result (a tool loop can be followed).
    let question = match messages.last() {
        Some(m) if m.get("role").and_then(Value::as_str) == Some("tool") => content_text(m),
        _ => last_user_text(messages),
    };
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
pub(super) fn content_text(message: &Value) -> String {
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
    fn structured_output_is_an_instance_of_the_schema() {
        let body = serde_json::json!({"response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "object", "properties": {
                "kind": {"enum": ["a", "b"]},
                "n": {"type": "integer", "minimum": 3},
                "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}});
        let v: Value = serde_json::from_str(&structured(&body, "hi").unwrap()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "a", "n": 3, "maybe": "hi", "tags": ["hi", "hi"],
                               "inner": {"ok": true}})
        );
        assert_eq!(structured(&serde_json::json!({}), "hi"), None);
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

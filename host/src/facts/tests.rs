//! Tests of [`FactsEngine::extract`] on whole bodies (issue 3, item 4).

use std::sync::LazyLock;

use serde_json::{Value, json};

use super::*;

static ENGINE: LazyLock<FactsEngine> =
    LazyLock::new(|| FactsEngine::with_languages(["ar", "en", "fr", "fa", "ur"]).unwrap());

fn extract(v: Value) -> Result<Facts, FactsError> {
    ENGINE.extract(v.as_object().unwrap(), None)
}

#[test]
fn facts_of_a_chat_body() {
    let f = extract(json!({
        "model": "auto-router",
        "stream": true,
        "routing": {"profile": "performance"},
        "routing_preference": "cost",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "ما هي عاصمة المغرب؟"}
        ]
    }))
    .unwrap();
    let expected_tokens = ENGINE.tokens().count_messages(
        json!([
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "ما هي عاصمة المغرب؟"}
        ])
        .as_array()
        .unwrap(),
    );
    assert_eq!(
        f,
        Facts {
            requested_model: "auto-router".into(),
            language: "ar",
            prompt_tokens: expected_tokens,
            profile: Some(Profile::Performance),
            classification: None,
            stream: true,
        }
    );
    assert!(f.prompt_tokens > 20, "{f:?}");
}

#[test]
fn language_comes_from_the_newest_user_message_with_letters() {
    let lang = |messages: Value| {
        extract(json!({"model": "auto-router", "messages": messages}))
            .unwrap()
            .language
    };
    // The system prompt's language does not count.
    assert_eq!(
        lang(json!([
            {"role": "system", "content": "Answer in the user's language, briefly and politely."},
            {"role": "user", "content": "Quelle est la capitale de l'Australie ?"}
        ])),
        "fr"
    );
    // A last message without letters falls back to the one before.
    assert_eq!(
        lang(json!([
            {"role": "user", "content": "پایتخت فرانسه کجاست؟"},
            {"role": "assistant", "content": "پاریس"},
            {"role": "user", "content": "???"}
        ])),
        "fa"
    );
    // Text parts are read; images are not.
    assert_eq!(
        lang(json!([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            {"type": "text", "text": "اس تصویر میں کیا ہے؟"}]}])),
        "ur"
    );
    // No user text at all.
    assert_eq!(
        lang(json!([{"role": "system", "content": "You are terse."}])),
        UNDETERMINED
    );
    // A coding agent's reminder ahead of the prompt, in its own part, is not the user's language
    // (Claude Code's is longer than the detector's sample); a reminder alone falls back.
    let reminder = format!(
        "<system-reminder>\n{}</system-reminder>\n",
        "Attribution for git commits and pull requests you create from here on. ".repeat(8)
    );
    assert_eq!(
        lang(json!([{"role": "user", "content": [
            {"type": "text", "text": reminder},
            {"type": "text", "text": "ما هي عاصمة فرنسا؟"}]}])),
        "ar"
    );
    assert_eq!(
        lang(json!([
            {"role": "user", "content": "ما هي عاصمة فرنسا؟"},
            {"role": "user", "content": [{"type": "text", "text": reminder}]}
        ])),
        "ar"
    );
    assert_eq!(
        lang(
            json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}])
        ),
        UNDETERMINED
    );
}

#[test]
fn hint_errors_are_400s_naming_the_parameter() {
    let e = extract(
        json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                           "routing": {"profile": "fastest"}}),
    )
    .unwrap_err();
    assert_eq!(e.param(), "routing.profile");
    assert!(e.to_string().contains("fastest"), "{e}");
    let e = ENGINE
        .extract(
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
                .as_object()
                .unwrap(),
            Some(b"a b"),
        )
        .unwrap_err();
    assert_eq!(e.param(), "X-Data-Classification");
}

#[test]
fn classification_and_route_facts() {
    let f = ENGINE
        .extract(
            json!({"model": "jais-30b", "messages": [{"role": "user", "content": "hello world"}],
                   "routing_preference": "balanced"})
            .as_object()
            .unwrap(),
            Some(b"Restricted"),
        )
        .unwrap();
    let rf = f.route_facts(RouteFacts {
        request_id: "req-1".into(),
        team_id: "t".into(),
        allowed_regions: vec!["eu".into()],
        ..Default::default()
    });
    assert_eq!(rf.request_id, "req-1");
    assert_eq!(rf.allowed_regions, ["eu"]);
    assert_eq!(rf.requested_model, "jais-30b");
    // A named model is not routed: the language is not detected.
    assert_eq!(rf.language, "und");
    assert_eq!(rf.prompt_tokens, 9);
    assert_eq!(rf.profile.as_deref(), Some("balanced"));
    assert_eq!(rf.classification.as_deref(), Some("restricted"));
    assert!(!rf.stream);
}

#[test]
fn gateway_fields_are_stripped_before_the_upstream() {
    let mut body = json!({"model": "m", "routing": {"profile": "cost"},
                          "routing_preference": "cost", "temperature": 0.1})
    .as_object()
    .cloned()
    .unwrap();
    strip_gateway_fields(&mut body);
    assert_eq!(body.keys().collect::<Vec<_>>(), ["model", "temperature"]);
}

#[test]
fn user_text_is_bounded() {
    let big = "é".repeat(100_000);
    let text = user_text(
        json!([{"role": "user", "content": big}])
            .as_array()
            .unwrap(),
    )
    .unwrap();
    assert!(text.len() <= MAX_DETECT_CHARS * 4);
    let parts: Vec<Value> = (0..1000)
        .map(|_| json!({"type": "text", "text": "bonjour à tous"}))
        .collect();
    let text = user_text(
        json!([{"role": "user", "content": parts}])
            .as_array()
            .unwrap(),
    )
    .unwrap();
    assert!(text.len() <= MAX_DETECT_CHARS * 4);
}

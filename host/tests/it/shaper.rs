//! Webhook shapers (issue 7, "Shaping in Wasm"; docs/POLICIES.md "Webhook shapers"): the built-in
//! shaper's body is the seed shape byte for byte; a shaper that traps, loops or answers what the
//! host refuses fails the event (the delivery worker dead-letters it) and a fixed shaper swapped
//! in under the same name shapes it again; forbidden headers never survive; in-flight holders
//! keep their version across a swap.

use std::sync::Arc;

use serde_json::json;
use sovereign::policy::shaper::{DEFAULT_SHAPER, ShapeError, ShaperEvent, Shapers};
use sovereign::policy::{CallLimits, PolicyError};

use crate::policy::host;

async fn shapers() -> Shapers {
    Shapers::new(host().clone(), CallLimits::default())
        .await
        .unwrap()
}

fn wasm(path: &str) -> Arc<[u8]> {
    Arc::from(std::fs::read(path).unwrap())
}

fn violation() -> ShaperEvent {
    ShaperEvent {
        id: "evt-0001".into(),
        kind: "guardrail.violation".into(),
        timestamp: "2025-01-31T12:00:00.000Z".into(),
        request_id: Some("req-42".into()),
        details_json: json!({
            "violation_type": "pii_detected",
            "entities": ["email", "phone"],
            "action_taken": "request_blocked",
            "note": "quote \" backslash \\ newline \n arabic مرحبا \u{1}",
        })
        .to_string(),
        team_id: Some("team-a".into()),
        user_id: None,
    }
}

/// The seed's shape, as the host's own serialization writes it.
fn seed(e: &ShaperEvent) -> String {
    let details: serde_json::Value = serde_json::from_str(&e.details_json).unwrap();
    json!({
        "event": e.kind,
        "timestamp": e.timestamp,
        "request_id": e.request_id,
        "details": details,
        "metadata": { "team_id": e.team_id, "user_id": e.user_id },
    })
    .to_string()
}

#[tokio::test]
async fn the_default_shaper_delivers_the_seed_shape_byte_for_byte() {
    let s = shapers().await;
    assert!(s.contains(DEFAULT_SHAPER));
    let mut absent = violation();
    absent.request_id = None;
    absent.team_id = None;
    absent.details_json = "{}".into();
    for e in [violation(), absent] {
        let d = s
            .shape(DEFAULT_SHAPER, &e, "https://hooks.example/a")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(std::str::from_utf8(&d.body).unwrap(), seed(&e));
        assert_eq!(d.content_type, "application/json");
        assert!(d.headers.is_empty());
        assert!(d.dropped_headers.is_empty());
    }
}

#[tokio::test]
async fn a_trapping_shaper_fails_the_event_and_a_fixed_one_shapes_it_again() {
    let s = shapers().await;
    // It loads: it answers the smoke call well, then traps on every real event.
    let info = s
        .put("ops", wasm(policy_artifacts::BROKEN_SHAPER), None)
        .await
        .unwrap();
    assert_eq!(info.name, "ops");
    let e = violation();
    let err = s.shape("ops", &e, "t").await.unwrap_err();
    assert!(
        matches!(err, ShapeError::Policy(PolicyError::Trap { .. })),
        "{err:?}"
    );
    // Re-drive after swapping in a fixed shaper under the same name: delivered.
    s.put("ops", wasm(policy_artifacts::WEBHOOK_SHAPER), None)
        .await
        .unwrap();
    let d = s.shape("ops", &e, "t").await.unwrap().unwrap();
    assert_eq!(std::str::from_utf8(&d.body).unwrap(), seed(&e));
}

#[tokio::test]
async fn forbidden_headers_are_dropped_and_named() {
    let s = shapers().await;
    s.put(
        "headers",
        wasm(policy_artifacts::BROKEN_SHAPER),
        Some("headers".into()),
    )
    .await
    .unwrap();
    let d = s
        .shape("headers", &violation(), "t")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.headers.len(), 1, "{:?}", d.headers);
    assert_eq!(d.headers["x-team"], "team-a");
    assert_eq!(
        d.dropped_headers,
        [
            "authorization",
            "connection",
            "host",
            "transfer-encoding",
            "cookie",
            "webhook-signature"
        ]
    );
}

#[tokio::test]
async fn runaway_and_refused_answers_fail_the_event() {
    let s = shapers().await;
    for mode in ["loop", "huge", "bad-header", "skip"] {
        s.put(
            mode,
            wasm(policy_artifacts::BROKEN_SHAPER),
            Some(mode.into()),
        )
        .await
        .unwrap();
    }
    let e = violation();
    let r = s.shape("loop", &e, "t").await;
    assert!(
        matches!(r, Err(ShapeError::Policy(PolicyError::Timeout { .. }))),
        "{r:?}"
    );
    let r = s.shape("huge", &e, "t").await;
    assert!(
        matches!(&r, Err(ShapeError::Invalid(m)) if m.contains("body")),
        "{r:?}"
    );
    let r = s.shape("bad-header", &e, "t").await;
    assert!(
        matches!(&r, Err(ShapeError::Invalid(m)) if m.contains("header name")),
        "{r:?}"
    );
    // None: the shaper chose not to deliver; not an error.
    assert!(s.shape("skip", &e, "t").await.unwrap().is_none());
    // The host still serves good calls afterwards.
    assert!(s.shape(DEFAULT_SHAPER, &e, "t").await.unwrap().is_some());
}

#[tokio::test]
async fn unknown_shapers_bad_events_and_bad_components() {
    let s = shapers().await;
    let e = violation();
    assert!(matches!(
        s.shape("nope", &e, "t").await,
        Err(ShapeError::UnknownShaper(n)) if n == "nope"
    ));
    let mut bad = violation();
    bad.details_json = "{not json".into();
    assert!(matches!(
        s.shape(DEFAULT_SHAPER, &bad, "t").await,
        Err(ShapeError::Invalid(_))
    ));
    let r = s
        .put(DEFAULT_SHAPER, Arc::from(&b"not wasm"[..]), None)
        .await;
    assert!(matches!(r, Err(PolicyError::Compile(_))), "{r:?}");
    let r = s
        .put(DEFAULT_SHAPER, wasm(policy_artifacts::RULES_ROUTER), None)
        .await;
    assert!(matches!(r, Err(PolicyError::WrongWorld { .. })), "{r:?}");
    // Failed loads replace nothing.
    assert_eq!(s.list().len(), 1);
    assert!(s.shape(DEFAULT_SHAPER, &e, "t").await.unwrap().is_some());
}

#[tokio::test]
async fn a_held_version_keeps_shaping_after_a_swap() {
    let s = shapers().await;
    let held = s.get(DEFAULT_SHAPER).unwrap();
    let before = s.list();
    s.put(DEFAULT_SHAPER, wasm(policy_artifacts::BROKEN_SHAPER), None)
        .await
        .unwrap();
    let after = s.list();
    assert_eq!(after.len(), 1);
    assert_ne!(before[0].sha256, after[0].sha256);
    assert_eq!(
        after[0].size,
        std::fs::metadata(policy_artifacts::BROKEN_SHAPER)
            .unwrap()
            .len() as usize
    );
    let e = violation();
    assert!(held.shape(&e, "t").await.unwrap().is_some());
    assert!(matches!(
        s.shape(DEFAULT_SHAPER, &e, "t").await,
        Err(ShapeError::Policy(PolicyError::Trap { .. }))
    ));
}

//! The built-in webhook shaper: delivers every event as is, in the seed's JSON shape
//!
//! ```json
//! {"event": kind, "timestamp": …, "request_id": …|null, "details": {…},
//!  "metadata": {"team_id": …|null, "user_id": …|null}}
//! ```
//!
//! as `application/json`, with no extra headers. The host already holds `details` as JSON text
//! (`details-json`, one JSON value it serialized itself), so it is embedded byte for byte, not
//! re-parsed: the body is exactly what the host's own serialization of the event would be.
//! Empty `request-id`, `team-id`, `user-id` (absent) become `null`.
//!
//! The logic ([`seed_body`]) is plain Rust tested natively; the glue below converts the WIT
//! types.

use std::fmt::Write as _;

/// An event's fields, as the WIT `event` record carries them.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    pub kind: &'a str,
    pub timestamp: &'a str,
    pub request_id: &'a str,
    pub details_json: &'a str,
    pub team_id: &'a str,
    pub user_id: &'a str,
}

/// The seed-shaped JSON body of an event.
pub fn seed_body(e: Fields<'_>) -> String {
    let mut out = String::with_capacity(
        96 + e.kind.len()
            + e.timestamp.len()
            + e.request_id.len()
            + e.details_json.len()
            + e.team_id.len()
            + e.user_id.len(),
    );
    out.push_str("{\"event\":");
    string(&mut out, e.kind);
    out.push_str(",\"timestamp\":");
    string(&mut out, e.timestamp);
    out.push_str(",\"request_id\":");
    optional(&mut out, e.request_id);
    out.push_str(",\"details\":");
    let details = e.details_json.trim();
    out.push_str(if details.is_empty() { "null" } else { details });
    out.push_str(",\"metadata\":{\"team_id\":");
    optional(&mut out, e.team_id);
    out.push_str(",\"user_id\":");
    optional(&mut out, e.user_id);
    out.push_str("}}");
    out
}

/// `null` for an empty string, else the string.
fn optional(out: &mut String, s: &str) {
    if s.is_empty() {
        out.push_str("null");
    } else {
        string(out, s);
    }
}

/// A JSON string literal, escaped the way serde_json escapes (so the body matches the host's
/// own serialization byte for byte).
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(target_arch = "wasm32")]
mod component {
    use sovereign_policy_sdk::webhook::{Delivery, Event, WebhookShaper};

    use crate::{Fields, seed_body};

    struct AsIs;

    impl WebhookShaper for AsIs {
        fn shape(e: Event, _target: String) -> Option<Delivery> {
            Some(Delivery::json(seed_body(Fields {
                kind: &e.kind,
                timestamp: &e.timestamp,
                request_id: &e.request_id,
                details_json: &e.details_json,
                team_id: &e.team_id,
                user_id: &e.user_id,
            })))
        }
    }

    sovereign_policy_sdk::export_webhook_shaper!(AsIs);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(details: &'a str, request: &'a str, team: &'a str) -> Fields<'a> {
        Fields {
            kind: "guardrail.violation",
            timestamp: "2025-01-31T12:00:00.000Z",
            request_id: request,
            details_json: details,
            team_id: team,
            user_id: "",
        }
    }

    #[test]
    fn the_seed_shape_with_details_embedded_as_is() {
        let body = seed_body(fields(
            r#"{"violation_type":"pii_detected","entities":["email"],"action_taken":"request_blocked"}"#,
            "req-1",
            "team-a",
        ));
        assert_eq!(
            body,
            concat!(
                r#"{"event":"guardrail.violation","timestamp":"2025-01-31T12:00:00.000Z","#,
                r#""request_id":"req-1","details":{"violation_type":"pii_detected","#,
                r#""entities":["email"],"action_taken":"request_blocked"},"#,
                r#""metadata":{"team_id":"team-a","user_id":null}}"#
            )
        );
    }

    #[test]
    fn absent_fields_are_null() {
        let body = seed_body(fields("", "", ""));
        assert_eq!(
            body,
            r#"{"event":"guardrail.violation","timestamp":"2025-01-31T12:00:00.000Z","request_id":null,"details":null,"metadata":{"team_id":null,"user_id":null}}"#
        );
    }

    #[test]
    fn strings_are_escaped_like_serde_json() {
        let mut out = String::new();
        string(&mut out, "a\"b\\c\nd\u{1}e\u{7f}é\u{2028}");
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001e\u{7f}é\u{2028}\"");
    }
}

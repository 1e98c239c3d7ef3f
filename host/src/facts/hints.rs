//! Routing hints a client may send: the routing profile (`routing.profile`, else
//! `routing_preference`) and the data classification (`X-Data-Classification`, else
//! `routing.classification`). Read and checked here; what they mean is the router's business.

use serde_json::{Map, Value};

use super::FactsError;

/// Body fields the gateway reads and the upstream must not see.
pub const GATEWAY_FIELDS: &[&str] = &["routing", "routing_preference"];

/// The request header carrying the data classification.
pub const CLASSIFICATION_HEADER: &str = "x-data-classification";

/// Longest classification accepted, in bytes.
const MAX_CLASSIFICATION_BYTES: usize = 64;

/// How the router should trade cost against speed when no rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Cost,
    Performance,
    Balanced,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::Cost, Profile::Performance, Profile::Balanced];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Cost => "cost",
            Profile::Performance => "performance",
            Profile::Balanced => "balanced",
        }
    }

    fn parse(param: &str, v: &Value) -> Result<Option<Profile>, FactsError> {
        let s = match v {
            Value::Null => return Ok(None),
            Value::String(s) => s.as_str(),
            _ => {
                return Err(FactsError::invalid(
                    param,
                    format!("Invalid type for '{param}': expected a string."),
                ));
            }
        };
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .map(Some)
            .ok_or_else(|| {
                FactsError::invalid(
                    param,
                    format!(
                        "Invalid value for '{param}': '{}'. Supported values are: cost, performance, balanced.",
                        shorten(s)
                    ),
                )
            })
    }
}

/// The `routing` object, when present (`null` counts as absent).
fn routing_object(body: &Map<String, Value>) -> Result<Option<&Map<String, Value>>, FactsError> {
    match body.get("routing") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(FactsError::invalid(
            "routing",
            "Invalid type for 'routing': expected an object.",
        )),
    }
}

/// The routing profile: `routing.profile` wins over `routing_preference` when both are present.
/// Both are checked whenever present, so a bad value is a 400 even when the other one wins.
pub fn profile(body: &Map<String, Value>) -> Result<Option<Profile>, FactsError> {
    let nested = match routing_object(body)?.and_then(|r| r.get("profile")) {
        Some(v) => Profile::parse("routing.profile", v)?,
        None => None,
    };
    let flat = match body.get("routing_preference") {
        Some(v) => Profile::parse("routing_preference", v)?,
        None => None,
    };
    Ok(nested.or(flat))
}

/// The data classification: the `X-Data-Classification` header wins over the body's
/// `routing.classification`. A label of 1–64 bytes of ASCII letters, digits, `.`, `_`, `-`,
/// lower-cased (`Confidential` and `confidential` are one class).
pub fn classification(
    body: &Map<String, Value>,
    header: Option<&[u8]>,
) -> Result<Option<String>, FactsError> {
    if let Some(raw) = header {
        let param = "X-Data-Classification";
        return match std::str::from_utf8(raw) {
            Ok(s) => check_label(param, s.trim()).map(Some),
            Err(_) => Err(FactsError::invalid(
                param,
                format!("Invalid value for '{param}': expected ASCII text."),
            )),
        };
    }
    let param = "routing.classification";
    match routing_object(body)?.and_then(|r| r.get("classification")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => check_label(param, s).map(Some),
        Some(_) => Err(FactsError::invalid(
            param,
            format!("Invalid type for '{param}': expected a string."),
        )),
    }
}

fn check_label(param: &str, s: &str) -> Result<String, FactsError> {
    let ok = !s.is_empty()
        && s.len() <= MAX_CLASSIFICATION_BYTES
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(FactsError::invalid(
            param,
            format!(
                "Invalid value for '{param}': expected 1-{MAX_CLASSIFICATION_BYTES} letters, digits, '.', '_' or '-'."
            ),
        ))
    }
}

/// Client text echoed in an error message is cut to a few characters.
fn shorten(s: &str) -> String {
    const MAX: usize = 40;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn routing_profile_wins_over_routing_preference() {
        let b = body(json!({"routing": {"profile": "cost"}, "routing_preference": "performance"}));
        assert_eq!(profile(&b).unwrap(), Some(Profile::Cost));
        let b = body(json!({"routing_preference": "performance"}));
        assert_eq!(profile(&b).unwrap(), Some(Profile::Performance));
        let b = body(json!({"routing": {"profile": "balanced"}}));
        assert_eq!(profile(&b).unwrap(), Some(Profile::Balanced));
        // `routing` without a profile, or nulls, leave the preference in charge.
        let b = body(json!({"routing": {}, "routing_preference": "cost"}));
        assert_eq!(profile(&b).unwrap(), Some(Profile::Cost));
        let b = body(json!({"routing": {"profile": null}, "routing_preference": "cost"}));
        assert_eq!(profile(&b).unwrap(), Some(Profile::Cost));
        let b = body(json!({"routing": null, "routing_preference": null}));
        assert_eq!(profile(&b).unwrap(), None);
        assert_eq!(profile(&body(json!({}))).unwrap(), None);
    }

    #[test]
    fn bad_hints_name_their_parameter() {
        let cases = [
            (json!({"routing": {"profile": "fast"}}), "routing.profile"),
            (json!({"routing": {"profile": "Cost"}}), "routing.profile"),
            (json!({"routing": {"profile": 1}}), "routing.profile"),
            (json!({"routing": "cost"}), "routing"),
            (json!({"routing": ["cost"]}), "routing"),
            (json!({"routing_preference": "cheap"}), "routing_preference"),
            (json!({"routing_preference": true}), "routing_preference"),
            (
                json!({"routing_preference": {"profile": "cost"}}),
                "routing_preference",
            ),
            // The winner is valid, the loser is not: still a 400.
            (
                json!({"routing": {"profile": "cost"}, "routing_preference": "x"}),
                "routing_preference",
            ),
        ];
        for (b, param) in cases {
            let e = profile(&body(b.clone())).unwrap_err();
            assert_eq!(e.param(), param, "{b}");
            assert!(e.to_string().contains(param), "{b}: {e}");
        }
        let long = "x".repeat(500);
        let e = profile(&body(json!({ "routing_preference": long }))).unwrap_err();
        assert!(e.to_string().len() < 200, "{e}");
    }

    #[test]
    fn classification_header_wins_and_is_checked() {
        let b = body(json!({"routing": {"classification": "public"}}));
        assert_eq!(
            classification(&b, Some(b" Confidential "))
                .unwrap()
                .as_deref(),
            Some("confidential")
        );
        assert_eq!(classification(&b, None).unwrap().as_deref(), Some("public"));
        assert_eq!(classification(&body(json!({})), None).unwrap(), None);
        for (b, h, param) in [
            (json!({}), Some(&b""[..]), "X-Data-Classification"),
            (json!({}), Some(&b"top secret"[..]), "X-Data-Classification"),
            (json!({}), Some(&b"\xff"[..]), "X-Data-Classification"),
            (
                json!({"routing": {"classification": 3}}),
                None,
                "routing.classification",
            ),
            (
                json!({"routing": {"classification": "a/b"}}),
                None,
                "routing.classification",
            ),
        ] {
            let e = classification(&body(b.clone()), h).unwrap_err();
            assert_eq!(e.param(), param, "{b} {h:?}");
        }
    }
}

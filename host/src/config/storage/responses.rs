//! `[responses]`: how long the Responses API's stored responses are kept (`store: true`, the
//! default) before the background purge removes them.

use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawResponses {
    retention_hours: u64,
}

impl Default for RawResponses {
    fn default() -> Self {
        // OpenAI keeps stored responses 30 days; so does the gateway unless told otherwise.
        RawResponses {
            retention_hours: 30 * 24,
        }
    }
}

/// `[responses]`, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponsesConfig {
    pub retention: Duration,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        ResponsesConfig {
            retention: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

pub(in crate::config) fn validate(
    r: &RawResponses,
    err: &mut impl FnMut(String, &str),
) -> ResponsesConfig {
    if r.retention_hours == 0 || r.retention_hours > 24 * 3650 {
        err(
            "responses.retention_hours".into(),
            "must be between 1 and 87600 (ten years)",
        );
    }
    ResponsesConfig {
        retention: Duration::from_secs(r.retention_hours.clamp(1, 24 * 3650) * 3600),
    }
}

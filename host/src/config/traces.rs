//! `[traces]`: OpenTelemetry traces over OTLP/HTTP (docs/OPERATIONS.md, "Traces"). Off unless
//! this section names an endpoint or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables are set (`crate::traces`).

use serde::Deserialize;

/// `[traces]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawTraces {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); `/v1/traces` is added.
    otlp_endpoint: Option<String>,
    /// `service.name` of the spans (else `OTEL_SERVICE_NAME`, else `sovereign-gateway`).
    service_name: Option<String>,
}

/// `[traces]`, validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TracesConfig {
    pub otlp_endpoint: Option<String>,
    pub service_name: Option<String>,
}

pub(super) fn validate(t: RawTraces, err: &mut impl FnMut(String, &str)) -> TracesConfig {
    if let Some(e) = &t.otlp_endpoint
        && !url::Url::parse(e).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
    {
        err(
            "traces.otlp_endpoint".into(),
            "must be an http:// or https:// URL",
        );
    }
    if t.service_name
        .as_ref()
        .is_some_and(|s| s.is_empty() || s.len() > 128)
    {
        err("traces.service_name".into(), "must be 1 to 128 bytes");
    }
    TracesConfig {
        otlp_endpoint: t.otlp_endpoint,
        service_name: t.service_name,
    }
}

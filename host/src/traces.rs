//! OpenTelemetry traces over OTLP/HTTP (docs/OPERATIONS.md, "Traces"): one span per request
//! (`request`) with a child per step — `authenticate`, `guardrail`, `route`, `upstream` (one per
//! attempt), `journal.append`. Off by default; on when `[traces] otlp_endpoint` or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and neither
//! `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none`). The exporter reads the other
//! standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TIMEOUT`, `OTEL_BSP_*`,
//! `OTEL_TRACES_SAMPLER`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`).
//!
//! A client's W3C `traceparent` is continued; without one, the trace id **is** the request id
//! (`X-Audit-Trace-ID` and the journal entry's `request_id` are `req-` + the same 32 hex
//! digits), so an operator goes from a trace to its audit record and back. Every span carries
//! `sovereign.request_id` as well. The upstream call sends its span's `traceparent`.

use std::borrow::Cow;
use std::cell::Cell;

use http::{HeaderMap, HeaderValue};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{
    SpanKind, Status, TraceContextExt as _, TraceId, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SdkTracer, SdkTracerProvider};

use crate::config::TracesConfig;

/// The exporter and the tracer; `None` in the app state when traces are off.
#[derive(Clone, Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Traces {
    /// The exporter, when traces are configured (see the module docs). Blocking (it makes a
    /// blocking HTTP client): call off the runtime.
    pub fn start(config: &TracesConfig) -> anyhow::Result<Option<Traces>> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let from_env = env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some();
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v == "none");
        if disabled || (config.otlp_endpoint.is_none() && !from_env) {
            return Ok(None);
        }
        // The batch processor exports from its own thread, with reqwest's blocking client.
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
        if let Some(base) = &config.otlp_endpoint {
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let mut resource = Resource::builder();
        if env("OTEL_SERVICE_NAME").is_none() {
            let name = config
                .service_name
                .as_deref()
                .unwrap_or("sovereign-gateway");
            resource = resource.with_service_name(name.to_string());
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter.build()?)
            .with_id_generator(RequestIds)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("sovereign");
        tracing::info!("OpenTelemetry traces on (OTLP/HTTP)");
        Ok(Some(Traces { provider, tracer }))
    }

    /// A request's root span: the client's `traceparent` continued, else a new trace whose id is
    /// the request id's.
    pub fn request(&self, headers: &HeaderMap, request_id: &str, name: &'static str) -> Trace {
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
        let builder = self
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes([KeyValue::new(
                "sovereign.request_id",
                request_id.to_string(),
            )]);
        let span = if parent.span().span_context().is_valid() {
            builder.start_with_context(&self.tracer, &parent)
        } else {
            NEXT_TRACE_ID.set(trace_id_of(request_id));
            let span = builder.start_with_context(&self.tracer, &Context::new());
            NEXT_TRACE_ID.set(None);
            span
        };
        Trace {
            tracer: self.tracer.clone(),
            cx: Context::new().with_span(span),
            request_id: request_id.to_string().into(),
        }
    }

    /// Exports what is still buffered (blocking: call off the runtime).
    pub fn shut_down(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "flushing the last traces failed");
        }
    }
}

/// One request's trace: its root span, and the spans of its steps. Cheap to clone; a span ends
/// when the last clone holding it is dropped (a stream's root: when the stream ends).
#[derive(Clone, Debug)]
pub struct Trace {
    tracer: SdkTracer,
    cx: Context,
    request_id: std::sync::Arc<str>,
}

impl Trace {
    /// A child span of this one, started now; it ends when dropped.
    pub fn child(&self, name: &'static str) -> Trace {
        let span = self
            .tracer
            .span_builder(name)
            .with_kind(if name == "upstream" {
                SpanKind::Client
            } else {
                SpanKind::Internal
            })
            .with_attributes([KeyValue::new(
                "sovereign.request_id",
                self.request_id.to_string(),
            )])
            .start_with_context(&self.tracer, &self.cx);
        Trace {
            tracer: self.tracer.clone(),
            cx: self.cx.with_span(span),
            request_id: self.request_id.clone(),
        }
    }

    pub fn set(&self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        self.cx.span().set_attribute(KeyValue::new(key, value));
    }

    /// Marks the span failed, with a reason.
    pub fn fail(&self, reason: impl Into<Cow<'static, str>>) {
        self.cx.span().set_status(Status::error(reason));
    }

    /// The W3C `traceparent` naming this span, for the next hop.
    pub fn traceparent(&self) -> Option<HeaderValue> {
        let mut headers = HeaderMap::new();
        TraceContextPropagator::new().inject_context(&self.cx, &mut HeaderInjector(&mut headers));
        headers.remove("traceparent")
    }
}

/// The 128 bits of a request id (`req-` + 32 hex digits).
fn trace_id_of(request_id: &str) -> Option<TraceId> {
    let hex = request_id.strip_prefix("req-")?;
    let id = u128::from_str_radix(hex, 16).ok()?;
    (id != 0).then(|| TraceId::from(id))
}

thread_local! {
    /// The trace id [`RequestIds`] hands out next on this thread (set around a root span's
    /// start, which asks for it synchronously).
    static NEXT_TRACE_ID: Cell<Option<TraceId>> = const { Cell::new(None) };
}

/// Trace ids from the request id when one is waiting (a root span), random otherwise.
#[derive(Debug)]
struct RequestIds;

impl IdGenerator for RequestIds {
    fn new_trace_id(&self) -> TraceId {
        NEXT_TRACE_ID
            .take()
            .unwrap_or_else(|| RandomIdGenerator::default().new_trace_id())
    }

    fn new_span_id(&self) -> opentelemetry::trace::SpanId {
        RandomIdGenerator::default().new_span_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_is_a_trace_id() {
        let id = trace_id_of("req-019a2b3c4d5e7f000000000000000001").unwrap();
        assert_eq!(id.to_string(), "019a2b3c4d5e7f000000000000000001");
        assert!(trace_id_of("nope").is_none());
        assert!(trace_id_of("req-00000000000000000000000000000000").is_none());
    }
}

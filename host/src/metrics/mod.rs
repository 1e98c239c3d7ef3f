//! What `GET /metrics` exposes, in the Prometheus text format (the `prometheus` crate's encoder):
//! the process counters below (requests and streams in flight, streams abandoned by their
//! clients, journal entries and failed appends, fallbacks and breakers, webhook deliveries by
//! outcome, TLS, the shared back end), and the labelled families of [`labelled`] (requests by
//! route, team, model and outcome; latency histograms; tokens and spend; refusals, guardrail
//! actions, hot swaps, upstream health). docs/OPERATIONS.md lists them all.

pub mod labelled;
pub mod recent;

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus::proto::{Counter, Gauge, Metric, MetricFamily, MetricType};
use prometheus::{Encoder as _, TextEncoder};

pub use labelled::Labelled;

#[derive(Debug, Default)]
pub struct Metrics {
    /// The labelled families (their own registry).
    pub by: Labelled,
    /// The last hours of model traffic per minute (`GET /v1/admin/traffic`; not exposed here).
    pub recent: recent::Recent,
    pub requests_total: AtomicU64,
    pub unauthenticated_total: AtomicU64,
    pub requests_inflight: AtomicU64,
    pub streams_active: AtomicU64,
    pub streams_completed: AtomicU64,
    pub streams_client_gone: AtomicU64,
    pub streams_upstream_failed: AtomicU64,
    pub upstream_errors_total: AtomicU64,
    pub rate_limited_total: AtomicU64,
    pub budget_refused_total: AtomicU64,
    pub journal_entries_total: AtomicU64,
    pub journal_append_failures_total: AtomicU64,
    /// MCP tool calls answered by an upstream, refused by the gateway, failed upstream.
    pub mcp_tool_calls_total: AtomicU64,
    pub mcp_tool_calls_refused_total: AtomicU64,
    pub mcp_tool_calls_failed_total: AtomicU64,
    /// MCP prompt and resource reads (`prompts/get`, `resources/read`), the same three ways.
    pub mcp_reads_total: AtomicU64,
    pub mcp_reads_refused_total: AtomicU64,
    pub mcp_reads_failed_total: AtomicU64,
    pub fallbacks_total: AtomicU64,
    pub breakers_open: AtomicU64,
    pub breaker_trips_total: AtomicU64,
    pub webhook_delivered_total: AtomicU64,
    pub webhook_failed_attempts_total: AtomicU64,
    pub webhook_dead_total: AtomicU64,
    pub webhook_skipped_total: AtomicU64,
    pub tls_handshakes_total: AtomicU64,
    pub tls_handshake_failures_total: AtomicU64,
    pub tls_handshake_timeouts_total: AtomicU64,
    pub tls_reloads_total: AtomicU64,
    pub tls_reload_failures_total: AtomicU64,
    /// 1 while the last reload attempt failed (the previous material is still in force).
    pub tls_reload_failing: AtomicU64,
    pub tls_server_cert_not_after_seconds: AtomicU64,
    pub shared_failures_total: AtomicU64,
    pub shared_fail_open_total: AtomicU64,
    pub shared_publish_failures_total: AtomicU64,
    pub shared_changes_received_total: AtomicU64,
    pub shared_budget_acquires_total: AtomicU64,
    pub shared_budget_draws_total: AtomicU64,
    /// The ingestion queue (issue 44): waiting and running documents, the oldest one's age and
    /// the queued bytes (every replica's, read from the store every few seconds); documents
    /// ended here and chunks embedded here (throughput).
    pub ingest_queued: AtomicU64,
    pub ingest_running: AtomicU64,
    pub ingest_oldest_age_seconds: AtomicU64,
    pub ingest_queued_bytes: AtomicU64,
    pub ingest_completed_total: AtomicU64,
    pub ingest_failed_total: AtomicU64,
    pub ingest_chunks_total: AtomicU64,
}

/// One exposed series: name, type, help text, value.
pub(crate) type Series<'a> = (&'static str, &'static str, &'static str, &'a AtomicU64);

/// A process counter (or gauge) as the encoder's family of one unlabelled series.
pub(crate) fn family((name, kind, help, v): &Series<'_>) -> MetricFamily {
    let value = v.load(Ordering::Relaxed) as f64;
    let mut m = Metric::default();
    let mut f = MetricFamily::default();
    if *kind == "gauge" {
        let mut g = Gauge::default();
        g.set_value(value);
        m.set_gauge(g);
        f.set_field_type(MetricType::GAUGE);
    } else {
        let mut c = Counter::default();
        c.set_value(value);
        m.set_counter(c);
        f.set_field_type(MetricType::COUNTER);
    }
    f.set_name((*name).to_string());
    f.set_help((*help).to_string());
    f.set_metric(vec![m]);
    f
}

impl Metrics {
    /// The text exposition format: `# HELP`, `# TYPE` and the value of every series, then the
    /// families of the parts that count for themselves (`more`: the embedding engine's).
    pub fn render(&self, more: Vec<MetricFamily>) -> String {
        let mut families: Vec<MetricFamily> = self.series().iter().map(family).collect();
        families.extend(self.by.gather());
        families.extend(more);
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&families, &mut out) {
            tracing::error!(error = %e, "metrics could not be encoded");
        }
        String::from_utf8(out).unwrap_or_default()
    }

    /// Every series, in the order exposed.
    fn series(&self) -> [Series<'_>; 45] {
        [
            (
                "sovereign_ingest_queued",
                "gauge",
                "Uploaded documents waiting in the ingestion queue (all replicas)",
                &self.ingest_queued,
            ),
            (
                "sovereign_ingest_running",
                "gauge",
                "Documents being ingested (all replicas)",
                &self.ingest_running,
            ),
            (
                "sovereign_ingest_oldest_age_seconds",
                "gauge",
                "Age of the oldest unfinished document in the ingestion queue",
                &self.ingest_oldest_age_seconds,
            ),
            (
                "sovereign_ingest_queued_bytes",
                "gauge",
                "Bytes of unfinished documents in the ingestion queue",
                &self.ingest_queued_bytes,
            ),
            (
                "sovereign_ingest_completed_total",
                "counter",
                "Documents this gateway ingested to completion",
                &self.ingest_completed_total,
            ),
            (
                "sovereign_ingest_failed_total",
                "counter",
                "Documents whose ingestion failed here",
                &self.ingest_failed_total,
            ),
            (
                "sovereign_ingest_chunks_total",
                "counter",
                "Chunks embedded by this gateway's ingestion workers",
                &self.ingest_chunks_total,
            ),
            (
                "sovereign_shared_failures_total",
                "counter",
                "Calls to the shared state (Redis) on the request path that failed or timed out",
                &self.shared_failures_total,
            ),
            (
                "sovereign_shared_fail_open_total",
                "counter",
                "Requests limited by this replica alone because Redis failed ([shared] on_failure = \"open\")",
                &self.shared_fail_open_total,
            ),
            (
                "sovereign_shared_publish_failures_total",
                "counter",
                "Changes (revocations, team changes) other replicas could not be told of at once",
                &self.shared_publish_failures_total,
            ),
            (
                "sovereign_shared_changes_received_total",
                "counter",
                "Changes heard from other replicas (and resynchronisations)",
                &self.shared_changes_received_total,
            ),
            (
                "sovereign_shared_budget_acquires_total",
                "counter",
                "Budget reservations made in Redis (one round trip; the replica's lease renewed and its headroom refilled)",
                &self.shared_budget_acquires_total,
            ),
            (
                "sovereign_shared_budget_draws_total",
                "counter",
                "Budget reservations drawn on headroom this replica's lease already held (no round trip)",
                &self.shared_budget_draws_total,
            ),
            (
                "sovereign_tls_handshakes_total",
                "counter",
                "TLS handshakes completed",
                &self.tls_handshakes_total,
            ),
            (
                "sovereign_tls_handshake_failures_total",
                "counter",
                "TLS handshakes refused or failed (bad or missing client certificate, garbage, protocol errors)",
                &self.tls_handshake_failures_total,
            ),
            (
                "sovereign_tls_handshake_timeouts_total",
                "counter",
                "Connections cut off for not finishing the TLS handshake in time",
                &self.tls_handshake_timeouts_total,
            ),
            (
                "sovereign_tls_reloads_total",
                "counter",
                "TLS material (certificate, key, client CAs, CRLs) reloaded and in force",
                &self.tls_reloads_total,
            ),
            (
                "sovereign_tls_reload_failures_total",
                "counter",
                "TLS reloads refused because a new file was broken (the previous material stays in force)",
                &self.tls_reload_failures_total,
            ),
            (
                "sovereign_tls_reload_failing",
                "gauge",
                "1 while the newest TLS files are broken and older material is serving",
                &self.tls_reload_failing,
            ),
            (
                "sovereign_tls_server_cert_not_after_seconds",
                "gauge",
                "Expiry (Unix seconds) of the server certificate in force",
                &self.tls_server_cert_not_after_seconds,
            ),
            (
                "sovereign_rate_limited_total",
                "counter",
                "Requests refused by a request-rate or token limit (429)",
                &self.rate_limited_total,
            ),
            (
                "sovereign_budget_refused_total",
                "counter",
                "Requests refused because a budget could not cover them (429 insufficient_quota)",
                &self.budget_refused_total,
            ),
            (
                "sovereign_requests_total",
                "counter",
                "HTTP requests received",
                &self.requests_total,
            ),
            (
                "sovereign_unauthenticated_total",
                "counter",
                "Requests refused for a missing or invalid key",
                &self.unauthenticated_total,
            ),
            (
                "sovereign_requests_inflight",
                "gauge",
                "HTTP requests being handled",
                &self.requests_inflight,
            ),
            (
                "sovereign_streams_active",
                "gauge",
                "Streamed answers being relayed",
                &self.streams_active,
            ),
            (
                "sovereign_streams_completed_total",
                "counter",
                "Streamed answers relayed to the end",
                &self.streams_completed,
            ),
            (
                "sovereign_streams_client_gone_total",
                "counter",
                "Streams ended because the client disconnected",
                &self.streams_client_gone,
            ),
            (
                "sovereign_streams_upstream_failed_total",
                "counter",
                "Streams ended by an upstream failure",
                &self.streams_upstream_failed,
            ),
            (
                "sovereign_upstream_errors_total",
                "counter",
                "Upstream calls that failed before answering",
                &self.upstream_errors_total,
            ),
            (
                "sovereign_journal_entries_total",
                "counter",
                "Activity-journal entries appended (one per authenticated request)",
                &self.journal_entries_total,
            ),
            (
                "sovereign_journal_append_failures_total",
                "counter",
                "Journal appends that failed (each failed its request: alert on any)",
                &self.journal_append_failures_total,
            ),
            (
                "sovereign_mcp_tool_calls_total",
                "counter",
                "MCP tool calls answered by an upstream server",
                &self.mcp_tool_calls_total,
            ),
            (
                "sovereign_mcp_tool_calls_refused_total",
                "counter",
                "MCP tool calls refused by the gateway (not permitted, quota, policy, guardrail)",
                &self.mcp_tool_calls_refused_total,
            ),
            (
                "sovereign_mcp_tool_calls_failed_total",
                "counter",
                "MCP tool calls whose upstream server was down, too slow or malformed",
                &self.mcp_tool_calls_failed_total,
            ),
            (
                "sovereign_mcp_reads_total",
                "counter",
                "MCP prompt and resource reads answered by an upstream server",
                &self.mcp_reads_total,
            ),
            (
                "sovereign_mcp_reads_refused_total",
                "counter",
                "MCP prompt and resource reads refused by the gateway (not permitted, guardrail)",
                &self.mcp_reads_refused_total,
            ),
            (
                "sovereign_mcp_reads_failed_total",
                "counter",
                "MCP prompt and resource reads whose upstream server was down, too slow or malformed",
                &self.mcp_reads_failed_total,
            ),
            (
                "sovereign_fallbacks_total",
                "counter",
                "Requests handed from a failed (or out-of-rotation) model to a fallback",
                &self.fallbacks_total,
            ),
            (
                "sovereign_model_breakers_open",
                "gauge",
                "Models whose circuit breaker is open or half-open (out of rotation)",
                &self.breakers_open,
            ),
            (
                "sovereign_model_breaker_trips_total",
                "counter",
                "Times a model's circuit breaker opened (repeated failures, or a failed probe)",
                &self.breaker_trips_total,
            ),
            (
                "sovereign_webhook_delivered_total",
                "counter",
                "Webhook deliveries accepted (2xx) by their receiver",
                &self.webhook_delivered_total,
            ),
            (
                "sovereign_webhook_failed_attempts_total",
                "counter",
                "Webhook attempts that failed and will be retried",
                &self.webhook_failed_attempts_total,
            ),
            (
                "sovereign_webhook_dead_total",
                "counter",
                "Webhook deliveries sent to the dead-letter queue",
                &self.webhook_dead_total,
            ),
            (
                "sovereign_webhook_skipped_total",
                "counter",
                "Webhook deliveries a shaper chose not to send",
                &self.webhook_skipped_total,
            ),
        ]
    }

    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dec(counter: &AtomicU64) {
        counter.fetch_sub(1, Ordering::Relaxed);
    }
}

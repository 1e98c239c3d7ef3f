//! The labelled families of `/metrics`: requests by route, team, model, policy and outcome;
//! latency histograms (total, upstream, gateway overhead, time to first token, policy calls,
//! journal appends); tokens and spend by team and model; refusals, guardrail actions,
//! fallbacks, hot swaps and upstream health. docs/OPERATIONS.md says what each means.
//!
//! Every label value comes from a bounded set: route names from the route table, teams and
//! models from the configuration and the admin API, error types from the gateway's own error
//! kinds. Nothing per request (ids, prompts, client-chosen model names) becomes a label.

use std::time::Duration;

use prometheus::core::Collector;
use prometheus::proto::MetricFamily;
use prometheus::{
    CounterVec, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// Buckets (seconds) of whole requests and upstream calls: 0.5 ms to 2 min.
const REQUEST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
];
/// Buckets (seconds) of what the gateway adds and of its own steps: 10 µs to 1 s.
const OVERHEAD_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 1.0,
];

/// The labels of one finished request (`sovereign_http_requests_total`).
#[derive(Debug, Clone, Copy)]
pub struct RequestLabels<'a> {
    /// The operation (`chat.completions`, `embeddings`, ...; `other` off the route table).
    pub route: &'a str,
    /// Empty when the request was not authenticated.
    pub team: &'a str,
    /// The model (or alias, or routing policy) the client asked for, when it was known.
    pub model: &'a str,
    /// The model that served (or failed last).
    pub routed_model: &'a str,
    /// The routing policy that chose it.
    pub policy: &'a str,
    /// `2xx`, `4xx`, `5xx`.
    pub status: &'a str,
    /// The OpenAI error `type` of a refusal (empty on success).
    pub error_type: &'a str,
}

#[derive(Debug, Clone)]
pub struct Labelled {
    registry: Registry,
    requests: IntCounterVec,
    request_seconds: HistogramVec,
    upstream_seconds: HistogramVec,
    overhead_seconds: HistogramVec,
    first_token_seconds: HistogramVec,
    policy_seconds: HistogramVec,
    journal_append_seconds: Histogram,
    tokens: IntCounterVec,
    spend: CounterVec,
    limit_refusals: IntCounterVec,
    budget_refusals: IntCounterVec,
    guardrail_actions: IntCounterVec,
    fallbacks: IntCounterVec,
    policy_swaps: IntCounterVec,
    upstream_up: IntGaugeVec,
}

impl Default for Labelled {
    #[expect(
        clippy::expect_used,
        reason = "the families are constants: a bad name or a duplicate fails every test at start"
    )]
    fn default() -> Self {
        let registry = Registry::new();
        // Every family is registered once, here; the registry keeps a clone (they share state).
        let registered = |c: Box<dyn Collector>| registry.register(c).expect("unique metric");
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
            registered(Box::new(c.clone()));
            c
        };
        let histogram = |name: &str, help: &str, labels: &[&str], buckets: &[f64]| {
            let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
            let h = HistogramVec::new(opts, labels).expect("valid metric");
            registered(Box::new(h.clone()));
            h
        };
        let requests = counter(
            "sovereign_http_requests_total",
            "Requests answered, by operation, team, model asked for, model that served, routing policy, status class and error type",
            &[
                "route",
                "team",
                "model",
                "routed_model",
                "policy",
                "status",
                "error_type",
            ],
        );
        let request_seconds = histogram(
            "sovereign_request_duration_seconds",
            "Time from the request's arrival to its answer (a stream's: to its end)",
            &["route", "routed_model"],
            REQUEST_BUCKETS,
        );
        let upstream_seconds = histogram(
            "sovereign_upstream_duration_seconds",
            "Time spent waiting on upstreams per request (every attempt; a stream's: to its headers)",
            &["routed_model"],
            REQUEST_BUCKETS,
        );
        let overhead_seconds = histogram(
            "sovereign_gateway_overhead_seconds",
            "What the gateway added to a whole (non-streamed) answer: total time minus upstream time",
            &["route"],
            OVERHEAD_BUCKETS,
        );
        let first_token_seconds = histogram(
            "sovereign_time_to_first_token_seconds",
            "Time from a streamed request's arrival to its first content sent to the client",
            &["routed_model"],
            REQUEST_BUCKETS,
        );
        let policy_seconds = histogram(
            "sovereign_policy_call_duration_seconds",
            "Time of one call into a Wasm policy, by kind (router, guardrail_input, guardrail_output, shaper)",
            &["kind"],
            OVERHEAD_BUCKETS,
        );
        let journal_append_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "sovereign_journal_append_duration_seconds",
                "Time to append one activity-journal entry (durable: until it is on disk)",
            )
            .buckets(OVERHEAD_BUCKETS.to_vec()),
        )
        .expect("valid metric");
        registered(Box::new(journal_append_seconds.clone()));
        let tokens = counter(
            "sovereign_tokens_total",
            "Tokens read (direction=\"in\") and written (\"out\") by models, by team and model",
            &["team", "routed_model", "direction"],
        );
        let spend = CounterVec::new(
            Opts::new(
                "sovereign_spend_usd_total",
                "Spend at the configured model prices (US dollars), by team and model",
            ),
            &["team", "routed_model"],
        )
        .expect("valid metric");
        registered(Box::new(spend.clone()));
        let limit_refusals = counter(
            "sovereign_limit_refusals_total",
            "Requests refused by a limit, by team (empty: per-address limit) and limit",
            &["team", "limit"],
        );
        let budget_refusals = counter(
            "sovereign_budget_refusals_total",
            "Requests refused because a team's or key's budget could not cover them",
            &["team"],
        );
        let guardrail_actions = counter(
            "sovereign_guardrail_actions_total",
            "Guardrail decisions that changed something, by stage (input, output) and action (blocked, redacted, flagged)",
            &["stage", "action"],
        );
        let fallbacks = counter(
            "sovereign_fallbacks_by_model_total",
            "Fallbacks from one model to another",
            &["from", "to"],
        );
        let policy_swaps = counter(
            "sovereign_policy_swaps_total",
            "Wasm policies activated at run time (hot swaps), by kind (router, guardrail, shaper, tool, retrieval)",
            &["kind"],
        );
        let upstream_up = IntGaugeVec::new(
            Opts::new(
                "sovereign_upstream_up",
                "1 while a model is in rotation, 0 while its circuit breaker is open",
            ),
            &["model"],
        )
        .expect("valid metric");
        registered(Box::new(upstream_up.clone()));
        Labelled {
            registry,
            requests,
            request_seconds,
            upstream_seconds,
            overhead_seconds,
            first_token_seconds,
            policy_seconds,
            journal_append_seconds,
            tokens,
            spend,
            limit_refusals,
            budget_refusals,
            guardrail_actions,
            fallbacks,
            policy_swaps,
            upstream_up,
        }
    }
}

impl Labelled {
    pub(super) fn gather(&self) -> Vec<MetricFamily> {
        self.registry.gather()
    }

    /// A request answered: its count, its time, and (a whole answer that reached an upstream)
    /// the upstream's share and the gateway's.
    pub fn request(
        &self,
        l: &RequestLabels<'_>,
        total: Duration,
        upstream: Option<Duration>,
        streamed: bool,
    ) {
        self.requests
            .with_label_values(&[
                l.route,
                l.team,
                l.model,
                l.routed_model,
                l.policy,
                l.status,
                l.error_type,
            ])
            .inc();
        self.request_seconds
            .with_label_values(&[l.route, l.routed_model])
            .observe(total.as_secs_f64());
        if let Some(up) = upstream {
            self.upstream_seconds
                .with_label_values(&[l.routed_model])
                .observe(up.as_secs_f64());
            if !streamed {
                self.overhead_seconds
                    .with_label_values(&[l.route])
                    .observe(total.saturating_sub(up).as_secs_f64());
            }
        }
    }

    pub fn first_token(&self, routed_model: &str, after: Duration) {
        self.first_token_seconds
            .with_label_values(&[routed_model])
            .observe(after.as_secs_f64());
    }

    /// `kind`: `router`, `guardrail_input`, `guardrail_output` or `shaper`.
    pub fn policy_call(&self, kind: &'static str, took: Duration) {
        self.policy_seconds
            .with_label_values(&[kind])
            .observe(took.as_secs_f64());
    }

    pub fn journal_append(&self, took: Duration) {
        self.journal_append_seconds.observe(took.as_secs_f64());
    }

    /// What a request consumed: tokens in and out, and their price (micro-dollars).
    pub fn usage(&self, team: &str, model: &str, tokens_in: u64, tokens_out: u64, micros: i64) {
        self.tokens
            .with_label_values(&[team, model, "in"])
            .inc_by(tokens_in);
        self.tokens
            .with_label_values(&[team, model, "out"])
            .inc_by(tokens_out);
        if micros > 0 {
            self.spend
                .with_label_values(&[team, model])
                .inc_by(micros as f64 / 1e6);
        }
    }

    /// `limit`: `rpm`, `tpm`, `tokens_per_day`, `address_rpm`, ... (docs/OPERATIONS.md).
    pub fn limit_refused(&self, team: &str, limit: &'static str) {
        self.limit_refusals.with_label_values(&[team, limit]).inc();
    }

    pub fn budget_refused(&self, team: &str) {
        self.budget_refusals.with_label_values(&[team]).inc();
    }

    /// `stage`: `input`/`output`; `action`: `blocked`, `redacted`, `flagged`.
    pub fn guardrail_action(&self, stage: &'static str, action: &'static str) {
        self.guardrail_actions
            .with_label_values(&[stage, action])
            .inc();
    }

    pub fn fallback(&self, from: &str, to: &str) {
        self.fallbacks.with_label_values(&[from, to]).inc();
    }

    /// `kind`: `router`, `guardrail`, `shaper`.
    pub fn policy_swapped(&self, kind: &'static str) {
        self.policy_swaps.with_label_values(&[kind]).inc();
    }

    pub fn upstream_up(&self, model: &str, up: bool) {
        self.upstream_up
            .with_label_values(&[model])
            .set(i64::from(up));
    }
}

//! The answer phase on a stream: the serving model's SSE relayed event by event (through the
//! guardrail's output stage when one is configured), the time to first token measured, and, when
//! the stream ends however it ended, the reservation settled, the breaker told, the stream
//! counted and `request.completed` sent.

use axum::body::Body;
use futures_util::StreamExt as _;

use super::Settle;
use crate::metrics::Metrics;
use crate::pipeline::call::Call;
use crate::pipeline::events::completed;
use crate::pipeline::fallback::Served;
use crate::pipeline::guard::{self, Shape};
use crate::server::error::ApiError;
use crate::upstream::{CountUsage, RelayOptions, StreamOutcome, StreamSummary, relay_sse};

/// Relays the serving model's stream event by event (through the guardrail's output stage when
/// one is configured); when it ends, however it ended, the reservation settles, the breaker
/// hears the outcome and `request.completed` goes out. Its charge is settled as `settle` says,
/// as a whole answer's is: durable before the last frame leaves, or queued for a stored
/// response to wait on.
pub(super) fn relay(
    call: &Call,
    served: Served,
    wants_usage: bool,
    shape: Shape,
    settle: Settle,
) -> Body {
    let Served {
        model,
        exchange,
        ticket,
        reservation,
    } = served;
    let metrics = call.app.metrics().clone();
    Metrics::inc(&metrics.streams_active);
    let opts = RelayOptions {
        request_id: call.ctx.id.to_string(),
        model: model.id.clone(),
        client_wants_usage: wants_usage,
        idle_timeout: model.timeouts.stream_idle,
        deadline: exchange.deadline,
        error_body: |e| ApiError::from(e).body(),
        messages: exchange.messages,
        count_usage: Some(CountUsage {
            prompt_tokens: reservation.prompt_tokens(),
            count: {
                let tokens = call.app.facts().shared_tokens();
                Box::new(move |text: &str| u64::from(tokens.count(text)))
            },
        }),
    };
    call.audit.stream_opened();
    // Time to first token: the first frame that reaches the client (after the guardrail).
    let mut first = Some((metrics.clone(), call.ctx.started, model.id.0.clone()));
    let first_frame = move |_: &_| {
        if let Some((metrics, started, model)) = first.take() {
            let after = started.elapsed();
            metrics.by.first_token(&model, after);
            metrics.recent.first_token(&model, after);
        }
    };
    let at_end = call.clone();
    let upstream = exchange.response.into_body();
    let stream = relay_sse(upstream, opts, move |summary: StreamSummary| {
        let call = at_end;
        call.audit.stream_finished(&summary);
        call.learn_ratio(&model.id, summary.usage);
        // Charged however the stream ended: the upstream's usage, else counted.
        let (tokens_in, tokens_out) = match summary.usage {
            Some(u) => (u.prompt_tokens, u.completion_tokens),
            None => (
                reservation.prompt_tokens(),
                call.count_tokens(&summary.text),
            ),
        };
        settle.charge(&call, reservation, tokens_in, tokens_out);
        let status = match summary.outcome {
            StreamOutcome::Completed => 200,
            StreamOutcome::ClientGone => 499,
            StreamOutcome::UpstreamFailed(_) => 502,
        };
        completed(&call, &model.id, status, Some((tokens_in, tokens_out)));
        // A stream the upstream broke counts against the model; one it finished (or the client
        // left) for it.
        if matches!(summary.outcome, StreamOutcome::UpstreamFailed(_)) {
            ticket.failure(std::time::Instant::now());
        } else {
            ticket.success();
        }
        Metrics::dec(&metrics.streams_active);
        let counter = match &summary.outcome {
            StreamOutcome::Completed => &metrics.streams_completed,
            StreamOutcome::ClientGone => &metrics.streams_client_gone,
            StreamOutcome::UpstreamFailed(_) => &metrics.streams_upstream_failed,
        };
        Metrics::inc(counter);
        tracing::debug!(request_id = %call.ctx.id, outcome = ?summary.outcome, usage = ?summary.usage, events = summary.events, "stream ended");
    });
    // The guardrail's output stage on the stream (hold-back window), when one is configured.
    if call.app.guardrail().is_some() {
        Body::from_stream(guard::output_stream(call.clone(), shape, stream).inspect(first_frame))
    } else {
        Body::from_stream(stream.inspect(first_frame))
    }
}

//! The budget phase: the most a chat answer may cost (`max_completion_tokens`) and the
//! reservation of the worst case on the team's and key's budgets (429 `insufficient_quota` when a
//! budget cannot cover it). Settling happens where the answer ends (`budget::Reservation`);
//! [`settle_durable`] is how an answer's charge is made durable before the answer (or a stream's
//! last frame) leaves.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::call::Call;
use crate::budget::{BudgetError, ChargeTo, Reservation, cost};
use crate::domain::ModelConfig;
use crate::metrics::Metrics;
use crate::server::error::ApiError;
use crate::store::{KeyId, TeamId, UsageRecord};

/// Completion tokens a chat request may produce at most: its `max_completion_tokens` or
/// `max_tokens` (else the configured default), times `n`.
pub fn max_completion_tokens(body: &Map<String, Value>, default: u32) -> u64 {
    let max = body
        .get("max_completion_tokens")
        .or_else(|| body.get("max_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(u64::from(default));
    let n = body.get("n").and_then(Value::as_u64).unwrap_or(1).max(1);
    max.saturating_mul(n)
}

/// The budget phase: reserves the worst case of this request (`prompt_tokens` in, at most
/// `max_out` out, at `model`'s prices) on its team's and key's budgets.
pub async fn reserve(
    call: &Call,
    model: &Arc<ModelConfig>,
    prompt_tokens: u64,
    max_out: u64,
) -> Result<Reservation, ApiError> {
    let app = &call.app;
    let to = ChargeTo {
        team_id: TeamId(call.principal.team_id.clone()),
        key_id: KeyId(call.principal.key_id.clone()),
        actor: call.actor.clone(),
        request_id: call.ctx.id.to_string(),
        model: model.clone(),
    };
    let amount = cost(model, prompt_tokens, max_out);
    app.budgets()
        .reserve(to, prompt_tokens, amount)
        .await
        .map_err(|e| {
            if matches!(e, BudgetError::Insufficient(_)) {
                Metrics::inc(&app.metrics().budget_refused_total);
                app.metrics().by.budget_refused(&call.principal.team_id);
            }
            ApiError::from(e)
        })
}

/// Settles an answer's charge, durable before the answer leaves — a whole answer, or a stream's
/// last frame (`pipeline::audit`, which holds that frame for the entry): carried by the
/// request's journal entry when charges ride the journal's fsync (`budget::Charger::carries`;
/// the answer then waits for its entry alone), else committed to the store while the journal
/// layer waits for it beside the entry's append. Without a journal nothing waits: the charge is
/// queued.
pub fn settle_durable(call: &Call, reservation: Reservation, tokens_in: u64, tokens_out: u64) {
    ride_answer(call, reservation.settle_record(tokens_in, tokens_out));
}

/// Makes a settled charge durable with the answer: carried by the request's journal entry when
/// charges ride the journal's fsync (`budget::Charger::carries`), else queued to the store with
/// the journal layer waiting for its commit beside the entry's append. Chat's charges and the
/// library's zero-spend usage rows (`pipeline::library::answer_usage`) alike.
pub fn ride_answer(call: &Call, record: UsageRecord) {
    let charger = call.app.budgets().charger();
    if charger.carries() {
        call.audit.carry(crate::journal::Charge {
            model: record.model.clone(),
            spend_micros: u64::try_from(record.spend).unwrap_or(0),
            tokens_in: record.tokens_in,
            tokens_out: record.tokens_out,
        });
        charger.charge_carried(record);
    } else {
        call.audit.reply_after(charger.charge_then_wait(record));
    }
}

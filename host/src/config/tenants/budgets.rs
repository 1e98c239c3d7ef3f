//! `[budgets]`: money (the currency prices and budgets are counted in, the `cost.threshold`
//! percentages, the completion tokens reserved when a request names no `max_tokens`).

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawBudgets {
    /// The currency model prices are in and budgets are counted in (ISO 4217 code).
    currency: String,
    /// Percentages of a budget whose crossing emits a `cost.threshold` event.
    thresholds: Vec<u32>,
    /// Completion tokens reserved for a request that gives no `max_tokens`.
    default_max_tokens: u32,
}

impl Default for RawBudgets {
    fn default() -> Self {
        RawBudgets {
            currency: "USD".into(),
            thresholds: vec![50, 80, 100],
            default_max_tokens: 4_096,
        }
    }
}

/// `[budgets]`.
#[derive(Debug, Clone)]
pub struct BudgetsConfig {
    pub currency: String,
    /// Ascending percentages, each 1..=1000.
    pub thresholds: Vec<u32>,
    pub default_max_tokens: u32,
}

pub(in crate::config) fn validate(
    b: RawBudgets,
    err: &mut impl FnMut(String, &str),
) -> BudgetsConfig {
    if b.currency.len() != 3 || !b.currency.bytes().all(|c| c.is_ascii_uppercase()) {
        err(
            "budgets.currency".into(),
            "must be a three-letter ISO 4217 code such as USD",
        );
    }
    if b.thresholds.iter().any(|t| *t == 0 || *t > 1_000)
        || b.thresholds.windows(2).any(|w| w[0] >= w[1])
    {
        err(
            "budgets.thresholds".into(),
            "must be ascending percentages between 1 and 1000",
        );
    }
    if b.default_max_tokens == 0 {
        err("budgets.default_max_tokens".into(), "must be at least 1");
    }
    BudgetsConfig {
        currency: b.currency,
        thresholds: b.thresholds,
        default_max_tokens: b.default_max_tokens,
    }
}

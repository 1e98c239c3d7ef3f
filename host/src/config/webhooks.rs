//! `[webhooks]`: how events are delivered to subscribers (`docs/WEBHOOKS.md`). Subscriptions
//! themselves are made through the admin API and kept in the store; this section holds the
//! delivery settings, all optional.

use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawWebhooks {
    /// Destinations on loopback addresses are refused unless this is set (tests, the demo).
    allow_loopback: bool,
    /// Time for one delivery attempt (connect, send, the receiver's answer).
    timeout_ms: u64,
    /// The first retry's delay; each next one doubles, with jitter, up to `retry_max_ms`.
    retry_initial_ms: u64,
    retry_max_ms: u64,
    /// A delivery not accepted this long after it was enqueued (or re-driven) is dead-lettered.
    max_age_ms: u64,
    /// Subscriptions delivering at the same time (each subscription delivers one at a time,
    /// in order).
    concurrency: u32,
    /// `request.completed` for requests that took at least this long; 0: every request.
    request_completed_after_ms: u64,
    /// Delivered and skipped deliveries are pruned after this long (dead letters stay).
    keep_delivered_hours: u64,
    max_subscriptions: u32,
    /// Running time one webhook shaper call may take (its smoke call at upload included).
    shaper_deadline_ms: u64,
    /// Targets' CA bundle (and a client certificate) for `https` destinations; absent: the
    /// system's trust store.
    tls: Option<super::tls::RawClientTls>,
}

impl Default for RawWebhooks {
    fn default() -> Self {
        RawWebhooks {
            allow_loopback: false,
            timeout_ms: 10_000,
            retry_initial_ms: 1_000,
            retry_max_ms: 300_000,
            max_age_ms: 24 * 3_600_000,
            concurrency: 16,
            request_completed_after_ms: 10_000,
            keep_delivered_hours: 7 * 24,
            max_subscriptions: 100,
            shaper_deadline_ms: 50,
            tls: None,
        }
    }
}

/// `[webhooks]`, validated.
#[derive(Debug, Clone)]
pub struct WebhooksConfig {
    pub allow_loopback: bool,
    pub timeout: Duration,
    pub retry_initial: Duration,
    pub retry_max: Duration,
    pub max_age: Duration,
    pub concurrency: usize,
    pub request_completed_after: Duration,
    pub keep_delivered: Duration,
    pub max_subscriptions: usize,
    pub shaper_deadline: Duration,
    pub tls: Option<crate::tls::ClientSpec>,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        // The defaults are valid (a unit test holds it), so nothing is reported.
        validate(
            RawWebhooks::default(),
            std::path::Path::new("."),
            &mut |_: String, _: &str| {},
        )
    }
}

pub(super) fn validate(
    w: RawWebhooks,
    base: &std::path::Path,
    err: &mut impl FnMut(String, &str),
) -> WebhooksConfig {
    let ms = Duration::from_millis;
    if w.timeout_ms == 0 || w.timeout_ms > 300_000 {
        err("webhooks.timeout_ms".into(), "must be between 1 and 300000");
    }
    if w.retry_initial_ms == 0 || w.retry_initial_ms > w.retry_max_ms {
        err(
            "webhooks.retry_initial_ms".into(),
            "must be at least 1 and at most retry_max_ms",
        );
    }
    if w.max_age_ms == 0 {
        err("webhooks.max_age_ms".into(), "must be at least 1");
    }
    if w.concurrency == 0 || w.concurrency > 1_024 {
        err("webhooks.concurrency".into(), "must be between 1 and 1024");
    }
    if w.max_subscriptions == 0 || w.max_subscriptions > 10_000 {
        err(
            "webhooks.max_subscriptions".into(),
            "must be between 1 and 10000",
        );
    }
    if w.shaper_deadline_ms == 0 || w.shaper_deadline_ms > 1_000 {
        err(
            "webhooks.shaper_deadline_ms".into(),
            "must be between 1 and 1000",
        );
    }
    WebhooksConfig {
        allow_loopback: w.allow_loopback,
        timeout: ms(w.timeout_ms),
        retry_initial: ms(w.retry_initial_ms),
        retry_max: ms(w.retry_max_ms),
        max_age: ms(w.max_age_ms),
        concurrency: w.concurrency.clamp(1, 1_024) as usize,
        request_completed_after: ms(w.request_completed_after_ms),
        keep_delivered: Duration::from_secs(w.keep_delivered_hours.saturating_mul(3_600)),
        max_subscriptions: w.max_subscriptions as usize,
        shaper_deadline: ms(w.shaper_deadline_ms.clamp(1, 1_000)),
        tls: w
            .tls
            .and_then(|t| super::tls::validate_client(t, "webhooks.tls", base, err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid() {
        let mut errors = Vec::new();
        validate(
            RawWebhooks::default(),
            std::path::Path::new("."),
            &mut |p: String, m: &str| errors.push(format!("{p}: {m}")),
        );
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn a_shaper_deadline_outside_one_ms_to_one_second_is_refused() {
        for (ms, ok) in [
            (0, false),
            (1, true),
            (50, true),
            (1_000, true),
            (1_001, false),
        ] {
            let mut errors = Vec::new();
            let config = validate(
                RawWebhooks {
                    shaper_deadline_ms: ms,
                    ..RawWebhooks::default()
                },
                std::path::Path::new("."),
                &mut |p: String, _: &str| errors.push(p),
            );
            assert_eq!(errors.is_empty(), ok, "{ms}: {errors:?}");
            if ok {
                assert_eq!(config.shaper_deadline, Duration::from_millis(ms));
            }
        }
    }
}

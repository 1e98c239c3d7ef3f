//! Per-call cost of the built-in PII guardrail through the policy host: a fresh store and
//! instance per call (instantiation included), settings read and parsed by the guest, the 2 KB
//! prompt normalised and scanned, the verdict checked by the host. Two prompts: 2 KB of plain
//! prose, and 2 KB dense with personal data (e-mails, phones, a card, an IBAN).
//!
//! ```sh
//! cargo run --release -p sovereign --example guardrail_bench -- [calls]
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: failing loudly is the point"
)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sovereign::policy::{
    CallLimits, GuardrailPolicy, GuardrailStage, HostConfig, PolicyHost, RouteFacts,
};

const SETTINGS: &str = r#"{"default": "redact", "entities": {"credit_card": "block"}}"#;

fn prose() -> String {
    let s = "The quarterly report covers revenue, costs and the outlook for the coming year. ";
    s.repeat(2048 / s.len() + 1)[..2048].to_string()
}

fn dense() -> String {
    let s = "Call Salem on +966 50 123 4567 or mail salem@example.sa; the account is \
             SA03 8000 0000 6080 1016 7519 and the server 10.0.0.12. ";
    let mut t = s.repeat(2048 / s.len() + 1);
    t.truncate(2048);
    while !t.is_char_boundary(t.len()) {
        t.pop();
    }
    t
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("calls"))
        .unwrap_or(20_000);
    let host = PolicyHost::new(HostConfig::default()).unwrap();
    let mut settings = HashMap::new();
    settings.insert("settings".to_string(), SETTINGS.to_string());
    let started = Instant::now();
    let policy = GuardrailPolicy::load(
        &host,
        "pii-guardrail",
        policy_artifacts::PII_GUARDRAIL_COMPONENT.to_vec(),
        settings,
        CallLimits {
            deadline: Duration::from_millis(50),
            ..CallLimits::default()
        },
    )
    .await
    .unwrap();
    println!(
        "component {} KB, loaded (compiled, smoke-called) in {:?}",
        policy_artifacts::PII_GUARDRAIL_COMPONENT.len() / 1024,
        started.elapsed()
    );
    let facts = RouteFacts::default();
    println!(
        "{:<32} {:>9} {:>9} {:>9}",
        "2 KB prompt", "p50 µs", "p99 µs", "mean µs"
    );
    for (name, text) in [("plain prose", prose()), ("dense personal data", dense())] {
        let texts = [text];
        let v = policy
            .check(GuardrailStage::Input, &facts, &texts)
            .await
            .unwrap();
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            let v = policy.check(GuardrailStage::Input, &facts, &texts).await;
            times.push(t.elapsed());
            std::hint::black_box(v.unwrap());
        }
        let mean = times.iter().sum::<Duration>() / calls as u32;
        times.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{name:<32} {:>9.1} {:>9.1} {:>9.1}   ({} redactions)",
            us(pct(&times, 0.5)),
            us(pct(&times, 0.99)),
            us(mean),
            v.redactions.len()
        );
    }
}

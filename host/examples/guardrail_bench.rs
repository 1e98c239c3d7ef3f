//! Per-call cost of the built-in PII guardrail through the policy host: a fresh store and
//! instance per call (instantiation included), settings read and parsed by the guest, the 2 KB
//! prompt normalised and scanned, the verdict checked by the host. Three prompts: 2 KB of plain
//! prose, a 2 KB Arabic/English support ticket with some personal data, and 2 KB dense with it
//! (an e-mail, a phone, an IBAN and an IP every 128 bytes).
//!
//! With `warm` as the second argument, the policy keeps a warm pool (`[guardrail] pool =
//! "warm"`): instances reused, the settings parsed once per instance.
//!
//! ```sh
//! cargo run --release -p sovereign --example guardrail_bench -- [calls] [fresh|warm]
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: failing loudly is the point"
)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sovereign::policy::{
    CallLimits, GuardrailPolicy, GuardrailStage, HostConfig, PolicyHost, PoolMode, RouteFacts,
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

/// A realistic support ticket in Arabic and English with a phone, an e-mail and an IP address
/// every ~400 bytes (the guest's own speed example's prompt).
fn ticket() -> String {
    let parts = [
        "مرحباً، أنا أحمد من الرياض. أحتاج مساعدة في تحديث بيانات حسابي لدى البنك، ",
        "Please summarise the following customer ticket and draft a polite answer in Arabic. ",
        "العميل يقول إن رقم جواله ٠٥٥٣٢١٤٧٨٩ وإيميله ahmed.alharbi@example.sa وإن الطلب رقم 784512 ",
        "تأخر منذ ٢٠٢٤/٠٣/١٥، والمبلغ المدفوع ١٬٢٥٠ ريال عبر بطاقة مدى. ",
        "The customer also mentioned the server at 10.20.30.40 returned an error 503 twice. ",
    ];
    let mut out = String::new();
    let mut i = 0;
    while out.len() < 2048 {
        out.push_str(parts[i % parts.len()]);
        i += 1;
    }
    out
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
    let pool = match std::env::args().nth(2).as_deref() {
        Some("warm") => PoolMode::Warm,
        _ => PoolMode::Fresh,
    };
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
            pool,
            ..CallLimits::default()
        },
    )
    .await
    .unwrap();
    println!(
        "component {} KB, loaded (compiled, smoke-called) in {:?}, {pool:?} instances",
        policy_artifacts::PII_GUARDRAIL_COMPONENT.len() / 1024,
        started.elapsed()
    );
    let facts = RouteFacts::default();
    println!(
        "{:<32} {:>9} {:>9} {:>9}",
        "2 KB prompt", "p50 µs", "p99 µs", "mean µs"
    );
    for (name, text) in [
        (
            "a short chat message (not 2 KB)",
            "hi, how are you?".to_string(),
        ),
        ("plain prose", prose()),
        ("support ticket (ar/en, some PII)", ticket()),
        ("dense personal data", dense()),
    ] {
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

    // What issue 22 added to a request's input stage, on the support ticket: an embeddings input
    // sent as a token array (decoded with both tokenizers, then both texts checked), and a chat
    // whose 2 KB sits in four tool-call arguments instead of one message.
    let counter = sovereign::facts::TokenCounter::new().unwrap();
    let ticket = ticket();
    let tokens: Vec<u32> = tiktoken_rs::cl100k_base_singleton().encode_ordinary(&ticket);
    let quarter = ticket.len() / 4;
    let mut cut = Vec::new();
    let mut at = 0;
    for _ in 0..3 {
        let mut end = (at + quarter).min(ticket.len());
        while !ticket.is_char_boundary(end) {
            end += 1;
        }
        cut.push(ticket[at..end].to_string());
        at = end;
    }
    cut.push(ticket[at..].to_string());
    println!();
    println!(
        "{:<44} {:>9} {:>9} {:>9}",
        "support ticket, as …", "p50 µs", "p99 µs", "mean µs"
    );
    for name in [
        "one string (as above)",
        "a token array (decode ×2, check both)",
        "four tool-call arguments",
    ] {
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            let texts: Vec<String> = match name {
                "one string (as above)" => vec![ticket.clone()],
                "four tool-call arguments" => cut.clone(),
                _ => counter.decodings(&tokens),
            };
            let v = policy.check(GuardrailStage::Input, &facts, &texts).await;
            times.push(t.elapsed());
            std::hint::black_box(v.unwrap());
        }
        let mean = times.iter().sum::<Duration>() / calls as u32;
        times.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "{name:<44} {:>9.1} {:>9.1} {:>9.1}",
            us(pct(&times, 0.5)),
            us(pct(&times, 0.99)),
            us(mean)
        );
    }
}

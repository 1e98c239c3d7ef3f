//! Does a busy machine fail guardrail checks? The built-in PII guardrail under its default 5 ms
//! budget, checked 8 at a time on one runtime thread that two other tasks keep busy (2 ms of CPU
//! between yields), while `HOGS` threads per CPU spin at the same priority. Prints how many of
//! the checks failed and how long the slowest took (docs/GUARDRAIL.md, "A busy machine").
//!
//! ```sh
//! cargo run --release -p sovereign --example guardrail_starvation -- [hogs per CPU] [rounds] [copies of the text]
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: failing loudly is the point"
)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sovereign::policy::{
    CallLimits, GuardrailPolicy, GuardrailStage, HostConfig, PolicyHost, RouteFacts,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (hogs, rounds, copies) = (
        args.first().copied().unwrap_or(8),
        args.get(1).copied().unwrap_or(50),
        args.get(2).copied().unwrap_or(1),
    );
    let host = PolicyHost::new(HostConfig::default()).unwrap();
    let settings = HashMap::from([(
        "settings".to_string(),
        r#"{"default": "redact"}"#.to_string(),
    )]);
    let g = Arc::new(
        GuardrailPolicy::load(
            &host,
            "guardrail",
            policy_artifacts::PII_GUARDRAIL_COMPONENT.to_vec(),
            settings,
            CallLimits::default(),
        )
        .await
        .unwrap(),
    );

    let stop = Arc::new(AtomicBool::new(false));
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinning: Vec<_> = (0..cpus * hogs)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005) + 1);
                }
            })
        })
        .collect();
    let busy = Arc::new(AtomicBool::new(true));
    let others: Vec<_> = (0..2)
        .map(|_| {
            let busy = busy.clone();
            tokio::spawn(async move {
                while busy.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(2) {
                        std::hint::spin_loop();
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();

    let texts = ["mail me at salem@example.sa. ".repeat(copies)];
    let started = Instant::now();
    let (mut failed, mut took) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let batch: Vec<_> = (0..8)
            .map(|_| {
                let (g, texts) = (g.clone(), texts.clone());
                tokio::spawn(async move {
                    let t = Instant::now();
                    let r = g
                        .check(GuardrailStage::Input, &RouteFacts::default(), &texts)
                        .await;
                    (r, t.elapsed())
                })
            })
            .collect();
        for b in batch {
            let (r, t) = b.await.unwrap();
            took.push(t);
            if let Err(e) = r {
                failed.push(e.to_string());
            }
        }
    }
    busy.store(false, Ordering::Relaxed);
    for o in others {
        o.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for s in spinning {
        s.join().unwrap();
    }
    took.sort_unstable();
    let pick = |q: f64| took[((took.len() as f64 * q) as usize).min(took.len() - 1)];
    println!(
        "{} checks of {} bytes, {} busy threads on {cpus} CPUs: {} failed; wall p50 {:?}, p99 {:?}, max {:?}; {:.1?} in all",
        took.len(),
        texts[0].len(),
        cpus * hogs,
        failed.len(),
        pick(0.5),
        pick(0.99),
        took[took.len() - 1],
        started.elapsed(),
    );
    for f in failed.iter().take(3) {
        println!("  {f}");
    }
}

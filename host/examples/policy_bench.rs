//! Per-call cost of the built-in rules router through the policy host: a fresh store and instance
//! per call (instantiation included), the seed policy document read and parsed by the guest, the
//! answer checked by the host. Prints p50/p99/mean over the calls, and the load times.
//!
//! Then, when `scripts/build-examples` has built them (`target/examples/`), the same for the
//! example routers in Rust, Python and JavaScript, each with a fresh instance per call and with a
//! warm pool (`PoolMode::Warm`).
//!
//! ```sh
//! scripts/build-examples
//! cargo run --release -p sovereign --example policy_bench -- [calls]
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: failing loudly is the point"
)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use sovereign::config::Config;
use sovereign::policy::{
    CallLimits, Candidate, HostConfig, PolicyHost, PoolMode, RouteFacts, RouterPolicy,
};

const SEED_POLICY: &str = "\
name: sovereign-default
routes:
  - name: arabic
    condition: \"language == 'ar'\"
    model: jais-30b
  - name: small-prompts
    condition: \"prompt_tokens < 500\"
    model: llama-3.2-3b
default: llama-3.1-70b
";

fn candidates() -> Vec<Candidate> {
    let model = |id: &str, langs: &str| {
        format!(
            "[[models]]\nid = \"{id}\"\nfamily = \"f\"\nkind = \"chat\"\nlanguages = [{langs}]\n\
             region = \"eu\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
        )
    };
    let text = [
        "sovereign_id = \"b\"\nregion = \"eu\"\ndefault_model = \"llama-3.1-70b\"\n".to_string(),
        model("llama-3.1-70b", "\"en\", \"ar\""),
        model("jais-30b", "\"ar\""),
        model("llama-3.2-3b", "\"en\""),
        model("mistral-7b", "\"en\""),
    ]
    .concat();
    let config = Config::parse(&text).unwrap();
    config
        .models
        .iter()
        .map(|m| Candidate {
            model: m.clone(),
            healthy: true,
            latency_p50_ms: Some(100.0),
        })
        .collect()
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cache = std::env::temp_dir().join(format!("sovereign-bench-{}", std::process::id()));
        let host = PolicyHost::new(HostConfig {
            max_instances: 16,
            cache_dir: Some(cache.clone()),
            ..HostConfig::default()
        })
        .unwrap();
        let wasm = std::fs::read(policy_artifacts::RULES_ROUTER).unwrap();
        println!("rules_router.wasm: {} bytes", wasm.len());
        let settings = HashMap::from([("policy".to_string(), SEED_POLICY.to_string())]);
        let load = |wasm: Vec<u8>| {
            RouterPolicy::load(
                &host,
                "rules-router",
                wasm,
                settings.clone(),
                CallLimits::default(),
                candidates(),
            )
        };
        let t = Instant::now();
        let _ = load(wasm.clone()).await.unwrap();
        println!("load, compiling (cold cache): {:?}", t.elapsed());
        let t = Instant::now();
        let policy = load(wasm).await.unwrap();
        println!("load, from the on-disk cache: {:?}", t.elapsed());

        // The same router in a warm pool: instances reused, the document parsed once each.
        let warm = RouterPolicy::load(
            &host,
            "rules-router-warm",
            std::fs::read(policy_artifacts::RULES_ROUTER).unwrap(),
            settings.clone(),
            CallLimits {
                pool: PoolMode::Warm,
                ..CallLimits::default()
            },
            candidates(),
        )
        .await
        .unwrap();
        let f = candidates();
        let facts = [("ar", 2000), ("en", 42), ("en", 2000)].map(|(lang, tokens)| RouteFacts {
            request_id: "req-bench".into(),
            team_id: "t".into(),
            requested_model: "auto-router".into(),
            language: lang.into(),
            prompt_tokens: tokens,
            ..RouteFacts::default()
        });
        for i in 0..1000 {
            policy.route(&facts[i % 3], &f).await.unwrap();
        }
        let mut times = Vec::with_capacity(calls);
        let total = Instant::now();
        for i in 0..calls {
            let t = Instant::now();
            let d = policy.route(&facts[i % 3], &f).await.unwrap();
            times.push(t.elapsed());
            std::hint::black_box(d);
        }
        let total = total.elapsed();
        times.sort();
        println!(
            "route(), fresh instance per call, {calls} calls: p50 {:.1} µs, p99 {:.1} µs, mean {:.1} µs",
            pct(&times, 0.50).as_secs_f64() * 1e6,
            pct(&times, 0.99).as_secs_f64() * 1e6,
            total.as_secs_f64() * 1e6 / calls as f64,
        );
        for i in 0..1000 {
            warm.route(&facts[i % 3], &f).await.unwrap();
        }
        let mut times = Vec::with_capacity(calls);
        for i in 0..calls {
            let t = Instant::now();
            std::hint::black_box(warm.route(&facts[i % 3], &f).await.unwrap());
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "route(), warm pool, {calls} calls: p50 {:.1} µs, p99 {:.1} µs",
            pct(&times, 0.50).as_secs_f64() * 1e6,
            pct(&times, 0.99).as_secs_f64() * 1e6,
        );
        // The floor: a router that parses nothing and answers with the first candidate.
        let floor = RouterPolicy::load(
            &host,
            "floor",
            std::fs::read(policy_artifacts::HOSTILE).unwrap(),
            HashMap::new(),
            CallLimits::default(),
            candidates(),
        )
        .await
        .unwrap();
        for _ in 0..1000 {
            floor.route(&facts[0], &f).await.unwrap();
        }
        let mut times = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            std::hint::black_box(floor.route(&facts[0], &f).await.unwrap());
            times.push(t.elapsed());
        }
        times.sort();
        println!(
            "route(), trivial guest (host floor), {calls} calls: p50 {:.1} µs, p99 {:.1} µs",
            pct(&times, 0.50).as_secs_f64() * 1e6,
            pct(&times, 0.99).as_secs_f64() * 1e6,
        );
        examples(&host, &facts, &f, calls).await;
        let _ = std::fs::remove_dir_all(cache);
    });
}

/// The example routers (`target/examples/*.wasm`), fresh and warm.
async fn examples(host: &PolicyHost, facts: &[RouteFacts], f: &[Candidate], calls: usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/examples");
    for name in ["rust_router", "python_router", "js_router"] {
        let path = dir.join(format!("{name}.wasm"));
        let Ok(wasm) = std::fs::read(&path) else {
            println!("{name}: not built (scripts/build-examples), skipped");
            continue;
        };
        for pool in [PoolMode::Fresh, PoolMode::Warm] {
            let limits = CallLimits {
                // Generous: this measures cost, not whether a call meets the 5 ms default.
                deadline: Duration::from_millis(100),
                memory_bytes: 64 << 20,
                pool,
                warm_max_calls: 1000,
            };
            let t = Instant::now();
            let policy = RouterPolicy::load(
                host,
                name,
                wasm.clone(),
                HashMap::new(),
                limits,
                candidates(),
            )
            .await
            .unwrap();
            let load = t.elapsed();
            // Fresh Python instances cost ~1 ms each: fewer calls keep the run short.
            let n = if pool == PoolMode::Fresh && name != "rust_router" {
                calls.min(2000)
            } else {
                calls
            };
            for i in 0..n.min(200) {
                policy.route(&facts[i % 3], f).await.unwrap();
            }
            let mut times = Vec::with_capacity(n);
            for i in 0..n {
                let t = Instant::now();
                std::hint::black_box(policy.route(&facts[i % 3], f).await.unwrap());
                times.push(t.elapsed());
            }
            times.sort();
            let mean = times.iter().sum::<Duration>() / n as u32;
            println!(
                "{name} ({} bytes), {} pool, {n} calls: p50 {:.1} µs, p99 {:.1} µs, mean {:.1} µs (load {load:.1?})",
                wasm.len(),
                pool.as_str(),
                pct(&times, 0.50).as_secs_f64() * 1e6,
                pct(&times, 0.99).as_secs_f64() * 1e6,
                mean.as_secs_f64() * 1e6,
            );
        }
    }
}

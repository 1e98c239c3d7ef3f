//! Added cost of authentication + limits + budget per request, on a cache hit, against the
//! foundation's authentication (parse the header, SHA-256 the secret, look the hash up in a map),
//! measured in one run, interleaved. The gateway's path: `Access::authenticate` (cache hit, expiry
//! check), `Access::admit` (allow-list, the key's GCRA limiter, tokens per day), a budget
//! reservation on team and key, and its settlement (the store write is queued to the charger,
//! which commits in the background).
//!
//! ```sh
//! cargo run --release -p sovereign --example access_bench -- [iterations]
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: failing loudly is the point"
)]

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderMap;
use sovereign::access::{Access, AccessParts, LimitClock};
use sovereign::auth::{hash_secret, secret_from_headers};
use sovereign::budget::{Budgets, ChargeTo, Charger};
use sovereign::config::Config;
use sovereign::domain::Role;
use sovereign::events::Events;
use sovereign::shared::Shared;
use sovereign::store::sqlite::SqliteStore;
use sovereign::store::{KeyId, NewKey, NewTeam, Plan, Store, SystemClock, TeamId};

const CONFIG: &str = "sovereign_id = \"b\"\nregion = \"r\"\ndefault_model = \"m\"\n\
    [[models]]\nid = \"m\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
    base_url = \"http://127.0.0.1:9/v1\"\ninput_cost_per_mtok = 0.6\noutput_cost_per_mtok = 1.8\n";

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("iterations"))
        .unwrap_or(200_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(n));
}

async fn run(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(SystemClock);
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("bench.db"), clock.clone())
            .await
            .unwrap(),
    );
    let config = Config::parse(CONFIG).unwrap();
    // Limited everywhere, generously enough that nothing is refused: every check runs.
    let team = store
        .create_team(NewTeam {
            name: "bench".into(),
            plan: Plan::Professional,
            budget: Some(1_000_000_000_000),
            token_cap_per_day: Some(u64::MAX / 2),
            ..NewTeam::default()
        })
        .await
        .unwrap();
    let mut new = NewKey::new(team.id.clone(), Role::Member);
    new.rpm = Some(u32::MAX);
    new.tpd = Some(u64::MAX / 2);
    new.budget = Some(1_000_000_000_000);
    new.ip_allowlist = vec!["127.0.0.0/8".into()];
    let created = store.create_key(new).await.unwrap();

    let access = Access::new(
        store.clone(),
        clock.clone(),
        LimitClock::real(),
        config.access.clone(),
        config.plans,
        AccessParts {
            shared: Shared::Local,
            metrics: Arc::default(),
            key_cache_ttl: None,
        },
    )
    .await
    .unwrap();
    let (charger, _writer) = Charger::start(store.clone(), None);
    let budgets = Arc::new(Budgets::new(
        store.clone(),
        charger.clone(),
        access.quota.clone(),
        Events::default(),
        config.budgets.clone(),
        clock,
    ));
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        format!("Bearer {}", created.secret).parse().unwrap(),
    );
    let ip: IpAddr = "127.0.0.1".parse().unwrap();
    let to = ChargeTo {
        team_id: TeamId(team.id.0.clone()),
        key_id: KeyId(created.info.id.0.clone()),
        actor: "bench".into(),
        request_id: "req-bench".into(),
        model: config.models[0].clone(),
    };
    // The foundation's key table.
    let mut foundation = HashMap::new();
    foundation.insert(
        hash_secret(&created.secret),
        Arc::new(created.info.id.0.clone()),
    );

    let mut base = Vec::with_capacity(n);
    let mut full = Vec::with_capacity(n);
    let mut auth_only = Vec::with_capacity(n);
    // Warm the cache, the ledger and the limiter.
    let key = access.authenticate(&headers, None).await.unwrap();
    budgets
        .reserve(to.clone(), 10, 100)
        .await
        .unwrap()
        .settle_now(10, 16);
    drop(key);
    for i in 0..n {
        let t = Instant::now();
        let secret = secret_from_headers(&headers).unwrap();
        let found = foundation.get(&hash_secret(secret)).cloned();
        std::hint::black_box(found);
        base.push(t.elapsed());

        let t = Instant::now();
        let key = access.authenticate(&headers, None).await.unwrap();
        auth_only.push(t.elapsed());
        let (_rate, verdict) = access.admit(&key, ip).await;
        verdict.unwrap();
        let r = budgets.reserve(to.clone(), 10, 100).await.unwrap();
        r.settle_now(10, 16);
        full.push(t.elapsed());
        if i % 10_000 == 0 {
            // Let the charger commit, as it does between requests in the gateway.
            charger.flush().await;
        }
    }
    charger.flush().await;
    for v in [&mut base, &mut full, &mut auth_only] {
        v.sort();
    }
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("iterations: {n}");
    println!("{:<48} {:>9} {:>9}", "per request (µs)", "p50", "p99");
    for (name, v) in [
        ("foundation auth (header, sha256, map)", &base),
        ("store-backed auth, cache hit", &auth_only),
        ("auth + allow-list + rate + tokens/day + budget", &full),
    ] {
        println!(
            "{name:<48} {:>9.2} {:>9.2}",
            us(pct(v, 0.5)),
            us(pct(v, 0.99))
        );
    }
    println!(
        "added over the foundation: p50 {:.2} µs, p99 {:.2} µs (goal: p50 < 10 µs)",
        us(pct(&full, 0.5)) - us(pct(&base, 0.5)),
        us(pct(&full, 0.99)) - us(pct(&base, 0.99))
    );
}

//! Webhook delivery: throughput (deliveries per second accepted by the receiver) and latency
//! (event emitted → request at the receiver, p50/p99), through the real outbox (SQLite, group
//! commit), the per-subscription workers (in order, signed, each outcome recorded) and HTTP to a
//! receiver on loopback — against POSTing the same bodies to the same receiver directly, one after
//! another (what one in-order subscription could do at best without durability).
//!
//! ```sh
//! cargo run --release -p sovereign --example webhook_bench -- [events] [subscriptions] [shaper|none] [per_second]
//! ```
//!
//! Events are emitted all at once (a burst: throughput), or at `per_second` (latency without a
//! backlog).
//!
//! With a third argument (a shaper name, e.g. `default`), every delivery also goes through that
//! shaper policy in Wasm (the built-in `default` gives the same body).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: failing loudly is the point"
)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::post;
use sovereign::config::Config;
use sovereign::events::{Event, Events};
use sovereign::policy::shaper::{Shapers, limits};
use sovereign::policy::{HostConfig, PolicyHost};
use sovereign::store::sqlite::SqliteStore;
use sovereign::store::{Store, SystemClock};
use sovereign::webhooks::{Channel, Subscribe, Webhooks};

const CONFIG: &str = "sovereign_id = \"b\"\nregion = \"r\"\ndefault_model = \"m\"\n\
    [[models]]\nid = \"m\"\nfamily = \"f\"\nkind = \"chat\"\nregion = \"r\"\n\
    base_url = \"http://127.0.0.1:9/v1\"\n\
    [webhooks]\nallow_loopback = true\nconcurrency = 16\n";

type Arrivals = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let events: usize = args.next().map_or(2_000, |a| a.parse().expect("events"));
    let subs: usize = args.next().map_or(1, |a| a.parse().expect("subscriptions"));
    let shaper = args.next().filter(|s| s != "none");
    let pace: u64 = args.next().map_or(0, |a| a.parse().expect("per_second"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(events, subs, shaper, pace));
}

async fn receiver(arrivals: Arrivals) -> String {
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, _body: axum::body::Bytes| {
            let arrivals = arrivals.clone();
            async move {
                let now = Instant::now();
                if let Some(id) = headers.get("webhook-id").and_then(|v| v.to_str().ok()) {
                    arrivals
                        .lock()
                        .unwrap()
                        .entry(id.to_string())
                        .or_default()
                        .push(now);
                }
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn run(n: usize, subs: usize, shaper: Option<String>, pace: u64) {
    let arrivals: Arrivals = Arc::default();
    let url = receiver(arrivals.clone()).await;

    // Direct: the same body POSTed to the receiver one after another.
    let client = reqwest::Client::new();
    let body = serde_json::to_vec(&sample("evt_direct")).unwrap();
    let mut direct = Vec::with_capacity(n);
    let t = Instant::now();
    for i in 0..n {
        let t0 = Instant::now();
        client
            .post(&url)
            .header("webhook-id", format!("direct-{i}"))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        direct.push(t0.elapsed());
    }
    let direct_rate = n as f64 / t.elapsed().as_secs_f64();
    direct.sort();
    arrivals.lock().unwrap().clear();

    // Through the gateway's webhooks: outbox → workers → receiver.
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(SystemClock);
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("bench.db"), clock.clone())
            .await
            .unwrap(),
    );
    let config = Config::parse(CONFIG).unwrap();
    let channel = Channel::new();
    let events = Events::new(Some(channel.outbox.clone()));
    let host = PolicyHost::new(HostConfig::default()).unwrap();
    let shapers = Arc::new(
        Shapers::new(host, limits(config.webhooks.shaper_deadline))
            .await
            .unwrap(),
    );
    let webhooks = Webhooks::start(
        store,
        config.webhooks.clone(),
        clock,
        channel,
        shapers,
        Arc::default(),
        None,
    )
    .await
    .unwrap();
    for _ in 0..subs {
        webhooks
            .create(Subscribe {
                url: url.clone(),
                events: vec!["*".into()],
                shaper: shaper.clone(),
                ..Subscribe::default()
            })
            .await
            .unwrap();
    }
    let mut emitted = HashMap::with_capacity(n);
    let mut persist_waits: Vec<Duration> = Vec::new();
    let t = Instant::now();
    let gap = (pace > 0).then(|| Duration::from_secs_f64(1.0 / pace as f64));
    for i in 0..n {
        if let Some(gap) = gap {
            tokio::time::sleep_until((t + gap * i as u32).into()).await;
        }
        let mut made = None;
        events.emit(|| {
            let e = sample(&format!("req-{i}"));
            made = Some((e.id.clone(), Instant::now()));
            e
        });
        let (id, at) = made.unwrap();
        emitted.insert(id, at);
        if pace > 0 {
            // What a request that emitted this event waits before answering (the
            // `events_persisted` layer): its event committed to the outbox.
            let outbox = events.outbox().unwrap();
            let w = Instant::now();
            outbox.persisted_to(outbox.mark()).await;
            persist_waits.push(w.elapsed());
        }
    }
    persist_waits.sort();
    let want = n * subs;
    loop {
        let got: usize = arrivals.lock().unwrap().values().map(Vec::len).sum();
        if got >= want {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(600),
            "only {got} of {want} arrived"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = t.elapsed();
    let mut latency: Vec<Duration> = Vec::with_capacity(want);
    for (id, times) in arrivals.lock().unwrap().iter() {
        let sent = emitted[id];
        latency.extend(times.iter().map(|a| a.duration_since(sent)));
    }
    latency.sort();
    let rate = want as f64 / elapsed.as_secs_f64();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "events {n}, subscriptions {subs}, deliveries {want}, shaper {}, emitted {}",
        shaper.as_deref().unwrap_or("none"),
        if pace > 0 {
            format!("at {pace}/s")
        } else {
            "at once".into()
        }
    );
    println!(
        "direct POST, one at a time:  {direct_rate:>8.0} /s   per POST p50 {:.2} ms p99 {:.2} ms",
        ms(pct(&direct, 0.5)),
        ms(pct(&direct, 0.99))
    );
    println!(
        "gateway webhooks:            {rate:>8.0} /s   emit→arrival p50 {:.2} ms p99 {:.2} ms",
        ms(pct(&latency, 0.5)),
        ms(pct(&latency, 0.99))
    );
    if pace == 0 {
        println!(
            "ratio (gateway / direct): {:.2}x throughput",
            rate / direct_rate
        );
    } else {
        println!(
            "added over a direct POST: p50 +{:.2} ms, p99 +{:.2} ms",
            ms(pct(&latency, 0.5)) - ms(pct(&direct, 0.5)),
            ms(pct(&latency, 0.99)) - ms(pct(&direct, 0.99))
        );
        println!(
            "an emitting request waits for its event's commit: p50 {:.3} ms, p99 {:.3} ms",
            ms(pct(&persist_waits, 0.5)),
            ms(pct(&persist_waits, 0.99))
        );
    }
    webhooks.shut_down().await;
}

fn sample(request_id: &str) -> Event {
    Event::now(
        "request.completed",
        request_id,
        serde_json::json!({"model": "m", "status": 200, "tokens": {"prompt": 12, "completion": 30, "total": 42}, "latency_ms": 120}),
        "team-1",
        "user-1",
    )
}

//! `--responses-compare`: what the Responses API costs over chat completions (issue 22's
//! benchmark), in one run against one gateway (journal durable, as shipped):
//!
//! 1. The same closed-loop load on `POST /v1/chat/completions` and on `POST /v1/responses`
//!    (`store: true`, the default: every response is committed to the store before it leaves),
//!    alternating rounds: throughput and p50/p99 of each, and the ratio (goal: within 10%).
//! 2. Continuation latency: one client creates a response and, the moment it arrives, continues
//!    it with `previous_response_id` (the chain read back from the store, the new response
//!    committed), many times in a row: p50/p99 of the continuation against the first request.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use serde_json::{Value, json};

use crate::load::{self, HttpClient, Recorder, Target};
use crate::servers::{self, Server};
use crate::{Args, client_runtime, ms, start_gateway};

/// The goal in issue 22: the Responses endpoint within 10% of chat completions.
const GOAL_OVERHEAD: f64 = 0.10;

pub fn compare(
    args: &Args,
    mut sim: Server,
    secret: &str,
    hash: &str,
    dir: &Path,
) -> anyhow::Result<Value> {
    println!(
        "sovereign-bench --responses-compare: chat completions vs the Responses API on one gateway, then continuation latency"
    );
    let text = format!(
        "{}\n[journal]\ndurability = \"durable\"\n",
        servers::gateway_config(&sim.url, hash, None)
    );
    let mut gw = start_gateway(args, dir, "gateway", &text)?;
    let rt = client_runtime(args)?;
    let result = rt.block_on(async {
        let client = load::client(args.connections)?;
        let model = args.model.as_deref().unwrap_or("qwen2.5-coder-32b");
        let target = |name: &'static str, path: &str, body: Value| -> anyhow::Result<Target> {
            Ok(Target {
                name,
                uri: format!("{}{path}", gw.url).parse()?,
                authorization: Some(format!("Bearer {secret}")),
                headers: Vec::new(),
                body: Bytes::from(serde_json::to_vec(&body)?),
                stream: false,
            })
        };
        let chat = target(
            "chat",
            "/v1/chat/completions",
            json!({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": args.max_tokens}),
        )?;
        let responses = target(
            "responses",
            "/v1/responses",
            json!({"model": model, "input": "hi", "max_output_tokens": args.max_tokens}),
        )?;
        let unstored = target(
            "responses (store: false)",
            "/v1/responses",
            json!({"model": model, "input": "hi", "max_output_tokens": args.max_tokens, "store": false}),
        )?;
        let throughput = compare_endpoints(args, &client, &[chat, responses, unstored]).await?;
        let continuation = continuation(args, &client, &gw.url, secret, model).await?;
        sim.check_alive()?;
        gw.check_alive()?;
        Ok::<Value, anyhow::Error>(json!({"endpoints": throughput, "continuation": continuation}))
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

async fn compare_endpoints(
    args: &Args,
    client: &HttpClient,
    targets: &[Target; 3],
) -> anyhow::Result<Value> {
    for t in targets {
        load::preflight(client, t).await?;
    }
    println!(
        "closed loop, {} connections, {} s measured per endpoint in {} round(s) after {} s warm-up",
        args.connections, args.duration, args.rounds, args.warmup
    );
    let run = async |t: &Target, secs: f64| {
        load::closed_loop(client, t, args.connections, Duration::from_secs_f64(secs)).await
    };
    if args.warmup > 0.0 {
        for t in targets {
            run(t, args.warmup).await?;
        }
    }
    let mut recs = [Recorder::new()?, Recorder::new()?, Recorder::new()?];
    let per_round = args.duration / f64::from(args.rounds);
    for round in 0..args.rounds {
        // The order rotates every round, so drift falls on all three.
        for k in 0..3 {
            let i = (k + round as usize) % 3;
            let r = run(&targets[i], per_round).await?;
            recs[i].merge(&r)?;
        }
    }
    println!(
        "{:<26} {:>10} {:>10} {:>10} {:>8}",
        "", "req/s", "p50 ms", "p99 ms", "errors"
    );
    for (t, r) in targets.iter().zip(&recs) {
        println!(
            "{:<26} {:>10.0} {:>10.3} {:>10.3} {:>8}",
            t.name,
            r.throughput(),
            ms(&r.service, 0.5),
            ms(&r.service, 0.99),
            r.errors
        );
    }
    let overhead =
        |r: &Recorder| 1.0 - r.throughput() / recs[0].throughput().max(f64::MIN_POSITIVE);
    println!(
        "Responses throughput {:.1}% below chat (goal: within {:.0}%): {}; without storing: {:.1}% below",
        overhead(&recs[1]) * 100.0,
        GOAL_OVERHEAD * 100.0,
        if overhead(&recs[1]) <= GOAL_OVERHEAD {
            "met"
        } else {
            "NOT met"
        },
        overhead(&recs[2]) * 100.0,
    );
    let side = |r: &Recorder| {
        json!({"rps": (r.throughput() * 10.0).round() / 10.0, "p50_ms": ms(&r.service, 0.5),
               "p99_ms": ms(&r.service, 0.99), "errors": r.errors})
    };
    Ok(
        json!({"chat": side(&recs[0]), "responses": side(&recs[1]), "responses_unstored": side(&recs[2]),
              "throughput_overhead": (overhead(&recs[1]) * 1000.0).round() / 1000.0,
              "throughput_overhead_unstored": (overhead(&recs[2]) * 1000.0).round() / 1000.0,
              "goal": GOAL_OVERHEAD}),
    )
}

/// Create, then continue at once; `n` times.
async fn continuation(
    args: &Args,
    client: &HttpClient,
    url: &str,
    secret: &str,
    model: &str,
) -> anyhow::Result<Value> {
    let n = ((args.duration * 20.0) as usize).clamp(50, 2000);
    let h = || Histogram::<u64>::new_with_bounds(1_000, 60_000_000_000, 3);
    let (mut first, mut next) = (h()?, h()?);
    for _ in 0..n {
        let t0 = Instant::now();
        let a = post(
            client,
            url,
            secret,
            json!({"model": model, "input": "hi", "max_output_tokens": args.max_tokens}),
        )
        .await?;
        first.saturating_record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
        let id = a["id"]
            .as_str()
            .context("a response without id")?
            .to_string();
        let t1 = Instant::now();
        let b = post(
            client,
            url,
            secret,
            json!({"model": model, "input": "and then?", "previous_response_id": id, "max_output_tokens": args.max_tokens}),
        )
        .await?;
        next.saturating_record(u64::try_from(t1.elapsed().as_nanos()).unwrap_or(u64::MAX));
        anyhow::ensure!(
            b["previous_response_id"] == id.as_str(),
            "continuation lost its chain: {b}"
        );
    }
    let p = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1e6;
    println!(
        "continuation ({n} pairs, sequential): first p50 {:.3} ms p99 {:.3} ms; continuation p50 {:.3} ms p99 {:.3} ms",
        p(&first, 0.5),
        p(&first, 0.99),
        p(&next, 0.5),
        p(&next, 0.99)
    );
    Ok(
        json!({"pairs": n, "first_p50_ms": p(&first, 0.5), "first_p99_ms": p(&first, 0.99),
              "continuation_p50_ms": p(&next, 0.5), "continuation_p99_ms": p(&next, 0.99)}),
    )
}

async fn post(client: &HttpClient, url: &str, secret: &str, body: Value) -> anyhow::Result<Value> {
    let req = Request::post(format!("{url}/v1/responses"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {secret}"))
        .body(Full::new(Bytes::from(serde_json::to_vec(&body)?)))?;
    let res = client.request(req).await?;
    let status = res.status();
    let bytes = res.into_body().collect().await?.to_bytes();
    anyhow::ensure!(
        status.is_success(),
        "status {status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    Ok(serde_json::from_slice(&bytes)?)
}

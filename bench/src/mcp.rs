//! `--mcp-compare`: what the gateway's `/mcp` adds to a tool call (issue 46's benchmark). The
//! stub upstream (`--upstream stub`, `stub.rs`) serves a stateless (2026-07-28) MCP server with
//! one `echo` tool; the gateway has it as `[[mcp.servers]] records`, with the compiled-in tool
//! policy and guardrail on, as shipped, and the journal as `--journal` says (`durable` is the
//! shipped default: each call then waits for its entry's fsync, which the disk's tail dominates).
//!
//! 1. Open loop at `--rate`: the same `tools/call` (a small result, keep-alive) straight to the
//!    stub and through the gateway, alternating rounds; the p50/p99 the gateway adds (goal: p99
//!    under 1 ms).
//! 2. Closed loop, `--connections` workers: tool calls per second, direct and through the
//!    gateway (goal: ≥ 5,000/s through the gateway).
//!
//! A JSON-RPC error is an HTTP 200, so every phase also checks that the stub answered one
//! `tools/call` per call counted, and a preflight checks the gateway's result is the tool's.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use serde_json::{Value, json};

use crate::load::{self, HttpClient, Recorder, Target};
use crate::servers::{self, Server};
use crate::{Args, client_runtime, ms, round3, start_gateway};

/// Issue 46's goals: added p99 and tool calls per second through the gateway on 2 cores.
const GOAL_ADDED_P99_MS: f64 = 1.0;
const GOAL_CALLS_PER_S: f64 = 5_000.0;

const MODERN: &str = "2026-07-28";

pub fn compare(
    args: &Args,
    mut stub: Server,
    secret: &str,
    hash: &str,
    dir: &Path,
) -> anyhow::Result<Value> {
    println!(
        "sovereign-bench --mcp-compare: tools/call straight to an MCP server and through the gateway's /mcp (journal {:?})",
        args.journal
    );
    let text = format!(
        "{}\n{}\n[mcp]\nallow_loopback = true\n\n\
         [[mcp.servers]]\nname = \"records\"\nurl = \"{}/mcp\"\nteams = [\"bench\"]\n",
        servers::gateway_config(&stub.url, hash, None),
        args.journal.table(),
        stub.url
    );
    let mut gw = start_gateway(args, dir, "gateway", &text)?;
    let rt = client_runtime(args)?;
    let result = rt.block_on(async {
        let client = load::client(args.connections)?;
        let direct = call(&stub.url, "echo", None)?;
        let gateway = call(&gw.url, "records__echo", Some(secret))?;
        for t in [&direct, &gateway] {
            check_result(&client, t).await?;
        }
        let latency = added_latency(args, &client, &stub.url, [&direct, &gateway]).await?;
        let throughput = throughput(args, &client, &stub.url, [&direct, &gateway]).await?;
        stub.check_alive()?;
        gw.check_alive()?;
        Ok::<Value, anyhow::Error>(
            json!({"journal": format!("{:?}", args.journal).to_lowercase(),
                                          "latency": latency, "throughput": throughput,
                                          "load_average": servers::loadavg()}),
        )
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

/// A stateless `tools/call` of `tool` at `url`'s `/mcp`, with the 2026-07-28 headers.
fn call(url: &str, tool: &str, secret: Option<&str>) -> anyhow::Result<Target> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": {"text": "hi"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    Ok(Target {
        name: if secret.is_some() {
            "gateway"
        } else {
            "direct"
        },
        uri: format!("{url}/mcp").parse()?,
        authorization: secret.map(|s| format!("Bearer {s}")),
        headers: vec![
            ("accept", "application/json, text/event-stream".into()),
            ("mcp-protocol-version", MODERN.into()),
            ("mcp-method", "tools/call".into()),
            ("mcp-name", tool.into()),
        ],
        body: Bytes::from(serde_json::to_vec(&body)?),
        stream: false,
    })
}

/// One call, whose answer must be the tool's result (not a JSON-RPC error, not `isError`).
async fn check_result(client: &HttpClient, target: &Target) -> anyhow::Result<()> {
    let res = client.request(target.request()?).await?;
    let status = res.status();
    let bytes = res.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    anyhow::ensure!(
        status.is_success(),
        "{}: status {status}: {text}",
        target.name
    );
    let answer: Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a JSON answer: {text}", target.name))?;
    anyhow::ensure!(
        answer.pointer("/result/content/0/text") == Some(&json!("hi"))
            && answer.pointer("/result/isError") != Some(&Value::Bool(true)),
        "{}: not the tool's result: {text}",
        target.name
    );
    Ok(())
}

/// `tools/call`s the stub has answered so far.
async fn stub_calls(client: &HttpClient, stub: &str) -> anyhow::Result<u64> {
    let req = Request::get(format!("{stub}/_stub/mcp_calls")).body(Full::new(Bytes::new()))?;
    let bytes = client.request(req).await?.into_body().collect().await?;
    let v: Value = serde_json::from_slice(&bytes.to_bytes())?;
    v["calls"].as_u64().context("the stub's count")
}

/// Runs `phase` and checks every call it counted reached the stub as a `tools/call`.
async fn counted<F>(client: &HttpClient, stub: &str, phase: F) -> anyhow::Result<Recorder>
where
    F: std::future::Future<Output = anyhow::Result<Recorder>>,
{
    let before = stub_calls(client, stub).await?;
    let rec = phase.await?;
    let answered = stub_calls(client, stub).await? - before;
    anyhow::ensure!(
        rec.errors == 0 && answered == rec.ok,
        "{} calls counted, {} errors, but the server answered {answered} (first error: {})",
        rec.ok,
        rec.errors,
        rec.first_error.as_deref().unwrap_or("none")
    );
    Ok(rec)
}

async fn added_latency(
    args: &Args,
    client: &HttpClient,
    stub: &str,
    targets: [&Target; 2],
) -> anyhow::Result<Value> {
    println!(
        "open loop, {} calls/s, up to {} connections, {} s per target in {} round(s) after {} s warm-up",
        args.rate, args.connections, args.duration, args.rounds, args.warmup
    );
    let run = async |t: &Target, secs: f64| {
        let d = Duration::from_secs_f64(secs);
        counted(
            client,
            stub,
            load::open_loop(client, t, args.rate, d, args.connections),
        )
        .await
    };
    if args.warmup > 0.0 {
        for t in targets {
            run(t, args.warmup).await?;
        }
    }
    let mut recs = [Recorder::new()?, Recorder::new()?];
    let per_round = args.duration / f64::from(args.rounds);
    for round in 0..args.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let r = run(targets[i], per_round).await?;
            recs[i].merge(&r)?;
        }
    }
    let [d, g] = &recs;
    let added = |q| round3(ms(&g.latency, q) - ms(&d.latency, q));
    println!(
        "direct p50 {:.3} p99 {:.3} ms | gateway p50 {:.3} p99 {:.3} ms | added p50 {:+.3} p99 {:+.3} ms (goal p99 < {GOAL_ADDED_P99_MS} ms: {})",
        ms(&d.latency, 0.5),
        ms(&d.latency, 0.99),
        ms(&g.latency, 0.5),
        ms(&g.latency, 0.99),
        added(0.5),
        added(0.99),
        if added(0.99) < GOAL_ADDED_P99_MS {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(json!({"rate": args.rate, "calls": [d.ok, g.ok],
              "direct_p50_ms": ms(&d.latency, 0.5), "direct_p99_ms": ms(&d.latency, 0.99),
              "gateway_p50_ms": ms(&g.latency, 0.5), "gateway_p99_ms": ms(&g.latency, 0.99),
              "added_p50_ms": added(0.5), "added_p99_ms": added(0.99),
              "goal_added_p99_ms": GOAL_ADDED_P99_MS}))
}

async fn throughput(
    args: &Args,
    client: &HttpClient,
    stub: &str,
    targets: [&Target; 2],
) -> anyhow::Result<Value> {
    let secs = (args.duration / 2.0).max(1.0);
    println!(
        "closed loop, {} workers, {secs} s per target",
        args.connections
    );
    let mut out = serde_json::Map::new();
    for t in targets {
        let d = Duration::from_secs_f64(secs);
        let r = counted(
            client,
            stub,
            load::closed_loop(client, t, args.connections, d),
        )
        .await?;
        println!(
            "{:<8} {:>8.0} calls/s  p50 {:.3} ms  p99 {:.3} ms",
            t.name,
            r.throughput(),
            ms(&r.service, 0.5),
            ms(&r.service, 0.99)
        );
        out.insert(
            t.name.into(),
            json!({"calls_per_s": r.throughput().round(), "p50_ms": ms(&r.service, 0.5),
                   "p99_ms": ms(&r.service, 0.99), "calls": r.ok}),
        );
    }
    let through = out["gateway"]["calls_per_s"].as_f64().unwrap_or(0.0);
    println!(
        "through the gateway: {through:.0} calls/s (goal ≥ {GOAL_CALLS_PER_S:.0}: {})",
        if through >= GOAL_CALLS_PER_S {
            "met"
        } else {
            "NOT met"
        }
    );
    out.insert("goal_calls_per_s".into(), json!(GOAL_CALLS_PER_S));
    Ok(Value::Object(out))
}

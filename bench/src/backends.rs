//! `--backends-compare`: the scale-out back end against the embedded one (issue 17's benchmark),
//! in one run, with every shared path exercised: the key has a request rate (one GCRA script in
//! Redis per request), its team a budget (reserve and settle scripts) and a daily token cap (a
//! counter read and added), usage is charged to the store, the journal is durable.
//!
//! 1. One gateway on SQLite + in-process limits, and one replica on PostgreSQL + Redis, under
//!    the same closed loop in alternating rounds: throughput, p50/p99 and the ratio (goal: the
//!    replica at ≥ 80% of the embedded gateway).
//! 2. Two replicas on the same PostgreSQL and Redis, each under the same closed loop at the same
//!    time: their aggregate throughput (on this 2-core machine the replicas, the databases and
//!    the load generator share the cores, so this shows correctness under load and contention,
//!    not scaling).
//!
//! Each back end's row also gives the CPU per request of the gateway, the simulator, the load
//! generator and everything else on the machine (the services, while the replica runs).
//!
//! PostgreSQL and Redis come from the environment: `scripts/services start DIR` starts private
//! ones and writes their URLs to `DIR/env` (`SOVEREIGN_STORE_URL`, `SOVEREIGN_REDIS_URL`);
//! `scripts/services pin DIR 1` with this bench under `taskset -c 0` gives them a core of their
//! own, the measure of the goal (docs/DECISIONS.md, "Scale-out").

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::load::{self, HttpClient, Recorder, Target};
use crate::servers::{self, Server};
use crate::{Args, Cpu, Side, client_runtime, ms, start_gateway};

/// The goal in issue 17: a replica on the shared back ends at ≥ 80% of the embedded gateway.
const GOAL_RATIO: f64 = 0.80;

/// Limits that are on (so every shared path runs) but never reached in a run.
const LIMITS: &str = "[plans.enterprise]\nrequests_per_minute = 100000000\nburst = 100000000\n\
     tokens_per_day = 1000000000000\n";

pub fn compare(
    args: &Args,
    mut sim: Server,
    secret: &str,
    hash: &str,
    dir: &Path,
) -> anyhow::Result<Value> {
    let env = |k: &str| {
        std::env::var(k).with_context(|| {
            format!(
                "{k} is not set: start private services with `scripts/services start DIR` and `source DIR/env` first"
            )
        })
    };
    let (pg, redis) = (env("SOVEREIGN_STORE_URL")?, env("SOVEREIGN_REDIS_URL")?);
    println!(
        "sovereign-bench --backends-compare: SQLite + in-process limits vs PostgreSQL + Redis, then two replicas at once"
    );
    // Budgets: the config's team has none, but an unlimited scope is still reserved on and
    // settled to (the same scripts run).
    let base = servers::gateway_config(&sim.url, hash, None).replace(
        "[plans.enterprise]\nrequests_per_minute = 0\nburst = 0\ntokens_per_day = 0\n",
        LIMITS,
    ) + "\n[journal]\ndurability = \"durable\"\n";
    anyhow::ensure!(
        base.contains("100000000") && base.contains("sovereign_id = \"bench-gw-1\""),
        "the bench config's plan table or id moved"
    );
    let namespace = format!("bench-{}", std::process::id());
    let replica = |id: &str| {
        format!(
            "{}\n[store]\nbackend = \"postgres\"\nurl = \"{pg}\"\n\n[shared]\nbackend = \"redis\"\nurl = \"{redis}\"\nnamespace = \"{namespace}\"\n",
            base.replace(
                "sovereign_id = \"bench-gw-1\"",
                &format!("sovereign_id = \"{id}\"")
            )
        )
    };
    let mut embedded = start_gateway(args, dir, "embedded", &base)?;
    let rdir = |n: &str| -> anyhow::Result<std::path::PathBuf> {
        let d = dir.join(n);
        std::fs::create_dir_all(&d)?;
        Ok(d)
    };
    // Ids of this run: each run's journals are new chains, and a replica refuses to start when
    // the store already holds another chain under its id.
    let start_replica = |name: &str| {
        let id = format!("{name}-{}", std::process::id());
        start_gateway(args, &rdir(name)?, "replica", &replica(&id))
    };
    let mut a = start_replica("replica-a")?;
    let mut b = start_replica("replica-b")?;
    let rt = client_runtime(args)?;
    let result = rt.block_on(async {
        let client = load::client(args.connections * 2)?;
        let model = args.model.as_deref().unwrap_or("qwen2.5-coder-32b");
        let body = Bytes::from(serde_json::to_vec(&json!({
            "model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": args.max_tokens
        }))?);
        let target = |name: &'static str, url: &str| -> anyhow::Result<Target> {
            Ok(Target {
                name,
                uri: format!("{url}/v1/chat/completions").parse()?,
                authorization: Some(format!("Bearer {secret}")),
                headers: Vec::new(),
                body: body.clone(),
                stream: false,
            })
        };
        let targets = [
            target("sqlite + local", &embedded.url)?,
            target("postgres + redis", &a.url)?,
        ];
        let pair = [
            target("replica a", &a.url)?,
            target("replica b", &b.url)?,
        ];
        let one = side_by_side(args, &client, &targets, &sim, [&embedded, &a]).await?;
        let two = together(args, &client, &pair).await?;
        sim.check_alive()?;
        embedded.check_alive()?;
        a.check_alive()?;
        b.check_alive()?;
        Ok::<Value, anyhow::Error>(json!({"one_replica": one, "two_replicas": two}))
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

fn side(r: &Recorder) -> Value {
    json!({"rps": (r.throughput() * 10.0).round() / 10.0, "p50_ms": ms(&r.service, 0.5),
           "p99_ms": ms(&r.service, 0.99), "errors": r.errors})
}

/// The two back ends under the same closed loop in alternating rounds, with the CPU each
/// process used meanwhile: the gateways' own CPU per request, and everything else on the
/// machine (PostgreSQL and Redis while the replica runs). Where those services run on machines
/// of their own, the gateways' own CPU is what the replica costs its machine.
async fn side_by_side(
    args: &Args,
    client: &HttpClient,
    targets: &[Target; 2],
    sim: &Server,
    gateways: [&Server; 2],
) -> anyhow::Result<Value> {
    for t in targets {
        load::preflight(client, t).await?;
    }
    println!(
        "closed loop, {} connections, {} s measured per back end in {} round(s) after {} s warm-up; \
         this run and its servers on CPUs {}",
        args.connections,
        args.duration,
        args.rounds,
        args.warmup,
        servers::cpus_allowed().unwrap_or_else(|| "?".into())
    );
    let run = async |t: &Target, secs: f64| {
        load::closed_loop(client, t, args.connections, Duration::from_secs_f64(secs)).await
    };
    if args.warmup > 0.0 {
        for t in targets {
            run(t, args.warmup).await?;
        }
    }
    let mut sides = [Side::new()?, Side::new()?];
    let per_round = args.duration / f64::from(args.rounds);
    let me = std::process::id();
    for round in 0..args.rounds {
        for k in 0..2 {
            let i = (k + round as usize) % 2;
            let before = Cpu::now(sim, gateways[i], me);
            let r = run(&targets[i], per_round).await?;
            let after = Cpu::now(sim, gateways[i], me);
            sides[i].add(&r, &before, &after)?;
        }
    }
    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>8} | CPU µs/request: {:>7} {:>9} {:>5} {:>15}",
        "",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "gateway",
        "simulator",
        "load",
        "everything else"
    );
    for (t, s) in targets.iter().zip(&sides) {
        let [sim_us, gw_us, load_us, else_us] = s.cpu_per_request();
        let r = &s.rec;
        println!(
            "{:<20} {:>10.0} {:>10.3} {:>10.3} {:>8} | {:>23.0} {:>9.0} {:>5.0} {:>15.0}",
            t.name,
            r.throughput(),
            ms(&r.service, 0.5),
            ms(&r.service, 0.99),
            r.errors,
            gw_us,
            sim_us,
            load_us,
            else_us
        );
    }
    let [embedded, replica] = &sides;
    let ratio = replica.rec.throughput() / embedded.rec.throughput().max(f64::MIN_POSITIVE);
    let met = if ratio >= GOAL_RATIO {
        "met"
    } else {
        "NOT met"
    };
    if servers::pinned() {
        println!(
            "PostgreSQL + Redis at {:.1}% of SQLite's throughput, this run pinned (goal: ≥ {:.0}% \
             with the services on other cores: `scripts/services pin`): {met}",
            ratio * 100.0,
            GOAL_RATIO * 100.0,
        );
    } else {
        println!(
            "PostgreSQL + Redis at {:.1}% of SQLite's throughput, the services on the gateways' \
             cores ({met}; the goal, ≥ {:.0}%, is measured with them on a core of their own: \
             bench/README.md, \"Replicas\")",
            ratio * 100.0,
            GOAL_RATIO * 100.0,
        );
    }
    let gateway_cpu = embedded.cpu_per_request()[1] / replica.cpu_per_request()[1].max(1.0);
    println!(
        "gateway CPU per request, SQLite's ÷ the replica's: {:.1}% (\"everything else\" is \
         PostgreSQL and Redis here; a deployment runs them on machines of their own)",
        gateway_cpu * 100.0
    );
    let with_cpu = |s: &Side| {
        let [sim_us, gw_us, load_us, else_us] = s.cpu_per_request();
        let mut v = side(&s.rec);
        v["cpu_us_per_request"] =
            json!({"gateway": gw_us, "simulator": sim_us, "load": load_us, "else": else_us});
        v
    };
    Ok(
        json!({"embedded": with_cpu(embedded), "replica": with_cpu(replica),
              "ratio": (ratio * 1000.0).round() / 1000.0, "goal": GOAL_RATIO,
              "gateway_cpu_ratio": (gateway_cpu * 1000.0).round() / 1000.0}),
    )
}

async fn together(args: &Args, client: &HttpClient, pair: &[Target; 2]) -> anyhow::Result<Value> {
    for t in pair {
        load::preflight(client, t).await?;
    }
    let secs = Duration::from_secs_f64(args.duration / 2.0);
    let (ra, rb) = tokio::try_join!(
        load::closed_loop(client, &pair[0], args.connections, secs),
        load::closed_loop(client, &pair[1], args.connections, secs),
    )?;
    let total = ra.throughput() + rb.throughput();
    println!(
        "two replicas at once ({} connections each, {:.0} s): {:.0} + {:.0} = {:.0} req/s; p99 {:.3} / {:.3} ms; errors {} / {}",
        args.connections,
        secs.as_secs_f64(),
        ra.throughput(),
        rb.throughput(),
        total,
        ms(&ra.service, 0.99),
        ms(&rb.service, 0.99),
        ra.errors,
        rb.errors
    );
    Ok(json!({"a": side(&ra), "b": side(&rb), "aggregate_rps": total.round()}))
}

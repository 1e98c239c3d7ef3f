//! `--journal-compare`: what the activity journal costs (issue 5's benchmark), in one run.
//!
//! 1. Appends per second with group commit, in process through `sovereign::journal`: durable
//!    mode with one appender (the disk's fsync latency) and with many (group commit), and batched
//!    mode (5 ms window); on the disk of the system's temp directory.
//! 2. Three gateways on the same upstream — journal off, durable, batched (5 ms) — under the same
//!    open-loop load, their order rotated every round; the added p50/p99 per request of each mode
//!    is its quantile minus the journal-off gateway's.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use serde_json::{Value, json};
use sovereign::journal::{Durability, EntryDraft, Journal, JournalConfig, Status, sha256_tagged};

use crate::load::{self, Recorder, Target};
use crate::servers::{self, Server};
use crate::{Args, client_runtime, ms, start_gateway};

/// The goals in issue 5: appends per second with group commit, and batched mode's added p99.
const GOAL_APPENDS_PER_S: f64 = 50_000.0;
const GOAL_BATCHED_ADDED_P99_MS: f64 = 1.0;

const MODES: [(&str, &str); 3] = [
    ("off", "enabled = false"),
    ("durable", "durability = \"durable\""),
    ("batched", "durability = \"batched\"\nbatch_window_ms = 5"),
];

pub fn compare(
    args: &Args,
    mut sim: Server,
    secret: &str,
    hash: &str,
    dir: &Path,
) -> anyhow::Result<Value> {
    println!(
        "sovereign-bench --journal-compare: appends/s with group commit, then gateways with the journal off, durable and batched"
    );
    let appends = append_throughput(dir)?;

    let mut gateways = Vec::new();
    for (mode, table) in MODES {
        let text = format!(
            "data_dir = \"data-{mode}\"\n{}\n[journal]\n{table}\ndir = \"journal-{mode}\"\nsigning_key = \"journal-{mode}.key\"\n",
            servers::gateway_config(&sim.url, hash, None)
        );
        gateways.push(start_gateway(args, dir, &format!("gateway-{mode}"), &text)?);
    }

    let rt = client_runtime(args)?;
    let result = rt.block_on(async {
        let body = Bytes::from(serde_json::to_vec(&json!({
            "model": args.model.as_deref().unwrap_or("qwen2.5-coder-32b"),
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": args.max_tokens,
        }))?);
        let targets: Vec<Target> = gateways
            .iter()
            .map(|gw| -> anyhow::Result<Target> {
                Ok(Target {
                    name: "gateway",
                    uri: format!("{}/v1/chat/completions", gw.url).parse()?,
                    authorization: Some(format!("Bearer {secret}")),
                    headers: Vec::new(),
                    body: body.clone(),
                    stream: false,
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let client = load::client(args.connections)?;
        for t in &targets {
            load::preflight(&client, t).await?;
        }
        println!(
            "open loop, {} req/s, up to {} connections, {} s measured per mode in {} round(s) after {} s warm-up",
            args.rate, args.connections, args.duration, args.rounds, args.warmup
        );
        let run = async |t: &Target, secs: f64| {
            load::open_loop(
                &client,
                t,
                args.rate,
                Duration::from_secs_f64(secs),
                args.connections,
            )
            .await
        };
        if args.warmup > 0.0 {
            for t in &targets {
                run(t, args.warmup).await?;
            }
        }
        let mut recs = [Recorder::new()?, Recorder::new()?, Recorder::new()?];
        let mut cpu = [Duration::ZERO; 3];
        let mut others = [(Duration::ZERO, Duration::ZERO); 3];
        let per_round = args.duration / f64::from(args.rounds);
        for round in 0..args.rounds {
            for k in 0..3 {
                let i = (k + round as usize) % 3; // rotate which mode goes first
                let pid = gateways[i].pid();
                let before = (
                    servers::cpu_time(pid).unwrap_or_default(),
                    servers::machine_cpu().unwrap_or_default(),
                );
                let rec = run(&targets[i], per_round).await?;
                let after = (
                    servers::cpu_time(pid).unwrap_or_default(),
                    servers::machine_cpu().unwrap_or_default(),
                );
                cpu[i] += after.0.saturating_sub(before.0);
                others[i].0 += after.1.0.saturating_sub(before.1.0);
                others[i].1 += after.1.1.saturating_sub(before.1.1);
                recs[i].merge(&rec)?;
                gateways[i].check_alive()?;
            }
            sim.check_alive()?;
        }
        anyhow::Ok((recs, cpu, others))
    });
    rt.shutdown_timeout(Duration::from_secs(1));
    let (recs, cpu, busy) = result?;

    println!();
    println!(
        "{:<9} {:>9} {:>9} {:>11} {:>11} {:>9} {:>9} {:>10} {:>7}",
        "journal",
        "p50 ms",
        "p99 ms",
        "added p50",
        "added p99",
        "svc p50",
        "svc p99",
        "gw CPU/req",
        "errors"
    );
    let off = &recs[0];
    let mut rows = Vec::new();
    for (i, (mode, _)) in MODES.iter().enumerate() {
        let r = &recs[i];
        let added50 = ms(&r.latency, 0.5) - ms(&off.latency, 0.5);
        let added99 = ms(&r.latency, 0.99) - ms(&off.latency, 0.99);
        let cpu_us = cpu[i].as_secs_f64() * 1e6 / r.ok.max(1) as f64;
        println!(
            "{mode:<9} {:>9.3} {:>9.3} {:>+11.3} {:>+11.3} {:>9.3} {:>9.3} {:>8.0} µs {:>7}",
            ms(&r.latency, 0.5),
            ms(&r.latency, 0.99),
            added50,
            added99,
            ms(&r.service, 0.5),
            ms(&r.service, 0.99),
            cpu_us,
            r.errors
        );
        rows.push(json!({
            "journal": mode,
            "p50_ms": ms(&r.latency, 0.5),
            "p99_ms": ms(&r.latency, 0.99),
            "added_p50_ms": added50,
            "added_p99_ms": added99,
            "service_p50_ms": ms(&r.service, 0.5),
            "service_p99_ms": ms(&r.service, 0.99),
            "gateway_cpu_us_per_request": cpu_us,
            "ok": r.ok,
            "errors": r.errors,
        }));
    }
    let ours: Duration = cpu.iter().sum();
    let (busy_all, total_all) = busy.iter().fold((Duration::ZERO, Duration::ZERO), |a, b| {
        (a.0 + b.0, a.1 + b.1)
    });
    println!(
        "machine busy during the measured phases: {:.1}% of all cores (gateways' share {:.1}%); load average {:.2}",
        busy_all.as_secs_f64() * 100.0 / total_all.as_secs_f64().max(1e-9),
        ours.as_secs_f64() * 100.0 / total_all.as_secs_f64().max(1e-9),
        servers::loadavg().unwrap_or(-1.0)
    );
    let best = appends
        .iter()
        .filter(|a| a["mode"] == "durable" && a["appenders"].as_u64() > Some(1))
        .filter_map(|a| a["appends_per_s"].as_f64())
        .fold(0.0, f64::max);
    let batched99 = rows[2]["added_p99_ms"].as_f64().unwrap_or(f64::MAX);
    println!(
        "verdict: durable group commit {best:.0} appends/s (goal ≥ {GOAL_APPENDS_PER_S:.0}: {}); batched added p99 {batched99:+.3} ms (goal < {GOAL_BATCHED_ADDED_P99_MS} ms: {})",
        if best >= GOAL_APPENDS_PER_S {
            "met"
        } else {
            "NOT met"
        },
        if batched99 < GOAL_BATCHED_ADDED_P99_MS {
            "met"
        } else {
            "NOT met"
        },
    );
    Ok(json!({"appends": appends, "requests": rows}))
}

pub(crate) fn draft(i: u64) -> EntryDraft {
    EntryDraft {
        timestamp: SystemTime::now(),
        request_id: format!("req-0193a1b2c3d4e5f6a7b8c9d0{i:08x}"),
        actor_id: "alice@example.eu".into(),
        team_id: "research".into(),
        key_id: "0123456789ab".into(),
        auth: Some("key".into()),
        cert_sha256: None,
        charges: Vec::new(),
        action: "chat.completions".into(),
        model: Some("qwen2.5-coder-32b".into()),
        prompt_hash: Some(sha256_tagged(&i.to_le_bytes())),
        routing_policy: Some("explicit-model".into()),
        residency_boundary: Some("eu-frankfurt-1".into()),
        retrieval_filtered: None,
        status: Status::Success,
        prompt_tokens: Some(412),
        completion_tokens: Some(128),
        latency_us: 734,
        mcp: None,
    }
}

/// Appends per second, in process, for each (mode, appenders, entries).
fn append_throughput(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let batched = Durability::Batched {
        window: Duration::from_millis(5),
        max_entries: 4_096,
    };
    let runs = [
        ("durable", Durability::Durable, 1u64, 2_000u64),
        ("durable", Durability::Durable, 256, 200_000),
        ("durable", Durability::Durable, 1_024, 200_000),
        ("batched", batched, 256, 200_000),
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!(
        "{:<8} {:>9} {:>9} {:>12} {:>15} {:>12} {:>12}",
        "mode", "appenders", "entries", "appends/s", "entries/fsync", "append p50", "append p99"
    );
    let mut out = Vec::new();
    for (n, (mode, durability, appenders, entries)) in runs.into_iter().enumerate() {
        let jdir = dir.join(format!("append-{n}"));
        let mut cfg = JournalConfig::new(jdir.join("journal"), "bench", jdir.join("signing.key"));
        cfg.durability = durability;
        let (rate, fsyncs, p50, p99) = rt.block_on(async move {
            let (journal, _) = Journal::open_async(cfg).await?;
            let per = entries / appenders;
            let start = Instant::now();
            let mut tasks = Vec::new();
            for t in 0..appenders {
                let journal = journal.clone();
                tasks.push(tokio::spawn(async move {
                    let mut lat = Vec::with_capacity(per as usize);
                    for i in 0..per {
                        let t0 = Instant::now();
                        journal.append(draft(t * per + i)).await?;
                        lat.push(t0.elapsed());
                    }
                    anyhow::Ok(lat)
                }));
            }
            let mut lat = Vec::new();
            for t in tasks {
                lat.extend(t.await??);
            }
            journal.flush().await?; // batched: count until the last entry is durable
            let elapsed = start.elapsed();
            let fsyncs = journal.fsyncs();
            journal.close().await?;
            lat.sort_unstable();
            let pick = |q: f64| {
                lat.get(((lat.len() as f64 * q) as usize).min(lat.len().saturating_sub(1)))
                    .copied()
                    .unwrap_or_default()
            };
            anyhow::Ok((
                (per * appenders) as f64 / elapsed.as_secs_f64(),
                fsyncs,
                pick(0.5),
                pick(0.99),
            ))
        })?;
        let _ = std::fs::remove_dir_all(&jdir);
        println!(
            "{mode:<8} {appenders:>9} {entries:>9} {rate:>12.0} {:>15.1} {:>12.1?} {:>12.1?}",
            entries as f64 / fsyncs.max(1) as f64,
            p50,
            p99
        );
        out.push(json!({
            "mode": mode,
            "appenders": appenders,
            "entries": entries,
            "appends_per_s": rate.round(),
            "fsyncs": fsyncs,
            "append_p50_us": p50.as_secs_f64() * 1e6,
            "append_p99_us": p99.as_secs_f64() * 1e6,
        }));
    }
    Ok(out)
}

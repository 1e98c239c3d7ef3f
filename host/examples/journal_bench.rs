//! Journal append throughput with group commit (issue 5's benchmark, the append half): durable
//! mode with one and with many concurrent appenders, and batched mode; then `verify` speed.
//!
//! `cargo run --release -p sovereign --example journal_bench -- [ENTRIES] [APPENDERS] [DIR]`
//! (defaults 200000, 64, a temporary directory on the same disk as the system's temp dir).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark: a failure aborts the run"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use sovereign::journal::{
    Durability, EntryDraft, Journal, JournalConfig, Status, sha256_tagged, verify_dir,
};

fn draft(i: u64) -> EntryDraft {
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
        model: Some("llama-3.1-8b-instruct".into()),
        prompt_hash: Some(sha256_tagged(&i.to_le_bytes())),
        routing_policy: Some("rules-router".into()),
        residency_boundary: Some("eu-central".into()),
        retrieval_filtered: None,
        status: Status::Success,
        prompt_tokens: Some(412),
        completion_tokens: Some(128),
        latency_us: 734,
        mcp: None,
    }
}

struct Run {
    appends_per_s: f64,
    fsyncs: u64,
    p50: Duration,
    p99: Duration,
}

async fn run(dir: PathBuf, durability: Durability, entries: u64, appenders: u64) -> (Run, PathBuf) {
    let key = dir.join("signing.key");
    let journal_dir = dir.join("journal");
    let mut cfg = JournalConfig::new(journal_dir.clone(), "bench", key);
    cfg.durability = durability;
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    let per = entries / appenders;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..appenders {
        let journal = journal.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per as usize);
            for i in 0..per {
                let t0 = Instant::now();
                journal.append(draft(t * per + i)).await.unwrap();
                lat.push(t0.elapsed());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    journal.flush().await.unwrap(); // batched mode: count until the last entry is durable
    let elapsed = start.elapsed();
    let fsyncs = journal.fsyncs();
    journal.close().await.unwrap();
    lat.sort_unstable();
    let pick = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    let run = Run {
        appends_per_s: (per * appenders) as f64 / elapsed.as_secs_f64(),
        fsyncs,
        p50: pick(0.50),
        p99: pick(0.99),
    };
    (run, journal_dir)
}

fn report(name: &str, entries: u64, r: &Run) {
    println!(
        "{name:<34} {:>10.0} appends/s  {:>7} fsyncs ({:>6.1} entries/fsync)  append p50 {:>9.1?} p99 {:>9.1?}",
        r.appends_per_s,
        r.fsyncs,
        entries as f64 / r.fsyncs.max(1) as f64,
        r.p50,
        r.p99
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries: u64 = args.first().map_or(200_000, |a| a.parse().unwrap());
    let appenders: u64 = args.get(1).map_or(64, |a| a.parse().unwrap());
    let base = args.get(2).map(PathBuf::from);
    let tmp = match &base {
        Some(b) => tempfile::tempdir_in(b).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    println!(
        "journal_bench: {entries} entries, {appenders} concurrent appenders, dir {}",
        tmp.path().display()
    );

    let single = 2_000.min(entries);
    let (r, _) = run(tmp.path().join("durable-1"), Durability::Durable, single, 1).await;
    report("durable, 1 appender", single, &r);

    let (r, dir) = run(
        tmp.path().join("durable-n"),
        Durability::Durable,
        entries,
        appenders,
    )
    .await;
    report(&format!("durable, {appenders} appenders"), entries, &r);

    let batched = Durability::Batched {
        window: Duration::from_millis(5),
        max_entries: 4_096,
    };
    let (r, _) = run(tmp.path().join("batched-n"), batched, entries, appenders).await;
    report(&format!("batched 5 ms, {appenders} appenders"), entries, &r);

    let start = Instant::now();
    let verified = tokio::task::spawn_blocking(move || verify_dir(&dir, None, None))
        .await
        .unwrap()
        .unwrap();
    assert!(verified.is_ok(), "{verified}");
    let secs = start.elapsed().as_secs_f64();
    println!(
        "verify                             {:>10.0} entries/s ({} entries in {secs:.2} s)",
        verified.chains[0].entries as f64 / secs,
        verified.chains[0].entries
    );
}

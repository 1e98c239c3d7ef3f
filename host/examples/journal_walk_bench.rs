//! The cost of reading the journal back a page at a time (issue 49, "walking the journal"): one
//! `POST /v1/activity/logs` page (`journal::query::query`) at cursors across one segment, and a
//! whole walk of the chain page by page, which must cost in proportion to the chain, not to its
//! square.
//!
//! `cargo run --release -p sovereign --example journal_walk_bench -- [ENTRIES] [PAGE]`
//! (defaults 100000 entries in one segment, pages of 100).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark: a failure aborts the run"
)]

use std::time::{Duration, Instant, SystemTime};

use sovereign::journal::query::{Filter, query};
use sovereign::journal::{Durability, EntryDraft, Journal, JournalConfig, Status, sha256_tagged};

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

/// The median of `runs` reads of one page at `cursor`.
fn page_at(dir: &std::path::Path, cursor: u64, page: usize, head: u64, runs: usize) -> Duration {
    let mut took: Vec<Duration> = (0..runs)
        .map(|_| {
            let t0 = Instant::now();
            let p = query(
                dir,
                "bench",
                &Filter::default(),
                cursor,
                head,
                page,
                100_000,
            )
            .unwrap();
            assert_eq!(p.entries.first().map(|h| h.record.entry.seq), Some(cursor));
            t0.elapsed()
        })
        .collect();
    took.sort_unstable();
    took[runs / 2]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let entries: u64 = args.first().map_or(100_000, |a| a.parse().unwrap());
    let page: usize = args.get(1).map_or(100, |a| a.parse().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("journal");
    let mut cfg = JournalConfig::new(dir.clone(), "bench", tmp.path().join("signing.key"));
    cfg.transparency = false;
    cfg.durability = Durability::Batched {
        window: Duration::from_millis(5),
        max_entries: 8_192,
    };
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    for i in 0..entries {
        journal.append(draft(i)).await.unwrap();
    }
    journal.close().await.unwrap();
    println!("journal_walk_bench: {entries} entries in one segment, pages of {page}");

    for cursor in [
        1,
        entries / 10,
        entries / 2,
        entries * 8 / 10,
        entries - page as u64,
    ] {
        let d = page_at(&dir, cursor.max(1), page, entries, 21);
        println!("page at cursor {cursor:>9}: {d:>10.1?}");
    }

    let t0 = Instant::now();
    let (mut cursor, mut pages, mut seen) = (1, 0u64, 0u64);
    loop {
        let p = query(
            &dir,
            "bench",
            &Filter::default(),
            cursor,
            entries,
            page,
            100_000,
        )
        .unwrap();
        pages += 1;
        seen += p.entries.len() as u64;
        match p.next_seq {
            Some(next) => cursor = next,
            None => break,
        }
    }
    assert_eq!(seen, entries);
    let took = t0.elapsed();
    println!(
        "whole walk: {pages} pages in {took:.2?} ({:.1?} per page, {:.0} entries/s)",
        took / pages as u32,
        seen as f64 / took.as_secs_f64()
    );
}

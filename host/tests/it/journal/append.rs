//! Appending: group commit, durability modes, rotation, checkpoints, torn-tail recovery,
//! refusal of damaged chains, and no acknowledged entry lost to kill -9.

use super::*;

#[tokio::test]
async fn durable_appends_chain_rotate_and_checkpoint() {
    let f = Fixture::new();
    let (journal, report) = Journal::open_async(f.config()).await.unwrap();
    assert_eq!(report.head_seq, 0);
    let mut prev = None;
    for i in 0..25 {
        let Ack::Durable { seq, journal_hash } = journal.append(draft(i)).await.unwrap() else {
            panic!("durable mode acknowledges durably");
        };
        assert_eq!(seq, i + 1);
        assert_eq!(journal.durable_seq(), seq);
        assert_ne!(Some(journal_hash.clone()), prev);
        prev = Some(journal_hash);
    }
    assert_eq!(journal.close().await.unwrap(), 25);
    // 10-entry segments, each chained from the one before.
    assert_eq!(read_lines(&f.segment(1)).len(), 10);
    assert_eq!(read_lines(&f.segment(11)).len(), 10);
    assert_eq!(read_lines(&f.segment(21)).len(), 5);
    let first_of_second = Record::parse(read_lines(&f.segment(11))[0].as_bytes()).unwrap();
    let last_of_first = Record::parse(read_lines(&f.segment(1))[9].as_bytes()).unwrap();
    assert_eq!(first_of_second.entry.prev_hash, last_of_first.journal_hash);
    // Checkpoints at 10, 20 and on close at 25, signed with the generated key.
    let cps = read_lines(&f.checkpoints());
    assert_eq!(cps.len(), 3, "{cps:?}");
    assert!(cps[2].contains(r#""count":25"#));
    let public = read_public_key(&public_key_path(&f.key)).unwrap();
    let report = verify_dir(&f.dir, None, Some(&public)).unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.chains[0].entries, 25);
    assert_eq!(report.chains[0].checkpoints_checked, 3);

    // Reopening continues the chain.
    let (journal, report) = Journal::open_async(f.config()).await.unwrap();
    assert_eq!(report.head_seq, 25);
    assert!(matches!(
        journal.append(draft(99)).await.unwrap(),
        Ack::Durable { seq: 26, .. }
    ));
    journal.close().await.unwrap();
    assert!(f.verify().is_ok());
}

#[tokio::test]
async fn checkpoint_now_vouches_for_everything_queued_before_it() {
    let f = Fixture::new();
    let mut cfg = f.config();
    cfg.checkpoint_every = 1_000;
    // Batched: the appends are only queued; the checkpoint must still cover them.
    cfg.durability = Durability::Batched {
        window: Duration::from_secs(60),
        max_entries: 1_000,
    };
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    assert_eq!(journal.checkpoint_now().await.unwrap(), None, "empty chain");
    for i in 0..7 {
        assert_eq!(journal.append(draft(i)).await.unwrap(), Ack::Queued);
    }
    let cp = journal
        .checkpoint_now()
        .await
        .unwrap()
        .expect("a checkpoint");
    assert_eq!((cp.checkpoint.seq, cp.checkpoint.count), (7, 7));
    assert_eq!(journal.durable_seq(), 7, "durable before it is vouched for");
    let last = Record::parse(read_lines(&f.segment(1))[6].as_bytes()).unwrap();
    assert_eq!(cp.checkpoint.head_hash, last.journal_hash);
    // Asked again with no new entry: a fresh line vouching for the same head.
    let again = journal.checkpoint_now().await.unwrap().unwrap();
    assert_eq!(again.checkpoint.head_hash, cp.checkpoint.head_hash);
    assert_eq!(read_lines(&f.checkpoints()).len(), 2);
    journal.close().await.unwrap();
    let public = read_public_key(&public_key_path(&f.key)).unwrap();
    let report = verify_dir(&f.dir, None, Some(&public)).unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.chains[0].checkpoints_checked, 2, "{report}");
}

#[tokio::test]
async fn concurrent_appenders_share_fsyncs_without_losing_or_duplicating_seq() {
    let f = Fixture::new();
    let mut cfg = f.config();
    cfg.max_segment_entries = 1000;
    cfg.checkpoint_every = 500;
    // A queue smaller than the number of appenders, and small batches: back-pressure and
    // batch boundaries are exercised too.
    cfg.queue_capacity = 8;
    cfg.max_batch = 5;
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    let (tasks, per_task) = (16u64, 150u64);
    let mut handles = Vec::new();
    for t in 0..tasks {
        let journal = journal.clone();
        handles.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for i in 0..per_task {
                match journal.append(draft(t * 1000 + i)).await.unwrap() {
                    Ack::Durable { seq, .. } => seqs.push(seq),
                    Ack::Queued => panic!("durable mode"),
                }
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    let fsyncs = journal.fsyncs();
    journal.close().await.unwrap();
    all.sort_unstable();
    let n = tasks * per_task;
    assert_eq!(all, (1..=n).collect::<Vec<_>>(), "every seq exactly once");
    assert!(fsyncs < n, "group commit: {fsyncs} fsyncs for {n} entries");
    let report = f.verify();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.chains[0].entries, n);
    // Every request id made it exactly once.
    let mut ids: Vec<String> = fs::read_dir(&f.dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("journal-")
        })
        .flat_map(|p| read_lines(&p))
        .map(|l| Record::parse(l.as_bytes()).unwrap().entry.request_id)
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len() as u64, n);
}

#[tokio::test]
async fn batched_mode_is_durable_within_its_window() {
    let f = Fixture::new();
    let window = Duration::from_millis(300);
    let mut cfg = f.config();
    cfg.durability = Durability::Batched {
        window,
        max_entries: 1_000_000,
    };
    let (journal, _) = Journal::open_async(cfg.clone()).await.unwrap();
    let start = Instant::now();
    assert_eq!(journal.append(draft(1)).await.unwrap(), Ack::Queued);
    let queued_in = start.elapsed();
    let not_yet = journal.durable_seq();
    let deadline = start + window + Duration::from_secs(2);
    while journal.durable_seq() < 1 {
        assert!(Instant::now() < deadline, "not durable within the window");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let durable_in = start.elapsed();
    if queued_in < window / 2 {
        // Unless the machine stalled, the entry waited for the window (no fsync per entry).
        assert_eq!(not_yet, 0);
        assert!(
            durable_in >= window - Duration::from_millis(5),
            "{durable_in:?}"
        );
    }
    journal.close().await.unwrap();

    // `max_entries` unsynced entries force the fsync long before a (10 s) window.
    cfg.durability = Durability::Batched {
        window: Duration::from_secs(10),
        max_entries: 50,
    };
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    let start = Instant::now();
    for i in 0..50 {
        journal.append(draft(i)).await.unwrap();
    }
    while journal.durable_seq() < 51 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "max_entries did not force a sync"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(journal.flush().await.unwrap(), 51);
    journal.close().await.unwrap();
    assert!(f.verify().is_ok());
}

#[tokio::test]
async fn torn_final_record_is_reported_cut_off_and_the_chain_continues() {
    let f = Fixture::new();
    f.write(12).await;
    let last = f.segment(11);
    let whole = fs::read(&last).unwrap();
    let torn = br#"{"action":"chat.completions","actor_id":"us"#;
    fs::write(&last, [whole.as_slice(), torn].concat()).unwrap();

    let report = f.verify();
    assert!(report.is_ok(), "a torn tail is not tampering: {report}");
    assert_eq!(
        report.chains[0].torn_tail.as_ref().unwrap().bytes,
        torn.len() as u64
    );

    let (journal, open) = Journal::open_async(f.config()).await.unwrap();
    let cut = open.torn_tail.unwrap();
    assert_eq!((cut.file, cut.bytes), (last.clone(), torn.len() as u64));
    assert_eq!(open.head_seq, 12);
    assert_eq!(fs::read(&last).unwrap(), whole);
    assert!(matches!(
        journal.append(draft(13)).await.unwrap(),
        Ack::Durable { seq: 13, .. }
    ));
    journal.close().await.unwrap();
    let report = f.verify();
    assert!(
        report.is_ok() && report.chains[0].torn_tail.is_none(),
        "{report}"
    );
}

/// With `preallocate_bytes`, the writer keeps zeroed room after its last line (so a sync has no
/// size change to write):
/// readers and verifiers see exactly the entries while it runs, a crash leaves the room for
/// opening to cut (not reported as torn), and closing cuts it.
#[tokio::test]
async fn the_writers_zeroed_room_is_invisible_to_readers_and_cut_at_close() {
    let f = Fixture::new();
    let mut cfg = f.config();
    cfg.preallocate_bytes = 4 << 20;
    let (journal, _) = Journal::open_async(cfg.clone()).await.unwrap();
    for i in 0..3 {
        journal.append(draft(i)).await.unwrap();
    }
    let seg = f.segment(1);
    let live = fs::read(&seg).unwrap();
    let data = live.iter().position(|&b| b == 0).unwrap();
    assert!(
        live.len() >= data + (1 << 20),
        "no room after the data: {}",
        live.len()
    );
    assert!(live[data..].iter().all(|&b| b == 0));
    assert_eq!(live[..data].iter().filter(|&&b| b == b'\n').count(), 3);
    let report = f.verify();
    assert!(
        report.is_ok() && report.chains[0].torn_tail.is_none(),
        "{report}"
    );
    assert_eq!(report.chains[0].entries, 3);
    let filter = sovereign::journal::query::Filter::default();
    let page =
        sovereign::journal::query::query(&f.dir, ID, &filter, 1, u64::MAX, 100, 1_000).unwrap();
    assert_eq!(page.entries.len(), 3);
    let mut tail = sovereign::journal::Tail::new(f.dir.clone(), ID.into(), 1);
    assert_eq!(tail.read(100).unwrap().len(), 3);
    assert_eq!(
        tail.read(100).unwrap().len(),
        0,
        "the room is not read as lines"
    );

    // As a killed writer leaves it (room, then a torn record's bytes inside it): opening cuts
    // both, and reports the torn record's bytes only.
    journal.close().await.unwrap();
    let closed = fs::read(&seg).unwrap();
    assert!(!closed.contains(&0), "closing cuts the room");
    let torn = br#"{"action":"chat.completions","actor_id":"us"#;
    fs::write(&seg, [&closed[..], torn, &[0; 8192]].concat()).unwrap();
    let (journal, open) = Journal::open_async(cfg).await.unwrap();
    assert_eq!(open.torn_tail.unwrap().bytes, torn.len() as u64);
    assert_eq!(open.head_seq, 3);
    journal.append(draft(3)).await.unwrap();
    journal.close().await.unwrap();
    let after = fs::read(&seg).unwrap();
    assert!(after.starts_with(&closed) && !after.contains(&0));
    assert_eq!(f.verify().chains[0].entries, 4);
}

#[tokio::test]
async fn damage_before_the_tail_refuses_to_open_unless_forced() {
    let f = Fixture::new();
    f.write(15).await;
    let mut lines = read_lines(&f.segment(1));
    lines[3] = lines[3].replace("user-", "mallory-");
    write_lines(&f.segment(1), &lines);

    match Journal::open_async(f.config()).await {
        Err(JournalError::Unverifiable(p)) => assert_eq!((p.line, p.seq), (4, Some(4))),
        other => panic!("expected a refusal, got {:?}", other.map(|(_, r)| r)),
    }
    let mut forced = f.config();
    forced.force = true;
    let (journal, open) = Journal::open_async(forced).await.unwrap();
    assert_eq!(open.forced_past.unwrap().line, 4);
    assert!(matches!(
        journal.append(draft(16)).await.unwrap(),
        Ack::Durable { seq: 16, .. }
    ));
    journal.close().await.unwrap();
    // The damage is still reported: forcing does not launder it.
    let (file, line, ..) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line),
        ("journal-eu-1-00000000000000000001.jsonl", 4)
    );
}

const CRASH_DIR_VAR: &str = "SOVEREIGN_JOURNAL_CRASH_DIR";

/// The child half of `kill_9_while_appending_loses_no_acknowledged_entry`: does nothing unless
/// that test started this binary with `SOVEREIGN_JOURNAL_CRASH_DIR` set; then appends durably
/// from 8 tasks, printing every acknowledged seq, until it is killed (or 60 s pass).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_child() {
    let Some(base) = std::env::var_os(CRASH_DIR_VAR) else {
        return;
    };
    let base = PathBuf::from(base);
    let cfg = JournalConfig::new(base.join("journal"), ID, base.join("journal.key"));
    let (journal, _) = Journal::open_async(cfg).await.unwrap();
    let stop = Instant::now() + Duration::from_secs(60);
    let mut tasks = Vec::new();
    for t in 0..8 {
        let journal = journal.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = 0;
            while Instant::now() < stop {
                if let Ack::Durable { seq, .. } =
                    journal.append(draft(t * 1_000_000 + i)).await.unwrap()
                {
                    use std::io::Write as _;
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "acked {seq}").unwrap();
                    out.flush().unwrap();
                }
                i += 1;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test]
async fn kill_9_while_appending_loses_no_acknowledged_entry() {
    use std::io::BufRead as _;
    let f = Fixture::new();
    let base = f.dir.parent().unwrap().to_path_buf();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "journal::append::crash_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DIR_VAR, &base)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(seq) = line.strip_prefix("acked ") {
                acked.push(seq.parse::<u64>().unwrap());
            }
        }
        acked
    });
    // Let it run until a few thousand entries are durable, then SIGKILL it mid-stream.
    let journal_dir = base.join("journal");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the child never got going");
        // Lines written so far (a segment's data ends at the writer's zeroed room).
        let lines: usize = fs::read_dir(&journal_dir)
            .map(|d| {
                d.map(|e| {
                    let data = fs::read(e.unwrap().path()).unwrap_or_default();
                    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
                    data[..end].iter().filter(|&&b| b == b'\n').count()
                })
                .sum()
            })
            .unwrap_or(0);
        if lines > 2_000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL: no flush, no final checkpoint
    child.wait().unwrap();
    let acked = reader.join().unwrap();
    assert!(acked.len() > 100, "only {} acks seen", acked.len());

    let mut cfg = JournalConfig::new(journal_dir.clone(), ID, base.join("journal.key"));
    cfg.durability = Durability::Durable;
    let (journal, open) = Journal::open_async(cfg).await.unwrap();
    let highest = acked.iter().copied().max().unwrap();
    assert!(
        open.head_seq >= highest,
        "acknowledged seq {highest} lost: the journal ends at {}",
        open.head_seq
    );
    journal.close().await.unwrap();
    let report = verify_dir(&journal_dir, None, None).unwrap();
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.chains[0].entries, open.head_seq);
}

/// A forced open after the last segment was emptied continues in that (empty) segment, named
/// for the next entry, instead of failing to create it again ("File exists").
#[tokio::test]
async fn a_forced_open_continues_an_emptied_last_segment() {
    let f = Fixture::new();
    f.write(15).await; // segments 1 (10 entries) and 11 (5), a checkpoint at close
    std::fs::File::options()
        .write(true)
        .open(f.segment(11))
        .unwrap()
        .set_len(0)
        .unwrap();
    let mut cfg = f.config();
    assert!(matches!(
        Journal::open_async(cfg.clone()).await,
        Err(JournalError::Unverifiable(_))
    ));
    cfg.force = true;
    let (journal, report) = Journal::open_async(cfg).await.unwrap();
    assert_eq!(report.head_seq, 10);
    match journal.append(draft(99)).await.unwrap() {
        Ack::Durable { seq, .. } => assert_eq!(seq, 11),
        other => panic!("{other:?}"),
    }
    journal.close().await.unwrap();
}

//! The activity journal (issue 5): appending with group commit, both durability modes, rotation,
//! checkpoints, torn-tail recovery, each tampering kind caught by `verify`, and the Python
//! verifier agreeing with the Rust one on real and tampered journals.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use sovereign::journal::{
    Ack, Durability, Entry, EntryDraft, Journal, JournalConfig, JournalError, Record, Status,
    VerifyReport, public_key_path, read_public_key, sha256_tagged, verify_dir,
};

const ID: &str = "eu-1";

fn draft(i: u64) -> EntryDraft {
    EntryDraft {
        timestamp: SystemTime::now(),
        request_id: format!("req-{i:08}"),
        actor_id: format!("user-{}", i % 7),
        team_id: "team-a".into(),
        key_id: "0123456789ab".into(),
        action: "chat.completions".into(),
        model: Some("llama-3-8b".into()),
        prompt_hash: Some(sha256_tagged(format!("prompt {i}").as_bytes())),
        routing_policy: Some("rules-router".into()),
        residency_boundary: Some("eu".into()),
        status: if i.is_multiple_of(5) {
            Status::Rejected
        } else {
            Status::Success
        },
        prompt_tokens: Some(i),
        completion_tokens: None,
        latency_us: 1000 + i,
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    key: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        let key = tmp.path().join("keys/journal.key");
        Fixture {
            _tmp: tmp,
            dir,
            key,
        }
    }

    fn config(&self) -> JournalConfig {
        let mut cfg = JournalConfig::new(self.dir.clone(), ID, self.key.clone());
        cfg.max_segment_entries = 10;
        cfg.checkpoint_every = 10;
        cfg
    }

    /// Writes `n` entries one after another (one batch each) and closes the journal.
    async fn write(&self, n: u64) {
        let (journal, _) = Journal::open_async(self.config()).await.unwrap();
        for i in 0..n {
            journal.append(draft(i)).await.unwrap();
        }
        journal.close().await.unwrap();
    }

    fn segment(&self, first_seq: u64) -> PathBuf {
        self.dir
            .join(sovereign::journal::segment_file_name(ID, first_seq))
    }

    fn checkpoints(&self) -> PathBuf {
        self.dir.join(sovereign::journal::checkpoint_file_name(ID))
    }

    fn verify(&self) -> VerifyReport {
        verify_dir(&self.dir, None, None).unwrap()
    }
}

fn read_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(path, text).unwrap();
}

/// The report's one problem: (file name, line, seq, reason).
fn problem(report: &VerifyReport) -> (String, u64, Option<u64>, String) {
    assert!(!report.is_ok(), "expected a failure:\n{report}");
    let p = report
        .checkpoint_problem
        .as_ref()
        .or_else(|| report.chains.iter().find_map(|c| c.problem.as_ref()))
        .unwrap();
    let name = p.file.file_name().unwrap().to_string_lossy().into_owned();
    (name, p.line, p.seq, p.reason.clone())
}

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

#[tokio::test]
async fn verify_catches_an_edited_entry() {
    let f = Fixture::new();
    f.write(25).await;
    let mut lines = read_lines(&f.segment(11));
    lines[4] = lines[4].replace(r#""status":"success""#, r#""status":"blocked""#);
    write_lines(&f.segment(11), &lines);
    let (file, line, seq, reason) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000011.jsonl", 5, Some(15))
    );
    assert!(reason.contains("edited"), "{reason}");
}

#[tokio::test]
async fn verify_catches_a_deleted_entry() {
    let f = Fixture::new();
    f.write(25).await;
    let mut lines = read_lines(&f.segment(1));
    lines.remove(6);
    write_lines(&f.segment(1), &lines);
    let (file, line, seq, reason) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000001.jsonl", 7, Some(8))
    );
    assert!(reason.contains("expected seq 7"), "{reason}");
}

#[tokio::test]
async fn verify_catches_a_deleted_segment() {
    let f = Fixture::new();
    f.write(25).await;
    fs::remove_file(f.segment(11)).unwrap();
    let (file, line, seq, _) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000021.jsonl", 1, Some(21))
    );
}

#[tokio::test]
async fn verify_catches_reordered_entries() {
    let f = Fixture::new();
    f.write(25).await;
    let mut lines = read_lines(&f.segment(1));
    lines.swap(2, 3);
    write_lines(&f.segment(1), &lines);
    let (file, line, seq, _) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000001.jsonl", 3, Some(4))
    );
}

#[tokio::test]
async fn verify_catches_a_spliced_in_entry() {
    let f = Fixture::new();
    f.write(25).await;
    // A forged entry that is well formed, correctly hashed and linked to entry 5, inserted after
    // it: the genuine entry 6 then no longer follows.
    let mut lines = read_lines(&f.segment(1));
    let fifth = Record::parse(lines[4].as_bytes()).unwrap();
    let forged = Entry::from_draft(draft(777), 6, fifth.journal_hash);
    let mut line = Vec::new();
    forged.seal_into(&mut line);
    lines.insert(5, String::from_utf8(line).unwrap().trim_end().to_string());
    write_lines(&f.segment(1), &lines);
    let (file, line, seq, reason) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000001.jsonl", 7, Some(6))
    );
    assert!(reason.contains("expected seq 7"), "{reason}");
}

#[tokio::test]
async fn verify_catches_a_truncated_tail_against_an_exported_checkpoint() {
    let f = Fixture::new();
    f.write(25).await;
    let exported = f.dir.parent().unwrap().join("exported-checkpoints.jsonl");
    fs::copy(f.checkpoints(), &exported).unwrap();
    // The attacker drops the last segment and the checkpoints that mention it.
    fs::remove_file(f.segment(21)).unwrap();
    let mut cps = read_lines(&f.checkpoints());
    cps.pop();
    write_lines(&f.checkpoints(), &cps);
    assert!(
        f.verify().is_ok(),
        "undetectable without the exported checkpoint"
    );

    let report = verify_dir(&f.dir, Some(&exported), None).unwrap();
    let (file, line, seq, reason) = problem(&report);
    assert_eq!(
        (file.as_str(), line, seq),
        ("exported-checkpoints.jsonl", 3, Some(25))
    );
    assert!(reason.contains("tail truncated"), "{reason}");
}

/// Re-seals every entry from `from_seq` on (after an edit), so the chain itself is consistent.
fn rewrite_chain(f: &Fixture, edit: impl Fn(&mut Entry)) {
    let mut prev: Option<String> = None;
    for first in [1, 11, 21] {
        let path = f.segment(first);
        let mut out = Vec::new();
        for line in read_lines(&path) {
            let mut entry = Record::parse(line.as_bytes()).unwrap().entry;
            if let Some(p) = prev.take() {
                entry.prev_hash = p;
            }
            edit(&mut entry);
            prev = Some(entry.seal_into(&mut out));
        }
        fs::write(&path, out).unwrap();
    }
}

#[tokio::test]
async fn verify_catches_a_rewritten_journal_by_its_signed_checkpoints() {
    let f = Fixture::new();
    f.write(25).await;
    rewrite_chain(&f, |e| {
        if e.seq == 3 {
            e.actor_id = "someone-else".into();
        }
    });
    let (file, line, seq, reason) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000001.jsonl", 10, Some(10))
    );
    assert!(reason.contains("checkpoint"), "{reason}");
}

#[tokio::test]
async fn verify_catches_checkpoints_forged_with_another_key() {
    let f = Fixture::new();
    f.write(25).await;
    let public = read_public_key(&public_key_path(&f.key)).unwrap();
    // The attacker rewrites the chain and re-signs fresh checkpoints with a key of their own.
    rewrite_chain(&f, |e| e.actor_id = "nobody".into());
    fs::remove_file(f.checkpoints()).unwrap();
    let mut forger = f.config();
    forger.signing_key = f.dir.parent().unwrap().join("forger.key");
    let (journal, _) = Journal::open_async(forger).await.unwrap();
    journal.append(draft(26)).await.unwrap();
    journal.close().await.unwrap();
    assert!(
        f.verify().is_ok(),
        "self-consistent without the operator's key"
    );
    let report = verify_dir(&f.dir, None, Some(&public)).unwrap();
    let (file, line, _, reason) = problem(&report);
    assert_eq!((file.as_str(), line), ("checkpoints-eu-1.jsonl", 1));
    assert!(reason.contains("other than the operator's"), "{reason}");
}

/// One tampering of a copy of a real journal, as the agreement test applies it.
fn tamper(kind: &str, f: &Fixture) -> Option<PathBuf> {
    let seg1 = f.segment(1);
    let mut lines = read_lines(&seg1);
    match kind {
        "intact" => {}
        "edited" => lines[2] = lines[2].replace("llama-3-8b", "gpt-4o"),
        "deleted" => drop(lines.remove(4)),
        "reordered" => lines.swap(7, 8),
        "spliced" => {
            let prev = Record::parse(lines[1].as_bytes()).unwrap().journal_hash;
            let mut out = Vec::new();
            Entry::from_draft(draft(5), 3, prev).seal_into(&mut out);
            lines.insert(2, String::from_utf8(out).unwrap().trim_end().into());
        }
        "torn" => {
            let last = f.segment(21);
            let mut bytes = fs::read(&last).unwrap();
            bytes.extend_from_slice(b"{\"action\":\"emb");
            fs::write(last, bytes).unwrap();
        }
        "segment-deleted" => fs::remove_file(f.segment(11)).unwrap(),
        "truncated" => {
            let exported = f.dir.parent().unwrap().join("exported.jsonl");
            fs::copy(f.checkpoints(), &exported).unwrap();
            fs::remove_file(f.checkpoints()).unwrap();
            let mut last = read_lines(&f.segment(21));
            last.truncate(2);
            write_lines(&f.segment(21), &last);
            return Some(exported);
        }
        "rewritten" => {
            rewrite_chain(f, |e| e.model = None);
            return None;
        }
        other => panic!("unknown tampering {other}"),
    }
    write_lines(&seg1, &lines);
    None
}

/// `FAIL <id>: <file>:<line>` → (file, line) of every failure line, `OK` → nothing.
fn failures(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("FAIL"))
        .map(|l| {
            let rest = l.split_once(": ").unwrap().1;
            let mut parts = rest.split([':', ' ']);
            (
                parts.next().unwrap().to_string(),
                parts.next().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn python_verifier_agrees_with_the_rust_verifier() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/verify_journal.py");
    let kinds = [
        "intact",
        "edited",
        "deleted",
        "reordered",
        "spliced",
        "torn",
        "segment-deleted",
        "truncated",
        "rewritten",
    ];
    for kind in kinds {
        let f = Fixture::new();
        f.write(25).await;
        let checkpoint = tamper(kind, &f);
        let mut rust = std::process::Command::new(env!("CARGO_BIN_EXE_sovereign"));
        rust.args(["journal", "verify"]).arg(&f.dir);
        let mut python = std::process::Command::new("python3");
        python.arg(&script).arg(&f.dir);
        if let Some(cp) = &checkpoint {
            rust.arg("--checkpoint").arg(cp);
            python.arg(cp);
        }
        let rust = rust.output().unwrap();
        let python = python.output().unwrap();
        let (r_out, p_out) = (
            String::from_utf8_lossy(&rust.stdout),
            String::from_utf8_lossy(&python.stdout),
        );
        let context = format!(
            "{kind}:\nrust:\n{r_out}\npython:\n{p_out}{}",
            String::from_utf8_lossy(&python.stderr)
        );
        assert_eq!(rust.status.code(), python.status.code(), "{context}");
        assert_eq!(failures(&r_out), failures(&p_out), "{context}");
        let expect_ok = matches!(kind, "intact" | "torn");
        assert_eq!(rust.status.success(), expect_ok, "{context}");
    }
}

#[tokio::test]
async fn cli_verify_pins_the_operators_key_and_fails_on_an_empty_dir() {
    let f = Fixture::new();
    f.write(12).await;
    let verify = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sovereign"))
            .args(["journal", "verify"])
            .args(args)
            .output()
            .unwrap()
    };
    let public = public_key_path(&f.key);
    let ok = verify(&[
        f.dir.as_os_str(),
        "--public-key".as_ref(),
        public.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("OK eu-1: 12 entries in 2 segments"),
        "{stdout}"
    );

    let other = f.dir.parent().unwrap().join("other.key");
    sovereign::journal::load_or_create_signing_key(&other).unwrap();
    let wrong = verify(&[
        f.dir.as_os_str(),
        "--public-key".as_ref(),
        public_key_path(&other).as_os_str(),
    ]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&wrong.stdout)
            .starts_with("FAIL checkpoints: checkpoints-eu-1.jsonl:1")
    );

    let empty = tempfile::tempdir().unwrap();
    assert_eq!(verify(&[empty.path().as_os_str()]).status.code(), Some(1));
}

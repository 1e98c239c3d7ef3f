//! The activity journal (issue 5), through its public API and the `sovereign` binary:
//! `append` (group commit, durability modes, rotation, checkpoints, recovery, kill -9),
//! `tamper` (each tampering kind caught by `verify`), `agreement` (the Python verifier agrees),
//! `retention` (pruning behind an anchor, export, queries across segments), `tlog` (the
//! transparency log: shared vectors, the appender's tree, proofs across reopen and retention).

mod agreement;
mod append;
mod retention;
mod tamper;
mod tlog;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use sovereign::journal::{
    Ack, Durability, Entry, EntryDraft, Journal, JournalConfig, JournalError, Record, Status,
    VerifyReport, public_key_path, read_public_key, sha256_tagged, verify_dir,
};

pub const ID: &str = "eu-1";

pub fn draft(i: u64) -> EntryDraft {
    EntryDraft {
        timestamp: SystemTime::now(),
        request_id: format!("req-{i:08}"),
        actor_id: format!("user-{}", i % 7),
        team_id: "team-a".into(),
        key_id: "0123456789ab".into(),
        auth: Some("key".into()),
        cert_sha256: None,
        charges: Vec::new(),
        action: "chat.completions".into(),
        model: Some("llama-3-8b".into()),
        prompt_hash: Some(sha256_tagged(format!("prompt {i}").as_bytes())),
        routing_policy: Some("rules-router".into()),
        residency_boundary: Some("eu".into()),
        retrieval_filtered: None,
        status: if i.is_multiple_of(5) {
            Status::Rejected
        } else {
            Status::Success
        },
        prompt_tokens: Some(i),
        completion_tokens: None,
        latency_us: 1000 + i,
        mcp: None,
    }
}

pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub key: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("journal");
        let key = tmp.path().join("keys/journal.key");
        Fixture {
            _tmp: tmp,
            dir,
            key,
        }
    }

    pub fn config(&self) -> JournalConfig {
        let mut cfg = JournalConfig::new(self.dir.clone(), ID, self.key.clone());
        cfg.max_segment_entries = 10;
        cfg.checkpoint_every = 10;
        cfg
    }

    /// Writes `n` entries one after another (one batch each) and closes the journal.
    pub async fn write(&self, n: u64) {
        let (journal, _) = Journal::open_async(self.config()).await.unwrap();
        for i in 0..n {
            journal.append(draft(i)).await.unwrap();
        }
        journal.close().await.unwrap();
    }

    pub fn segment(&self, first_seq: u64) -> PathBuf {
        self.dir
            .join(sovereign::journal::segment_file_name(ID, first_seq))
    }

    pub fn checkpoints(&self) -> PathBuf {
        self.dir.join(sovereign::journal::checkpoint_file_name(ID))
    }

    pub fn verify(&self) -> VerifyReport {
        verify_dir(&self.dir, None, None).unwrap()
    }
}

pub fn read_lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

pub fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(path, text).unwrap();
}

/// The report's one problem: (file name, line, seq, reason).
pub fn problem(report: &VerifyReport) -> (String, u64, Option<u64>, String) {
    assert!(!report.is_ok(), "expected a failure:\n{report}");
    let p = report
        .checkpoint_problem
        .as_ref()
        .or_else(|| report.chains.iter().find_map(|c| c.problem.as_ref()))
        .unwrap();
    let name = p.file.file_name().unwrap().to_string_lossy().into_owned();
    (name, p.line, p.seq, p.reason.clone())
}

/// Applies `edit` to every entry of the 25-entry fixture chain and re-seals them all, as an
/// attacker would: the chain is consistent again, and only a checkpoint can tell.
pub fn rewrite_chain(f: &Fixture, edit: impl Fn(&mut Entry)) {
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

// The journal's timestamps (moved from `journal/entry.rs`, which holds the entry itself).

#[test]
fn formats_utc() {
    assert_eq!(
        sovereign::journal::format_utc(std::time::UNIX_EPOCH),
        "1970-01-01T00:00:00.000Z"
    );
    let t = std::time::UNIX_EPOCH + Duration::from_millis(1_795_383_107_123);
    assert_eq!(
        sovereign::journal::format_utc(t),
        "2026-11-22T21:31:47.123Z"
    );
    let leap = std::time::UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
    assert_eq!(
        sovereign::journal::format_utc(leap),
        "2000-02-29T00:00:00.000Z"
    );
}

#[test]
fn parses_iso8601_and_round_trips_with_format_utc() {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(1_795_383_107_123);
    assert_eq!(
        sovereign::journal::parse_iso8601("2026-11-22T21:31:47.123Z"),
        Some(t)
    );
    assert_eq!(
        sovereign::journal::parse_iso8601("2026-11-23T00:31:47.123+03:00"),
        Some(t),
        "offsets are converted to UTC"
    );
    assert_eq!(
        sovereign::journal::parse_iso8601("2026-11-22"),
        Some(std::time::UNIX_EPOCH + Duration::from_secs(1_795_305_600))
    );
    assert_eq!(
        sovereign::journal::parse_iso8601("2000-02-29T00:00Z"),
        Some(std::time::UNIX_EPOCH + Duration::from_secs(951_782_400))
    );
    for bad in [
        "",
        "yesterday",
        "2026-13-01",
        "2026-02-30",
        "2026-11-22T25:00:00Z",
        "2026-11-22T21:31:47",
        "2026-11-22T21:31:47.x1Z",
        "26-11-22",
    ] {
        assert_eq!(sovereign::journal::parse_iso8601(bad), None, "{bad}");
    }
}

//! Each tampering kind caught by `verify`, each by its own test, naming file, line and seq.

use super::*;

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

/// Exhaustive single-byte tampering (a deterministic stand-in for fuzzing the line parser):
/// flipping the low bit of any byte of a segment is detected, and never panics the verifier.
#[tokio::test]
async fn every_single_byte_edit_is_detected() {
    let f = Fixture::new();
    f.write(3).await;
    let path = f.segment(1);
    let original = fs::read(&path).unwrap();
    assert!(f.verify().is_ok());
    // The checkpoint is needed only for the last byte (its `\n`: without it the last line reads
    // as a torn record); without the checkpoint's signature check the loop is 100x faster.
    let checkpoints = fs::read(f.checkpoints()).unwrap();
    fs::remove_file(f.checkpoints()).unwrap();
    for i in 0..original.len() {
        if i == original.len() - 1 {
            fs::write(f.checkpoints(), &checkpoints).unwrap();
        }
        let mut bytes = original.clone();
        bytes[i] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let report = f.verify();
        assert!(
            !report.is_ok(),
            "byte {i} ({:?}) flipped went unnoticed",
            char::from(original[i])
        );
    }
}

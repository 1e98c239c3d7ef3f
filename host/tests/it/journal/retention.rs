//! Retention (pruning closed segments behind a signed anchor, export before prune) and reading
//! the chain back with filters and a cursor across segment boundaries.

use super::*;
use sovereign::journal::query::{Filter, query};
use sovereign::journal::retention::{Retention, prune};

fn by_size(max_bytes: u64, export: Option<PathBuf>) -> Retention {
    Retention {
        max_age: None,
        max_bytes: Some(max_bytes),
        export_dir: export,
        interval: Duration::from_secs(1),
    }
}

#[tokio::test]
async fn pruning_leaves_an_anchor_the_rest_verifies_against_and_appends_continue() {
    let f = Fixture::new();
    f.write(25).await; // segments 1, 11, 21 (active)
    let export = f.dir.parent().unwrap().join("export");
    // Everything over 1 byte: both closed segments go, the active one stays.
    let report = prune(
        &f.config(),
        &by_size(1, Some(export.clone())),
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(report.segments_pruned, 2);
    assert_eq!(report.anchor_seq, 20);
    assert!(!f.segment(1).exists() && !f.segment(11).exists());
    assert!(f.segment(21).exists(), "the active segment is never pruned");
    for first in [1, 11] {
        let name = sovereign::journal::segment_file_name(ID, first);
        assert!(export.join(name).exists(), "exported before pruning");
    }
    let v = f.verify();
    assert!(v.is_ok(), "{v}");
    assert_eq!((v.chains[0].pruned, v.chains[0].entries), (20, 5));
    assert!(v.to_string().contains("20 earlier entries pruned"), "{v}");

    // The exported segments still verify on their own (from genesis to the anchor).
    let exported = verify_dir(&export, None, None).unwrap();
    assert!(exported.is_ok(), "{exported}");
    assert_eq!(exported.chains[0].head_seq, 20);

    // The gateway reopens the anchored chain and continues it.
    let (journal, opened) = Journal::open_async(f.config()).await.unwrap();
    assert_eq!(opened.head_seq, 25);
    journal.append(draft(99)).await.unwrap();
    journal.close().await.unwrap();
    let v = f.verify();
    assert!(v.is_ok(), "{v}");
    assert_eq!(v.chains[0].head_seq, 26);

    // A second pass with nothing over the limit prunes nothing and keeps the anchor.
    let again = prune(&f.config(), &by_size(1 << 30, None), SystemTime::now()).unwrap();
    assert_eq!((again.segments_pruned, again.anchor_seq), (0, 20));
}

#[tokio::test]
async fn pruning_by_age_takes_only_old_closed_segments() {
    let f = Fixture::new();
    f.write(25).await;
    let retention = Retention {
        max_age: Some(Duration::from_secs(3600)),
        max_bytes: None,
        export_dir: None,
        interval: Duration::from_secs(1),
    };
    let now = SystemTime::now();
    assert_eq!(
        prune(&f.config(), &retention, now).unwrap().segments_pruned,
        0
    );
    // Two hours later, both closed segments are past the age; the active one stays.
    let later = now + Duration::from_secs(7200);
    let report = prune(&f.config(), &retention, later).unwrap();
    assert_eq!((report.segments_pruned, report.anchor_seq), (2, 20));
    assert!(f.verify().is_ok());
}

#[tokio::test]
async fn a_pass_cut_short_after_the_anchor_is_finished_by_the_next() {
    let f = Fixture::new();
    f.write(25).await;
    let kept = fs::read(f.segment(1)).unwrap();
    prune(&f.config(), &by_size(1, None), SystemTime::now()).unwrap();
    // As if the process died after writing the anchor but before deleting segment 1.
    fs::write(f.segment(1), kept).unwrap();
    let v = f.verify();
    assert!(v.is_ok(), "covered segments are skipped: {v}");
    prune(&f.config(), &by_size(1, None), SystemTime::now()).unwrap();
    assert!(!f.segment(1).exists());
}

#[tokio::test]
async fn verify_catches_an_edited_anchor_and_a_segment_deleted_after_it() {
    let f = Fixture::new();
    f.write(35).await; // 1, 11, 21, 31 (active)
    let mut cfg = f.config();
    cfg.max_segment_entries = 10;
    // Keep the last two segments: prune only segment 1 (size of the rest is under the limit).
    let rest: u64 = [11, 21, 31]
        .iter()
        .map(|s| fs::metadata(f.segment(*s)).unwrap().len())
        .sum();
    prune(&cfg, &by_size(rest, None), SystemTime::now()).unwrap();
    assert!(!f.segment(1).exists() && f.segment(11).exists());
    let anchor = f.dir.join(sovereign::journal::anchor_file_name(ID));
    let original = fs::read_to_string(&anchor).unwrap();

    // Edited anchor (e.g. to hide which hash the pruned prefix ended on): its signature fails.
    let head = Record::parse(read_lines(&f.segment(11))[0].as_bytes())
        .unwrap()
        .entry
        .prev_hash;
    fs::write(&anchor, original.replace(&head[10..20], "0000000000")).unwrap();
    let (file, line, _, reason) = problem(&f.verify());
    assert_eq!((file.as_str(), line), ("anchor-eu-1.jsonl", 1), "{reason}");

    // The segment after the anchor deleted: the chain no longer starts where the anchor says.
    fs::write(&anchor, &original).unwrap();
    fs::remove_file(f.segment(11)).unwrap();
    let (file, line, seq, reason) = problem(&f.verify());
    assert_eq!(
        (file.as_str(), line, seq),
        ("journal-eu-1-00000000000000000021.jsonl", 1, Some(21)),
        "{reason}"
    );
}

#[tokio::test]
async fn queries_filter_and_page_across_segment_boundaries() {
    let f = Fixture::new();
    f.write(25).await; // 10 entries per segment; every fifth entry (i = 0, 5, …) is rejected
    let all = Filter::default();
    let mut seqs = Vec::new();
    let mut cursor = 1;
    loop {
        let page = query(&f.dir, ID, &all, cursor, u64::MAX, 7, u64::MAX).unwrap();
        assert!(page.entries.len() <= 7);
        seqs.extend(page.entries.iter().map(|h| h.record.entry.seq));
        match page.next_seq {
            Some(next) => cursor = next,
            None => break,
        }
    }
    assert_eq!(
        seqs,
        (1..=25).collect::<Vec<_>>(),
        "every entry once, in order"
    );

    let rejected = Filter {
        status: Some(Status::Rejected),
        ..Filter::default()
    };
    let page = query(&f.dir, ID, &rejected, 1, u64::MAX, 100, u64::MAX).unwrap();
    let got: Vec<u64> = page.entries.iter().map(|h| h.record.entry.seq).collect();
    assert_eq!(got, vec![1, 6, 11, 16, 21]);
    assert_eq!(page.next_seq, None);

    let one = Filter {
        request_id: Some("req-00000012".into()),
        actor_id: Some("user-5".into()),
        ..Filter::default()
    };
    let page = query(&f.dir, ID, &one, 1, u64::MAX, 100, u64::MAX).unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].record.entry.seq, 13);

    // A scan budget stops a fruitless scan and hands back where to continue.
    let none = Filter {
        model: Some("absent".into()),
        ..Filter::default()
    };
    let page = query(&f.dir, ID, &none, 1, u64::MAX, 100, 12).unwrap();
    assert!(page.entries.is_empty());
    assert_eq!(page.next_seq, Some(13));

    // Time window: [from, to) on the entries' timestamps.
    let past = Filter {
        to: Some("2000-01-01T00:00:00.000Z".into()),
        ..Filter::default()
    };
    assert!(
        query(&f.dir, ID, &past, 1, u64::MAX, 100, u64::MAX)
            .unwrap()
            .entries
            .is_empty()
    );
}

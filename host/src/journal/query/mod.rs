//! Reading a chain back for `POST /v1/activity/logs`: entries matching a [`Filter`], in seq
//! order, from a cursor (the seq to start at) up to a bound (the head when a walk began) across
//! segment boundaries, a page at a time. Reads the files only (never the writer's state): the
//! segment holding the cursor is found by its name, the cursor's line in it by a binary search
//! (`seek`), then lines are read until the page is full; blocking file I/O, so callers run it on
//! the blocking pool. The same pages newest first are `backward`'s; both find the cursor's line
//! with `seek`.

mod backward;
mod seek;

use std::fs::File;
use std::io::{BufReader, Read, Seek as _, SeekFrom};
use std::path::Path;

use seek::{line_before, seq_of};

use crate::journal::JournalError;
use crate::journal::entry::{Record, Status};
use crate::journal::segment::{list_dir, next_line};

/// Newest first (`order: desc`).
pub use backward::query_desc;

/// Every field set must match exactly; `from` (inclusive) and `to` (exclusive) compare the
/// entries' timestamps, which are fixed-width ISO 8601 UTC and so order as strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// As formatted by `format_utc`.
    pub from: Option<String>,
    pub to: Option<String>,
    pub actor_id: Option<String>,
    pub team_id: Option<String>,
    pub model: Option<String>,
    pub status: Option<Status>,
    pub action: Option<String>,
    pub request_id: Option<String>,
}

impl Filter {
    pub fn matches(&self, r: &Record) -> bool {
        let e = &r.entry;
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        self.from
            .as_deref()
            .is_none_or(|f| e.timestamp.as_str() >= f)
            && self.to.as_deref().is_none_or(|t| e.timestamp.as_str() < t)
            && eq(&self.actor_id, &e.actor_id)
            && eq(&self.team_id, &e.team_id)
            && eq(&self.action, &e.action)
            && eq(&self.request_id, &e.request_id)
            && self
                .model
                .as_deref()
                .is_none_or(|m| e.model.as_deref() == Some(m))
            && self.status.is_none_or(|s| s == e.status)
    }
}

/// An entry found: parsed, and its line exactly as the chain holds it (without the newline):
/// what the JSONL export sends, and the leaf of the transparency log.
#[derive(Debug, Clone)]
pub struct Hit {
    pub record: Record,
    pub line: Vec<u8>,
}

/// One page of results.
#[derive(Debug, Clone, Default)]
pub struct Page {
    pub entries: Vec<Hit>,
    /// The seq to continue from, when the page is full or the scan budget ran out; `None` at the
    /// end of the chain or of the bound.
    pub next_seq: Option<u64>,
    /// Bytes read from the segment files for this page: its cost, which does not grow with the
    /// cursor's depth.
    pub bytes_read: u64,
}

/// Bytes read from a segment at a time.
const READ_BUFFER: usize = 64 << 10;

/// Entries of chain `sovereign_id` in `dir` with `from_seq` ≤ seq ≤ `to_seq` that match
/// `filter`: at most `limit`, after reading at most `scan_budget` lines from `from_seq` (so a
/// filter that matches nothing cannot hold a blocking thread for the whole journal in one call).
pub fn query(
    dir: &Path,
    sovereign_id: &str,
    filter: &Filter,
    from_seq: u64,
    to_seq: u64,
    limit: usize,
    scan_budget: u64,
) -> Result<Page, JournalError> {
    let mut listing = list_dir(dir)?;
    let segments = listing.segments.remove(sovereign_id).unwrap_or_default();
    // Start in the last segment whose first seq is ≤ from_seq (names carry the first seq).
    let start = segments
        .iter()
        .rposition(|s| s.first_seq <= from_seq)
        .unwrap_or(0);
    let mut page = Page::default();
    let mut scanned = 0u64;
    let mut line = Vec::with_capacity(1024);
    let mut reached = false;
    for (i, segment) in segments[start..].iter().enumerate() {
        if segment.first_seq > to_seq {
            break;
        }
        let mut file = match File::open(&segment.path) {
            Ok(f) => f,
            // Pruned by retention since the listing: its entries are gone.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(JournalError::io(&segment.path)(e)),
        };
        let io = JournalError::io(&segment.path);
        if i == 0 && from_seq > segment.first_seq {
            // The cursor's line, found without reading the lines before it.
            let len = file
                .metadata()
                .map_err(JournalError::io(&segment.path))?
                .len();
            let at = line_before(&file, len, from_seq, &mut page.bytes_read)
                .map_err(JournalError::io(&segment.path))?;
            file.seek(SeekFrom::Start(at)).map_err(io)?;
        }
        let mut reader = BufReader::with_capacity(READ_BUFFER, Counted { file, read: 0 });
        let next = loop {
            // The end of the data, or a record still being written.
            if !next_line(&mut reader, &mut line).map_err(JournalError::io(&segment.path))? {
                break None;
            }
            let body = &line[..line.len() - 1];
            // The lines between where the search landed and the cursor: their seq only.
            if !reached {
                match seq_of(body) {
                    Some(seq) if seq >= from_seq => reached = true,
                    _ => continue,
                }
            }
            let Ok(record) = Record::parse(body) else {
                continue; // damage is verify's to report; a reader skips it
            };
            let seq = record.entry.seq;
            if seq < from_seq {
                continue;
            }
            if seq > to_seq {
                break Some(None);
            }
            scanned += 1;
            if filter.matches(&record) {
                page.entries.push(Hit {
                    record,
                    line: body.to_vec(),
                });
            }
            if page.entries.len() >= limit || scanned >= scan_budget {
                break Some((seq < to_seq).then_some(seq + 1));
            }
        };
        page.bytes_read += reader.get_ref().read;
        // `Some`: the page is done (where to continue, if anywhere); `None`: the next segment.
        if let Some(next_seq) = next {
            page.next_seq = next_seq;
            return Ok(page);
        }
    }
    Ok(page)
}

/// A segment file whose reads are counted (the page's cost).
struct Counted {
    file: File,
    read: u64,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use std::time::SystemTime;

    use super::*;
    use crate::journal::entry::{Entry, EntryDraft, GENESIS_HASH};
    use crate::journal::segment::segment_file_name;

    /// Segments of `per` entries each holding seqs 1..=n, written as the writer would.
    pub(in crate::journal) fn chain(dir: &Path, n: u64, per: u64) {
        let mut prev = GENESIS_HASH.to_string();
        let mut out = Vec::new();
        for seq in 1..=n {
            let draft = EntryDraft {
                timestamp: SystemTime::now(),
                request_id: format!("req-{seq:08}"),
                actor_id: "a".into(),
                team_id: if seq % 3 == 0 { "t3" } else { "t" }.into(),
                key_id: "k".into(),
                auth: None,
                cert_sha256: None,
                charges: Vec::new(),
                action: "chat.completions".into(),
                model: Some("m".into()),
                prompt_hash: None,
                routing_policy: None,
                residency_boundary: None,
                retrieval_filtered: None,
                status: Status::Success,
                prompt_tokens: Some(seq),
                completion_tokens: None,
                latency_us: 1,
                mcp: None,
            };
            prev = Entry::from_draft(draft, seq, prev).seal_into(&mut out);
            if seq % per == 0 || seq == n {
                let first = seq - (seq - 1) % per;
                std::fs::write(dir.join(segment_file_name("c", first)), &out).unwrap();
                out.clear();
            }
        }
    }

    fn seqs(page: &Page) -> Vec<u64> {
        page.entries.iter().map(|h| h.record.entry.seq).collect()
    }

    #[test]
    fn pages_from_any_cursor_up_to_the_bound_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        chain(dir.path(), 100, 7);
        let all = Filter::default();
        let q = |from, to, limit| query(dir.path(), "c", &all, from, to, limit, 1_000).unwrap();
        for from in 1..=100 {
            let page = q(from, u64::MAX, 5);
            let want: Vec<u64> = (from..=100).take(5).collect();
            assert_eq!(seqs(&page), want, "from {from}");
            // A full page says where to continue; one at the bound says it is the end.
            let next = (from + 4 <= 100).then_some(from + 5);
            assert_eq!(page.next_seq, next, "from {from}");
            let next = (from + 4 < 100).then_some(from + 5);
            assert_eq!(q(from, 100, 5).next_seq, next, "from {from}");
        }
        // The bound ends the walk: no cursor past it, even with entries after it.
        let page = q(38, 40, 5);
        assert_eq!((seqs(&page), page.next_seq), (vec![38, 39, 40], None));
        let page = q(36, 40, 5);
        assert_eq!(
            (seqs(&page), page.next_seq),
            (vec![36, 37, 38, 39, 40], None)
        );
        assert_eq!(q(41, 40, 5).entries.len(), 0);
        // A filter and the scan budget: where to continue, still inside the bound.
        let t3 = Filter {
            team_id: Some("t3".into()),
            ..Filter::default()
        };
        let page = query(dir.path(), "c", &t3, 10, 60, 100, 4).unwrap();
        assert_eq!((seqs(&page), page.next_seq), (vec![12], Some(14)));
        let page = query(dir.path(), "c", &t3, 50, 60, 100, 1_000).unwrap();
        assert_eq!((seqs(&page), page.next_seq), (vec![51, 54, 57, 60], None));
    }

    /// Issue 49: a page at a deep cursor reads about what a page at the first does, not the
    /// segment up to the cursor (0.8 ms at cursor 1, 9 ms at 8,000 before).
    #[test]
    fn a_deep_cursor_does_not_read_the_segment_before_it() {
        let dir = tempfile::tempdir().unwrap();
        chain(dir.path(), 20_000, 1_000_000);
        let size = std::fs::metadata(dir.path().join(segment_file_name("c", 1)))
            .unwrap()
            .len();
        let all = Filter::default();
        let first = query(dir.path(), "c", &all, 1, u64::MAX, 10, 1_000).unwrap();
        assert!(first.bytes_read <= READ_BUFFER as u64);
        for cursor in [2, 9_000, 19_990, 20_000] {
            let page = query(dir.path(), "c", &all, cursor, u64::MAX, 10, 1_000).unwrap();
            assert_eq!(page.entries[0].record.entry.seq, cursor);
            assert!(
                page.bytes_read < 3 * READ_BUFFER as u64,
                "cursor {cursor}: {} of {size} bytes read",
                page.bytes_read
            );
        }
    }
}

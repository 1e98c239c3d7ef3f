//! Reading a chain back for `POST /v1/activity/logs`: entries matching a [`Filter`], in seq
//! order, from a cursor (the seq to start at) across segment boundaries, a page at a time. Reads
//! the files only (never the writer's state), line by line, stopping as soon as the page is
//! full; blocking file I/O, so callers run it on the blocking pool.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use super::JournalError;
use super::entry::{Record, Status};
use super::segment::{list_dir, next_line};

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
    /// end of the chain.
    pub next_seq: Option<u64>,
}

/// Entries of chain `sovereign_id` in `dir` with seq ≥ `from_seq` that match `filter`: at most
/// `limit`, after reading at most `scan_budget` lines (so a filter that matches nothing cannot
/// hold a blocking thread for the whole journal in one call).
pub fn query(
    dir: &Path,
    sovereign_id: &str,
    filter: &Filter,
    from_seq: u64,
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
    for segment in &segments[start..] {
        let file = match File::open(&segment.path) {
            Ok(f) => f,
            // Pruned by retention since the listing: its entries are gone.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(JournalError::io(&segment.path)(e)),
        };
        let mut reader = BufReader::with_capacity(256 << 10, file);
        loop {
            // The end of the data, or a record still being written.
            if !next_line(&mut reader, &mut line).map_err(JournalError::io(&segment.path))? {
                break;
            }
            let Ok(record) = Record::parse(&line[..line.len() - 1]) else {
                continue; // damage is verify's to report; a reader skips it
            };
            let seq = record.entry.seq;
            if seq < from_seq {
                continue;
            }
            scanned += 1;
            if filter.matches(&record) {
                page.entries.push(Hit {
                    record,
                    line: line[..line.len() - 1].to_vec(),
                });
                if page.entries.len() >= limit {
                    page.next_seq = Some(seq + 1);
                    return Ok(page);
                }
            }
            if scanned >= scan_budget {
                page.next_seq = Some(seq + 1);
                return Ok(page);
            }
        }
    }
    Ok(page)
}

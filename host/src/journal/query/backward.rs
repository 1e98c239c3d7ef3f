//! Reading a chain newest first (`POST /v1/activity/logs` with `order: desc`): entries matching a
//! [`Filter`] from a cursor (the highest seq to return) down towards genesis, across segments.
//! The segment holding the cursor is found by its name and the cursor's line by `seek`; from
//! there each segment is read backwards a block at a time. Files only, blocking I/O.

use std::fs::File;
use std::io::{BufReader, Seek as _, SeekFrom};
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use super::seek::{line_before, seq_of};
use super::{Filter, Hit, Page};
use crate::journal::JournalError;
use crate::journal::entry::Record;
use crate::journal::segment::{list_dir, next_line};

/// Bytes read at a time going backwards.
const BLOCK: usize = 64 << 10;

/// Entries of chain `sovereign_id` in `dir` with seq ≤ `from_seq` that match `filter`, newest
/// first: at most `limit`, after looking at most `scan_budget` lines. `next_seq` is the seq to
/// continue down from.
pub fn query_desc(
    dir: &Path,
    sovereign_id: &str,
    filter: &Filter,
    from_seq: u64,
    limit: usize,
    scan_budget: u64,
) -> Result<Page, JournalError> {
    let mut listing = list_dir(dir)?;
    let segments = listing.segments.remove(sovereign_id).unwrap_or_default();
    let mut page = Page::default();
    let mut scanned = 0u64;
    let mut first = true;
    for segment in segments.iter().rev() {
        if segment.first_seq > from_seq {
            continue;
        }
        let io = |e| JournalError::io(&segment.path)(e);
        let file = match File::open(&segment.path) {
            Ok(f) => f,
            // Pruned by retention since the listing: nothing older is left either.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(io(e)),
        };
        let end = if first {
            end_after(&file, from_seq, &mut page.bytes_read).map_err(io)?
        } else {
            file.metadata().map_err(io)?.len()
        };
        first = false;
        let mut lines = Backward::new(&file, end);
        let mut line = Vec::new();
        while lines.prev(&mut line, &mut page.bytes_read).map_err(io)? {
            let Ok(record) = Record::parse(&line) else {
                continue; // damage is verify's to report; a reader skips it
            };
            let seq = record.entry.seq;
            if seq > from_seq {
                continue;
            }
            scanned += 1;
            if filter.matches(&record) {
                page.entries.push(Hit {
                    record,
                    line: line.clone(),
                });
            }
            if page.entries.len() >= limit || scanned >= scan_budget {
                page.next_seq = (seq > 1).then(|| seq - 1);
                return Ok(page);
            }
        }
    }
    Ok(page)
}

/// Where the data of the lines with seq ≤ `seq` ends in `file`: after the last such line, before
/// the first newer one or the end of the data (a line still being written, the writer's room).
fn end_after(file: &File, seq: u64, read: &mut u64) -> std::io::Result<u64> {
    let len = file.metadata()?.len();
    let mut at = line_before(file, len, seq.saturating_add(1), read)?;
    let mut handle = file.try_clone()?;
    handle.seek(SeekFrom::Start(at))?;
    let mut reader = BufReader::with_capacity(BLOCK, handle);
    let mut line = Vec::new();
    while next_line(&mut reader, &mut line)? {
        *read += line.len() as u64;
        if seq_of(&line[..line.len() - 1]).is_some_and(|s| s > seq) {
            break;
        }
        at += line.len() as u64;
    }
    Ok(at)
}

/// A file's complete lines before `end`, last first.
struct Backward<'a> {
    file: &'a File,
    /// Bytes of the file before `pos` are not read yet.
    pos: u64,
    /// Read, not yet handed out: the file's bytes `pos..pos + data.len()`.
    data: Vec<u8>,
}

impl<'a> Backward<'a> {
    fn new(file: &'a File, end: u64) -> Backward<'a> {
        Backward {
            file,
            pos: end,
            data: Vec::new(),
        }
    }

    /// The line before the ones handed out so far (without its newline); false at the start of
    /// the file. `end` is expected just after a newline; bytes after the last newline are never
    /// handed out.
    fn prev(&mut self, line: &mut Vec<u8>, read: &mut u64) -> std::io::Result<bool> {
        loop {
            // The data handed out next ends with a newline (dropped), or is a partial tail.
            let body_end = match self.data.last() {
                Some(b'\n') => self.data.len() - 1,
                Some(_) => {
                    // Bytes after the last newline: not a whole line; drop them.
                    match self.data.iter().rposition(|&b| b == b'\n') {
                        Some(i) => {
                            self.data.truncate(i + 1);
                            continue;
                        }
                        None if self.pos == 0 => return Ok(false),
                        None => {
                            self.read_block(read)?;
                            continue;
                        }
                    }
                }
                None if self.pos == 0 => return Ok(false),
                None => {
                    self.read_block(read)?;
                    continue;
                }
            };
            match self.data[..body_end].iter().rposition(|&b| b == b'\n') {
                Some(i) => {
                    line.clear();
                    line.extend_from_slice(&self.data[i + 1..body_end]);
                    self.data.truncate(i + 1);
                    return Ok(true);
                }
                None if self.pos == 0 => {
                    line.clear();
                    line.extend_from_slice(&self.data[..body_end]);
                    self.data.clear();
                    return Ok(true);
                }
                None => self.read_block(read)?,
            }
        }
    }

    /// Prepends the block before `pos`.
    fn read_block(&mut self, read: &mut u64) -> std::io::Result<()> {
        let n = BLOCK.min(usize::try_from(self.pos).unwrap_or(BLOCK));
        let start = self.pos - n as u64;
        let mut block = vec![0u8; n];
        self.file.read_exact_at(&mut block, start)?;
        *read += n as u64;
        block.extend_from_slice(&self.data);
        self.data = block;
        self.pos = start;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use std::io::Write as _;

    use super::*;
    use crate::journal::query::query;
    use crate::journal::query::tests::chain;

    fn seqs(page: &Page) -> Vec<u64> {
        page.entries.iter().map(|h| h.record.entry.seq).collect()
    }

    #[test]
    fn newest_first_from_any_cursor_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        chain(dir.path(), 100, 7);
        let all = Filter::default();
        for from in 1..=100 {
            let page = query_desc(dir.path(), "c", &all, from, 5, 1_000).unwrap();
            let want: Vec<u64> = (1..=from).rev().take(5).collect();
            assert_eq!(seqs(&page), want, "from {from}");
            assert_eq!(page.next_seq, (from > 5).then(|| from - 5), "from {from}");
        }
        // A cursor past the head starts at the head.
        assert_eq!(
            seqs(&query_desc(dir.path(), "c", &all, 500, 2, 1_000).unwrap()),
            [100, 99]
        );
        // Filtered, the same entries as the ascending read, reversed; the budget says where on.
        let t3 = Filter {
            team_id: Some("t3".into()),
            ..Filter::default()
        };
        let up = query(dir.path(), "c", &t3, 1, u64::MAX, 1_000, 1_000).unwrap();
        let down = query_desc(dir.path(), "c", &t3, 100, 1_000, 1_000).unwrap();
        let mut reversed = seqs(&up);
        reversed.reverse();
        assert_eq!((seqs(&down), down.next_seq), (reversed, None));
        let page = query_desc(dir.path(), "c", &t3, 60, 100, 4).unwrap();
        assert_eq!((seqs(&page), page.next_seq), (vec![60, 57], Some(56)));
    }

    #[test]
    fn a_line_being_written_and_the_writers_room_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        chain(dir.path(), 10, 100);
        let path = dir
            .path()
            .join(crate::journal::segment::segment_file_name("c", 1));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"seq\":11,\"partial").unwrap();
        f.write_all(&[0u8; 4096]).unwrap();
        let page = query_desc(dir.path(), "c", &Filter::default(), 11, 3, 1_000).unwrap();
        assert_eq!(seqs(&page), [10, 9, 8]);
    }
}

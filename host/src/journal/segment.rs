//! Journal files on disk: segment and checkpoint file names, listing a directory's chains,
//! splitting a file into lines, cutting a torn final record, fsyncing a directory.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::JournalError;

/// `journal-<sovereign_id>-<first seq, 20 digits>.jsonl`: names sort in chain order.
pub fn segment_file_name(sovereign_id: &str, first_seq: u64) -> String {
    format!("journal-{sovereign_id}-{first_seq:020}.jsonl")
}

/// `checkpoints-<sovereign_id>.jsonl`.
pub fn checkpoint_file_name(sovereign_id: &str) -> String {
    format!("checkpoints-{sovereign_id}.jsonl")
}

/// `anchor-<sovereign_id>.jsonl`: one signed line standing for the segments retention pruned.
pub fn anchor_file_name(sovereign_id: &str) -> String {
    format!("anchor-{sovereign_id}.jsonl")
}

/// A segment file of a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub first_seq: u64,
    pub path: PathBuf,
}

/// What a directory holds: each sovereign id's segments (in seq order) and checkpoint file.
#[derive(Debug, Default)]
pub struct DirListing {
    pub segments: BTreeMap<String, Vec<Segment>>,
    pub checkpoint_files: BTreeMap<String, PathBuf>,
    pub anchor_files: BTreeMap<String, PathBuf>,
}

/// Lists the journal files in `dir`; other files are ignored.
pub fn list_dir(dir: &Path) -> Result<DirListing, JournalError> {
    let mut listing = DirListing::default();
    for item in fs::read_dir(dir).map_err(JournalError::io(dir))? {
        let item = item.map_err(JournalError::io(dir))?;
        let name = item.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((id, first_seq)) = parse_segment_name(name) {
            listing
                .segments
                .entry(id.to_string())
                .or_default()
                .push(Segment {
                    first_seq,
                    path: item.path(),
                });
        } else if let Some(id) = name
            .strip_prefix("checkpoints-")
            .and_then(|rest| rest.strip_suffix(".jsonl"))
        {
            listing.checkpoint_files.insert(id.to_string(), item.path());
        } else if let Some(id) = name
            .strip_prefix("anchor-")
            .and_then(|rest| rest.strip_suffix(".jsonl"))
        {
            listing.anchor_files.insert(id.to_string(), item.path());
        }
    }
    for segments in listing.segments.values_mut() {
        segments.sort_by_key(|s| s.first_seq);
    }
    Ok(listing)
}

fn parse_segment_name(name: &str) -> Option<(&str, u64)> {
    let rest = name.strip_prefix("journal-")?.strip_suffix(".jsonl")?;
    let (id, seq) = rest.rsplit_once('-')?;
    if id.is_empty() || seq.len() != 20 || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((id, seq.parse().ok()?))
}

/// A file split into `\n`-terminated lines (without the `\n`), plus the unterminated bytes
/// after the last `\n`, if any.
pub struct Lines {
    pub lines: Vec<Vec<u8>>,
    pub unterminated: Option<Vec<u8>>,
}

/// Where a file's data ends: at its first NUL byte, else at its length. A writer with
/// `preallocate_bytes` keeps zeroed room ahead of its last write in the active segment, and no
/// line holds a NUL (JSON escapes control characters), so the first one is where writing stopped.
pub fn data_len(data: &[u8]) -> usize {
    data.iter().position(|&b| b == 0).unwrap_or(data.len())
}

pub fn read_lines(path: &Path) -> Result<Lines, JournalError> {
    let mut data = fs::read(path).map_err(JournalError::io(path))?;
    data.truncate(data_len(&data));
    let mut lines: Vec<Vec<u8>> = data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    // `split` yields the piece after the last `\n` (empty when the file ends with one).
    let tail = lines.pop().filter(|t| !t.is_empty());
    Ok(Lines {
        lines,
        unterminated: tail,
    })
}

/// Cuts the bytes after the last `\n` of `path`'s data (a record torn by a crash mid-write)
/// and the writer's zeroed room after it, and fsyncs; returns how many bytes of data were cut
/// (the torn record's).
pub fn cut_torn_tail(path: &Path) -> Result<u64, JournalError> {
    let data = fs::read(path).map_err(JournalError::io(path))?;
    let end = data_len(&data);
    let keep = data[..end]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let cut = (end - keep) as u64;
    if data.len() > keep {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(JournalError::io(path))?;
        f.set_len(keep as u64).map_err(JournalError::io(path))?;
        f.sync_all().map_err(JournalError::io(path))?;
    }
    Ok(cut)
}

/// Reads the next complete line (with its `\n`) into `line`; false at the end of the data: end
/// of file, a line still being written (no `\n` yet), or the writer's zeroed room (a NUL). A
/// reader racing the writer may see a line's end before its start: a NUL inside the line, so
/// that line is not complete yet either.
pub fn next_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(false);
        }
        match buf.iter().position(|&b| b == b'\n' || b == 0) {
            Some(i) if buf[i] == b'\n' => {
                line.extend_from_slice(&buf[..=i]);
                reader.consume(i + 1);
                return Ok(true);
            }
            Some(_) => return Ok(false),
            None => {
                let n = buf.len();
                line.extend_from_slice(buf);
                reader.consume(n);
            }
        }
    }
}

/// Makes a directory entry (a created file) durable.
pub fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(JournalError::io(dir))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn segment_names_round_trip() {
        let name = segment_file_name("eu-west.1", 42);
        assert_eq!(name, "journal-eu-west.1-00000000000000000042.jsonl");
        assert_eq!(parse_segment_name(&name), Some(("eu-west.1", 42)));
        assert_eq!(parse_segment_name("journal-x-42.jsonl"), None);
        assert_eq!(
            parse_segment_name("journal--00000000000000000042.jsonl"),
            None
        );
    }
}

//! Following a chain as it grows: the complete lines after a seq, read from where the last read
//! stopped (a byte offset in the current segment), moving to the next segment when one starts.
//! Replicas copy their chain into the shared store with it (`state::journal_index`). Reads the
//! files only, never the writer's state; blocking file I/O.

use std::fs::File;
use std::io::{BufReader, Seek as _, SeekFrom};
use std::path::PathBuf;

use super::JournalError;
use super::entry::Record;
use super::segment::{list_dir, next_line};

/// One line of the chain: its record and its text (without the newline).
#[derive(Debug, Clone)]
pub struct Line {
    pub record: Record,
    pub text: String,
}

#[derive(Debug)]
pub struct Tail {
    dir: PathBuf,
    sovereign_id: String,
    /// The next seq wanted.
    next_seq: u64,
    /// The segment being read and the offset after the last complete line read from it.
    at: Option<(PathBuf, u64)>,
}

impl Tail {
    /// Follows chain `sovereign_id` in `dir` from `next_seq` on.
    pub fn new(dir: PathBuf, sovereign_id: String, next_seq: u64) -> Tail {
        Tail {
            dir,
            sovereign_id,
            next_seq: next_seq.max(1),
            at: None,
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Up to `max` complete lines from the next seq on (fewer at the end of the chain).
    pub fn read(&mut self, max: usize) -> Result<Vec<Line>, JournalError> {
        let mut out = Vec::new();
        while out.len() < max {
            let segments = list_dir(&self.dir)?
                .segments
                .remove(&self.sovereign_id)
                .unwrap_or_default();
            // The segment holding the next seq: the current one, or the last starting at or
            // before it (after a restart or a prune).
            let current = match &self.at {
                Some((path, _)) if segments.iter().any(|s| s.path == *path) => path.clone(),
                _ => {
                    let Some(s) = segments.iter().rev().find(|s| s.first_seq <= self.next_seq)
                    else {
                        // Pruned past the next seq: start at the oldest segment left.
                        let Some(first) = segments.first() else {
                            return Ok(out);
                        };
                        self.next_seq = first.first_seq;
                        self.at = Some((first.path.clone(), 0));
                        continue;
                    };
                    self.at = Some((s.path.clone(), 0));
                    s.path.clone()
                }
            };
            let offset = self.at.as_ref().map_or(0, |(_, o)| *o);
            let read = self.read_segment(&current, offset, max - out.len(), &mut out)?;
            self.at = Some((current.clone(), read));
            if out.len() >= max {
                break;
            }
            // At the end of this segment: move on only if a later one exists (else the chain's
            // end; the writer may still be appending here).
            match segments.iter().position(|s| s.path == current) {
                Some(i) if i + 1 < segments.len() => {
                    self.at = Some((segments[i + 1].path.clone(), 0));
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Complete lines of `path` from `offset`; returns the offset after the last one read.
    fn read_segment(
        &mut self,
        path: &PathBuf,
        offset: u64,
        max: usize,
        out: &mut Vec<Line>,
    ) -> Result<u64, JournalError> {
        let mut file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(offset),
            Err(e) => return Err(JournalError::io(path)(e)),
        };
        file.seek(SeekFrom::Start(offset))
            .map_err(JournalError::io(path))?;
        let mut reader = BufReader::with_capacity(256 << 10, file);
        let mut pos = offset;
        let mut line = Vec::with_capacity(1024);
        let mut taken = 0;
        while taken < max {
            if !next_line(&mut reader, &mut line).map_err(JournalError::io(path))? {
                break; // the end, or a line still being written
            }
            pos += line.len() as u64;
            let text = &line[..line.len() - 1];
            let Ok(record) = Record::parse(text) else {
                continue; // damage is verify's to report
            };
            if record.entry.seq < self.next_seq {
                continue;
            }
            self.next_seq = record.entry.seq + 1;
            out.push(Line {
                record,
                text: String::from_utf8_lossy(text).into_owned(),
            });
            taken += 1;
        }
        Ok(pos)
    }
}

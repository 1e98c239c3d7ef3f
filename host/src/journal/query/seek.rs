//! Finding where a seq's line is in a segment without reading the lines before it: a binary
//! search over byte offsets, each probe a positioned read of the first whole line after an
//! offset and its `seq`. A segment's seqs increase line by line, so a probe says which half
//! holds the seq; the search stops at a window small enough to read through.

use std::fs::File;
use std::os::unix::fs::FileExt as _;

use serde::Deserialize;

/// The search stops when the seq is known to start within this many bytes; the reader then
/// reads through them (a few dozen lines).
pub const SCAN_WINDOW: u64 = 16 << 10;
/// Bytes read at a time by a probe (a canonical line is about 600 bytes).
const PROBE_BYTES: usize = 4 << 10;
/// A probe gives up on a line longer than this (the search is then narrowed, never wrong).
const MAX_PROBE_LINE: usize = 1 << 20;

#[derive(Deserialize)]
struct SeqOnly {
    seq: u64,
}

/// The `seq` of a line (without its newline), read without the rest of the record.
pub fn seq_of(line: &[u8]) -> Option<u64> {
    serde_json::from_slice::<SeqOnly>(line).ok().map(|s| s.seq)
}

/// A line start in `file` at or before the line of the first seq ≥ `seq`, such that every line
/// before it has a smaller seq: where a reader looking for `seq` may start. `len` is the file's
/// length (zeroed room after the data reads as the end). `read` counts the bytes read.
pub fn line_before(file: &File, len: u64, seq: u64, read: &mut u64) -> std::io::Result<u64> {
    let (mut lo, mut hi) = (0u64, len);
    let mut line = Vec::with_capacity(PROBE_BYTES);
    while hi - lo > SCAN_WINDOW {
        let mid = lo + (hi - lo) / 2;
        match probe(file, mid, len, &mut line, read)? {
            // A line starting in (lo, hi) whose seq is below the one sought: everything up to
            // it is too.
            Some((start, at)) if start < hi && at < seq => lo = start,
            // At or past the seq, no whole line after `mid`, or a line that does not parse:
            // look in the lower half (reading from `lo` stays right whatever is above).
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// The first line that starts at or after `at` (a line starts after a `\n`): its offset and
/// seq; `None` at the end of the data, on a NUL, or when it does not parse.
fn probe(
    file: &File,
    at: u64,
    len: u64,
    line: &mut Vec<u8>,
    read: &mut u64,
) -> std::io::Result<Option<(u64, u64)>> {
    line.clear();
    // From the byte before `at`: if it is a `\n`, the line at `at` is whole.
    let mut pos = at.saturating_sub(1);
    let mut start = if at == 0 { Some(0) } else { None };
    let mut buf = [0u8; PROBE_BYTES];
    while pos < len {
        let want = PROBE_BYTES.min((len - pos) as usize);
        let n = file.read_at(&mut buf[..want], pos)?;
        if n == 0 {
            return Ok(None);
        }
        *read += n as u64;
        let mut chunk = &buf[..n];
        if start.is_none() {
            match chunk.iter().position(|&b| b == b'\n' || b == 0) {
                Some(i) if chunk[i] == b'\n' => {
                    start = Some(pos + i as u64 + 1);
                    chunk = &chunk[i + 1..];
                }
                Some(_) => return Ok(None), // the writer's zeroed room: the end of the data
                None => {
                    pos += n as u64;
                    continue;
                }
            }
        }
        match chunk.iter().position(|&b| b == b'\n' || b == 0) {
            Some(i) if chunk[i] == b'\n' => {
                line.extend_from_slice(&chunk[..i]);
                return Ok(seq_of(line).zip(start).map(|(seq, start)| (start, seq)));
            }
            Some(_) => return Ok(None),
            None => line.extend_from_slice(chunk),
        }
        if line.len() > MAX_PROBE_LINE {
            return Ok(None);
        }
        pos += n as u64;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use std::io::Write as _;

    use super::*;

    /// A segment of `n` lines from seq `first`, of varying lengths; the offsets of each line.
    fn segment(first: u64, n: u64, room: usize) -> (tempfile::NamedTempFile, Vec<u64>) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut offsets = Vec::new();
        let mut at = 0u64;
        for seq in first..first + n {
            let pad = "x".repeat((seq % 17) as usize * 40);
            let line = format!(
                "{{\"actor_id\":\"{pad}\",\"charges\":[{{\"seq\":1}}],\"seq\":{seq},\"team_id\":\"t\"}}\n"
            );
            offsets.push(at);
            at += line.len() as u64;
            f.write_all(line.as_bytes()).unwrap();
        }
        f.write_all(&vec![0u8; room]).unwrap();
        (f, offsets)
    }

    #[test]
    fn lands_within_a_window_before_the_seq_reading_a_few_probes() {
        let (first, n) = (1_000, 20_000);
        let room = 300_000;
        let (f, offsets) = segment(first, n, room);
        let file = File::open(f.path()).unwrap();
        let len = file.metadata().unwrap().len();
        let data_end = len - room as u64;
        for seq in [
            0,
            1,
            first,
            first + 1,
            first + 5_000,
            first + n - 1,
            first + n,
            u64::MAX,
        ] {
            let mut read = 0;
            let at = line_before(&file, len, seq, &mut read).unwrap();
            // A line start whose lines before are all below `seq`, and close to it.
            let i = offsets.iter().position(|&o| o == at).unwrap() as u64;
            assert!(first + i <= seq.max(first), "seq {seq}: starts at line {i}");
            let target = offsets
                .get(seq.saturating_sub(first).min(n) as usize)
                .copied()
                .unwrap_or(data_end);
            assert!(
                target - at <= SCAN_WINDOW + 2_000,
                "seq {seq}: {at} vs {target}"
            );
            // About log2(file / window) probes, never the file.
            assert!(read < 100 << 10, "seq {seq}: read {read} bytes");
        }
    }

    #[test]
    fn damage_and_long_lines_narrow_the_search_but_never_skip_the_seq() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut at_seq = 0;
        for seq in 1..=3_000u64 {
            if seq == 2_000 {
                at_seq = f.as_file().metadata().unwrap().len();
            }
            let line = if seq % 7 == 0 {
                "not json at all\n".to_string()
            } else {
                format!("{{\"seq\":{seq},\"x\":\"{}\"}}\n", "y".repeat(200))
            };
            f.write_all(line.as_bytes()).unwrap();
        }
        let file = File::open(f.path()).unwrap();
        let len = file.metadata().unwrap().len();
        let at = line_before(&file, len, 2_000, &mut 0).unwrap();
        assert!(at <= at_seq && at_seq - at <= SCAN_WINDOW + 300);
    }
}

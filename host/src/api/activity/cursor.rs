//! The activity log's `cursor`: where a read continues, and the bound of the walk it belongs
//! to, printed into `next_cursor` and read back.

use crate::journal::{format_utc, parse_iso8601};
use crate::state::AppState;

/// Where a read continues, and where the walk it belongs to ends: what existed when its first
/// page was read (every page read is itself journaled, so a walk bounded only by the chain's end
/// would chase its own tail). docs/OPERATIONS.md, "Walking the journal".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cursor {
    /// This replica's chain: the seq to read next (newest first: the highest still to read), and
    /// the head when the walk began.
    Seq { next: u64, head: u64 },
    /// The shared index: (timestamp, replica, seq) of the last row looked at, if any, and the
    /// walk's bound, the time its first page was read (rows before it, exclusive).
    After {
        last: Option<(String, String, i64)>,
        before: String,
    },
}

impl Cursor {
    /// Where a walk starts: the head now (replicas: the time now, 1 ms on so that what is
    /// already in the index is inside the bound); oldest first from seq 1, newest first from the
    /// head itself.
    pub(super) fn start(app: &AppState, shared: bool, descending: bool) -> Cursor {
        if shared {
            let now = std::time::SystemTime::now() + std::time::Duration::from_millis(1);
            Cursor::After {
                last: None,
                before: format_utc(now),
            }
        } else {
            let head = app.journal().map_or(0, |j| j.durable_seq());
            let next = if descending { head.max(1) } else { 1 };
            Cursor::Seq { next, head }
        }
    }

    /// A `next_cursor` read back. Cursors without a bound (a plain seq, as docs/JOURNAL.md tells
    /// an export to continue with, or `timestamp~replica~seq` from before the bound) take the
    /// bound of `start`, the head now.
    pub(super) fn parse(c: &str, start: Cursor) -> Option<Cursor> {
        let parts: Vec<&str> = c.split('~').collect();
        let seq = |s: &str| s.parse::<u64>().ok().filter(|s| *s >= 1);
        match (start, parts.as_slice()) {
            (Cursor::Seq { head, .. }, [next]) => Some(Cursor::Seq {
                next: seq(next)?,
                head,
            }),
            (Cursor::Seq { .. }, [next, head]) => Some(Cursor::Seq {
                next: seq(next)?,
                head: head.parse().ok()?,
            }),
            (Cursor::After { before, .. }, [t, r, s]) => Some(Cursor::After {
                last: Some((t.to_string(), r.to_string(), s.parse().ok()?)),
                before,
            }),
            (Cursor::After { .. }, [t, r, s, before]) if parse_iso8601(before).is_some() => {
                let last = match (t.is_empty(), r.is_empty(), s.is_empty()) {
                    (true, true, true) => None,
                    _ => Some((t.to_string(), r.to_string(), s.parse().ok()?)),
                };
                Some(Cursor::After {
                    last,
                    before: before.to_string(),
                })
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cursor::Seq { next, head } => write!(f, "{next}~{head}"),
            Cursor::After {
                last: Some((t, r, s)),
                before,
            } => write!(f, "{t}~{r}~{s}~{before}"),
            Cursor::After { last: None, before } => write!(f, "~~~{before}"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    const LOCAL: Cursor = Cursor::Seq { next: 1, head: 500 };

    fn shared_start() -> Cursor {
        Cursor::After {
            last: None,
            before: "2026-11-24T00:00:00.000Z".into(),
        }
    }

    /// Issue 49: a cursor carries the head its walk began at, printed and parsed back; one
    /// without (a plain seq, or a replica's from before) is bounded by the head now.
    #[test]
    fn cursors_carry_their_walks_bound() {
        let next = Cursor::Seq { next: 7, head: 42 };
        assert_eq!(next.to_string(), "7~42");
        assert_eq!(Cursor::parse("7~42", LOCAL), Some(next));
        assert_eq!(
            Cursor::parse("42", LOCAL),
            Some(Cursor::Seq {
                next: 42,
                head: 500
            })
        );
        // Replicas: a position in the shared index and the walk's time bound.
        let at = Cursor::After {
            last: Some(("2026-11-23T00:00:00.000Z".into(), "gw-a".into(), 7)),
            before: "2026-11-23T01:00:00.000Z".into(),
        };
        assert_eq!(Cursor::parse(&at.to_string(), shared_start()), Some(at));
        let old = "2026-11-23T00:00:00.000Z~gw-a~7";
        assert_eq!(
            Cursor::parse(old, shared_start()),
            Some(Cursor::After {
                last: Some(("2026-11-23T00:00:00.000Z".into(), "gw-a".into(), 7)),
                before: "2026-11-24T00:00:00.000Z".into(),
            })
        );
        let empty = shared_start().to_string();
        assert_eq!(Cursor::parse(&empty, shared_start()), Some(shared_start()));
        for (bad, start) in [
            ("42", shared_start()),
            ("a~b~c~yesterday", shared_start()),
            ("t~r~7", LOCAL),
            ("0~9", LOCAL),
            ("7~x", LOCAL),
            ("0", LOCAL),
        ] {
            assert_eq!(Cursor::parse(bad, start), None, "{bad}");
        }
    }
}

//! RFC 8785 (JCS) encoding of an entry, written by hand for the writer's hot path: the keys are
//! fixed, so they are emitted in their sorted order; values are strings, integers and null only.
//! A test checks the bytes against `serde_json_canonicalizer` (the general implementation).

use std::io::Write as _;

use super::entry::Entry;

/// The canonical encoding of `entry` without `journal_hash`, split where `journal_hash` sorts
/// (between `completion_tokens` and `key_id`): `head` ends with `,`, `tail` starts with
/// `"key_id"`. `head + tail` is what is hashed; `head + "journal_hash":"…", + tail` is the line.
pub fn encode_split(entry: &Entry, head: &mut Vec<u8>, tail: &mut Vec<u8>) {
    head.push(b'{');
    key_str(head, "action", &entry.action);
    key_str(head, "actor_id", &entry.actor_id);
    key_opt_u64(head, "completion_tokens", entry.completion_tokens);
    key_str(tail, "key_id", &entry.key_id);
    key_u64(tail, "latency_us", entry.latency_us);
    key_opt_str(tail, "model", entry.model.as_deref());
    key_str(tail, "prev_hash", &entry.prev_hash);
    key_opt_str(tail, "prompt_hash", entry.prompt_hash.as_deref());
    key_opt_u64(tail, "prompt_tokens", entry.prompt_tokens);
    key_str(tail, "request_id", &entry.request_id);
    key_opt_str(
        tail,
        "residency_boundary",
        entry.residency_boundary.as_deref(),
    );
    key_opt_str(tail, "routing_policy", entry.routing_policy.as_deref());
    key_u64(tail, "seq", entry.seq);
    key_str(tail, "status", entry.status.as_str());
    key_str(tail, "team_id", &entry.team_id);
    key_str(tail, "timestamp", &entry.timestamp);
    // Every key above wrote a trailing comma; the object's last one becomes the closing brace.
    if let Some(last) = tail.last_mut() {
        *last = b'}';
    }
}

/// `"key":"value",` for a journal-hash field inserted between the halves.
pub fn key_str(out: &mut Vec<u8>, key: &str, value: &str) {
    key_only(out, key);
    string(out, value);
    out.push(b',');
}

fn key_opt_str(out: &mut Vec<u8>, key: &str, value: Option<&str>) {
    match value {
        Some(v) => key_str(out, key, v),
        None => {
            key_only(out, key);
            out.extend_from_slice(b"null,");
        }
    }
}

fn key_u64(out: &mut Vec<u8>, key: &str, value: u64) {
    key_only(out, key);
    let _ = write!(out, "{value},"); // writing to a Vec cannot fail
}

fn key_opt_u64(out: &mut Vec<u8>, key: &str, value: Option<u64>) {
    match value {
        Some(v) => key_u64(out, key, v),
        None => {
            key_only(out, key);
            out.extend_from_slice(b"null,");
        }
    }
}

fn key_only(out: &mut Vec<u8>, key: &str) {
    string(out, key);
    out.push(b':');
}

/// A JSON string as RFC 8785 writes it: `"` and `\` escaped, `\b \t \n \f \r` short, other
/// controls `\u00xx` (lowercase), everything else (non-ASCII too) as raw UTF-8.
fn string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0c => b"\\f",
            b'\r' => b"\\r",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use crate::journal::entry::{EntryDraft, GENESIS_HASH, Status};
    use std::time::UNIX_EPOCH;

    fn entry(text: &str, optional: bool) -> Entry {
        Entry::from_draft(
            EntryDraft {
                timestamp: UNIX_EPOCH,
                request_id: format!("req-{text}"),
                actor_id: text.into(),
                team_id: "t\u{7f}\u{2028}".into(),
                key_id: "k".into(),
                action: "chat.completions".into(),
                model: optional.then(|| text.to_string()),
                prompt_hash: optional.then(|| "sha256:00".to_string()),
                routing_policy: optional.then(|| "r".to_string()),
                residency_boundary: optional.then(|| "eu".to_string()),
                status: Status::Blocked,
                prompt_tokens: optional.then_some(u64::from(u32::MAX) * 1000),
                completion_tokens: optional.then_some(0),
                latency_us: 7,
            },
            9_007_199_254_740_991, // 2^53 - 1, the largest integer JCS keeps exact
            GENESIS_HASH.into(),
        )
    }

    #[test]
    fn matches_the_general_rfc8785_implementation() {
        let texts = [
            "",
            "plain",
            "quote\" backslash\\ slash/",
            "controls \u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f}",
            "ünïcödé 日本語 🦀",
        ];
        for text in texts {
            for optional in [true, false] {
                let e = entry(text, optional);
                let (mut head, mut tail) = (Vec::new(), Vec::new());
                encode_split(&e, &mut head, &mut tail);
                head.extend_from_slice(&tail);
                let reference = serde_json_canonicalizer::to_vec(&e).unwrap();
                assert_eq!(
                    String::from_utf8(head).unwrap(),
                    String::from_utf8(reference).unwrap()
                );
            }
        }
    }
}

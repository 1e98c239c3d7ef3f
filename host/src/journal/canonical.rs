//! RFC 8785 (JCS) writing by hand, for the writer's hot path: `"key":value,` members whose values
//! are strings, integers, null and arrays of such objects, strings escaped as JCS requires. The caller emits the keys
//! in their sorted order (`entry.rs` for an entry, whose test checks the bytes against
//! `serde_json_canonicalizer`, the general implementation). Knows nothing of entries.

use std::io::Write as _;

/// `"key":"value",` for a journal-hash field inserted between the halves.
pub(super) fn key_str(out: &mut Vec<u8>, key: &str, value: &str) {
    key_only(out, key);
    string(out, value);
    out.push(b',');
}

pub(super) fn key_opt_str(out: &mut Vec<u8>, key: &str, value: Option<&str>) {
    match value {
        Some(v) => key_str(out, key, v),
        None => {
            key_only(out, key);
            out.extend_from_slice(b"null,");
        }
    }
}

pub(super) fn key_u64(out: &mut Vec<u8>, key: &str, value: u64) {
    key_only(out, key);
    let _ = write!(out, "{value},"); // writing to a Vec cannot fail
}

pub(super) fn key_opt_u64(out: &mut Vec<u8>, key: &str, value: Option<u64>) {
    match value {
        Some(v) => key_u64(out, key, v),
        None => {
            key_only(out, key);
            out.extend_from_slice(b"null,");
        }
    }
}

/// `"key":[{…},{…}],`: an array of objects, each written by `members` as `"k":v,` members in
/// their sorted order (the object's last comma becomes its closing brace).
pub(super) fn key_objects<T>(
    out: &mut Vec<u8>,
    key: &str,
    items: &[T],
    members: impl Fn(&mut Vec<u8>, &T),
) {
    key_only(out, key);
    out.push(b'[');
    for item in items {
        let start = out.len();
        out.push(b'{');
        members(out, item);
        if out.len() > start + 1 {
            out.pop(); // the last member's comma
        }
        out.extend_from_slice(b"},");
    }
    if !items.is_empty() {
        out.pop(); // the last object's comma
    }
    out.extend_from_slice(b"],");
}

/// `"key":{…},`: one object whose members `members` writes as `"k":v,` in their sorted order.
pub(super) fn key_object(out: &mut Vec<u8>, key: &str, members: impl FnOnce(&mut Vec<u8>)) {
    key_only(out, key);
    let start = out.len();
    out.push(b'{');
    members(out);
    if out.len() > start + 1 {
        out.pop(); // the last member's comma
    }
    out.extend_from_slice(b"},");
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
    // Almost every value (ids, hashes, timestamps) needs no escape: one branch-free scan (it
    // vectorizes), one copy.
    let plain = !bytes.iter().fold(false, |seen, &b| {
        seen | (b == b'"') | (b == b'\\') | (b < 0x20)
    });
    if plain {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
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

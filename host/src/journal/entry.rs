//! One journal entry: its fields, its canonical encoding (RFC 8785) and its `journal_hash`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::canonical::{key_objects, key_opt_str, key_opt_u64, key_str, key_u64};
use super::tool_call::{self, ToolCallRecord};

/// `prev_hash` of the first entry of a chain (seq 1): `sha256:` followed by 64 zeros.
pub const GENESIS_HASH: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// How a journaled request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Served.
    Success,
    /// Refused by a guardrail.
    Blocked,
    /// Refused by the gateway (validation, limits, residency, budget, routing).
    Rejected,
    /// Failed (upstream or internal error).
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Blocked => "blocked",
            Status::Rejected => "rejected",
            Status::Error => "error",
        }
    }
}

/// What a request was charged, as its usage row records it (docs/JOURNAL.md, `charges`): the
/// model whose prices applied, the spend in micro-units of the currency, tokens in and out. The
/// entry is the charge's durable record: the store commits it without a sync of its own and
/// takes it back from here after a power failure (`budget::recover`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Charge {
    pub model: String,
    pub spend_micros: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
}

/// What the request path hands the journal; the writer adds `seq`, `prev_hash`, `journal_hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDraft {
    pub timestamp: SystemTime,
    pub request_id: String,
    pub actor_id: String,
    pub team_id: String,
    pub key_id: String,
    /// How the caller authenticated: `key` or `mtls` (`None` only in entries written before
    /// the field existed).
    pub auth: Option<String>,
    /// `sha256:<hex>` of the client certificate the connection presented, when it did.
    pub cert_sha256: Option<String>,
    /// What the request was charged (empty: nothing, or not carried by the entry).
    pub charges: Vec<Charge>,
    /// e.g. `chat.completions`, `embeddings`.
    pub action: String,
    /// The model that served (or would have served) the request; `None` before one is known.
    pub model: Option<String>,
    /// `sha256:<hex>` of the prompt; the prompt itself is never stored.
    pub prompt_hash: Option<String>,
    pub routing_policy: Option<String>,
    pub residency_boundary: Option<String>,
    /// Chunks a retrieval policy kept from leaving the gateway (docs/POLICIES.md, "Retrieval
    /// policies"); `None` when it removed none.
    pub retrieval_filtered: Option<u64>,
    pub status: Status,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Time from request start to the entry, in microseconds.
    pub latency_us: u64,
    /// The MCP tool call the request made (`mcp.tools/call`), else `None`.
    pub mcp: Option<ToolCallRecord>,
}

/// An entry as hashed: every field but `journal_hash`. Field names are the on-disk keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub seq: u64,
    pub prev_hash: String,
    /// ISO 8601 UTC with milliseconds, e.g. `2026-11-22T21:31:47.123Z`.
    pub timestamp: String,
    pub request_id: String,
    pub actor_id: String,
    pub team_id: String,
    pub key_id: String,
    /// Absent from the line when `None` (entries from before issue 16 hash as they did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_sha256: Option<String>,
    /// Absent from the line when empty (entries from before it hash as they did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charges: Vec<Charge>,
    pub action: String,
    pub model: Option<String>,
    pub prompt_hash: Option<String>,
    pub routing_policy: Option<String>,
    pub residency_boundary: Option<String>,
    /// Absent from the line when `None` (entries from before it hash as they did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieval_filtered: Option<u64>,
    pub status: Status,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub latency_us: u64,
    /// Absent from the line when `None` (every entry but an MCP tool call's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<ToolCallRecord>,
}

/// An entry with its hash: what one line of a segment holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    #[serde(flatten)]
    pub entry: Entry,
    pub journal_hash: String,
}

impl Entry {
    /// Fills in a draft at position `seq` after `prev_hash`.
    pub fn from_draft(draft: EntryDraft, seq: u64, prev_hash: String) -> Entry {
        Entry {
            seq,
            prev_hash,
            timestamp: format_utc(draft.timestamp),
            request_id: draft.request_id,
            actor_id: draft.actor_id,
            team_id: draft.team_id,
            key_id: draft.key_id,
            auth: draft.auth,
            cert_sha256: draft.cert_sha256,
            charges: draft.charges,
            action: draft.action,
            model: draft.model,
            prompt_hash: draft.prompt_hash,
            routing_policy: draft.routing_policy,
            residency_boundary: draft.residency_boundary,
            retrieval_filtered: draft.retrieval_filtered,
            status: draft.status,
            prompt_tokens: draft.prompt_tokens,
            completion_tokens: draft.completion_tokens,
            latency_us: draft.latency_us,
            mcp: draft.mcp,
        }
    }

    /// `journal_hash = "sha256:" + hex(SHA-256(utf8(prev_hash) || JCS(entry without journal_hash)))`
    /// where JCS is RFC 8785 (keys sorted, no whitespace, minimal string escapes, integers as
    /// decimal). docs/JOURNAL.md gives the definition and a Python equivalent.
    pub fn hash(&self) -> String {
        let (mut head, mut tail) = (Vec::with_capacity(512), Vec::with_capacity(512));
        encode_split(self, &mut head, &mut tail);
        digest(&self.prev_hash, &head, &tail)
    }

    /// Hashes the entry and appends its line (canonical JSON of the record, then `\n`) to `out`;
    /// returns the `journal_hash`.
    pub fn seal_into(&self, out: &mut Vec<u8>) -> String {
        let start = out.len();
        let mut tail = Vec::with_capacity(512);
        encode_split(self, out, &mut tail);
        let hash = digest(&self.prev_hash, &out[start..], &tail);
        key_str(out, "journal_hash", &hash);
        out.extend_from_slice(&tail);
        out.push(b'\n');
        hash
    }
}

/// The canonical encoding of `entry` without `journal_hash`, split where `journal_hash` sorts
/// (between `completion_tokens` and `key_id`): `head` ends with `,`, `tail` starts with
/// `"key_id"`. `head + tail` is what is hashed; `head + "journal_hash":"…", + tail` is the line.
fn encode_split(entry: &Entry, head: &mut Vec<u8>, tail: &mut Vec<u8>) {
    head.push(b'{');
    key_str(head, "action", &entry.action);
    key_str(head, "actor_id", &entry.actor_id);
    // Written only when present, so older entries keep their encoding.
    if let Some(auth) = &entry.auth {
        key_str(head, "auth", auth);
    }
    if let Some(cert) = &entry.cert_sha256 {
        key_str(head, "cert_sha256", cert);
    }
    if !entry.charges.is_empty() {
        key_objects(head, "charges", &entry.charges, |out, c| {
            key_str(out, "model", &c.model);
            key_u64(out, "spend_micros", c.spend_micros);
            key_u64(out, "tokens_in", c.tokens_in);
            key_u64(out, "tokens_out", c.tokens_out);
        });
    }
    key_opt_u64(head, "completion_tokens", entry.completion_tokens);
    key_str(tail, "key_id", &entry.key_id);
    key_u64(tail, "latency_us", entry.latency_us);
    if let Some(record) = &entry.mcp {
        tool_call::encode(tail, record);
    }
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
    if let Some(n) = entry.retrieval_filtered {
        key_u64(tail, "retrieval_filtered", n);
    }
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

fn digest(prev_hash: &str, head: &[u8], tail: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(prev_hash.as_bytes());
    h.update(head);
    h.update(tail);
    tagged(&h.finalize().into())
}

/// `sha256:<hex>` of a digest, written straight into its string: `hex::encode` builds one a
/// character at a time through an iterator and `format!` copies it again (the entry's digest
/// took ~2,000 instructions fewer this way, callgrind). `hex::encode_to_slice` would need its
/// impossible length error handled; a table needs nothing.
fn tagged(digest: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity("sha256:".len() + 64);
    out.push_str("sha256:");
    for &b in digest {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// A line as parsed: the entry's fields and `journal_hash`, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    seq: u64,
    prev_hash: String,
    timestamp: String,
    request_id: String,
    actor_id: String,
    team_id: String,
    key_id: String,
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    cert_sha256: Option<String>,
    #[serde(default)]
    charges: Vec<Charge>,
    action: String,
    model: Option<String>,
    prompt_hash: Option<String>,
    routing_policy: Option<String>,
    residency_boundary: Option<String>,
    #[serde(default)]
    retrieval_filtered: Option<u64>,
    status: Status,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    latency_us: u64,
    #[serde(default)]
    mcp: Option<ToolCallRecord>,
    journal_hash: String,
}

impl Record {
    /// Parses one line: a JSON object with exactly the entry's fields plus `journal_hash`.
    pub fn parse(line: &[u8]) -> Result<Record, String> {
        let r: RawRecord = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        let entry = Entry {
            seq: r.seq,
            prev_hash: r.prev_hash,
            timestamp: r.timestamp,
            request_id: r.request_id,
            actor_id: r.actor_id,
            team_id: r.team_id,
            key_id: r.key_id,
            auth: r.auth,
            cert_sha256: r.cert_sha256,
            charges: r.charges,
            action: r.action,
            model: r.model,
            prompt_hash: r.prompt_hash,
            routing_policy: r.routing_policy,
            residency_boundary: r.residency_boundary,
            retrieval_filtered: r.retrieval_filtered,
            status: r.status,
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            latency_us: r.latency_us,
            mcp: r.mcp,
        };
        Ok(Record {
            entry,
            journal_hash: r.journal_hash,
        })
    }
}

/// `sha256:<hex>` of some bytes (e.g. a prompt, for `prompt_hash`).
pub fn sha256_tagged(bytes: &[u8]) -> String {
    tagged(&Sha256::digest(bytes).into())
}

/// Formats a time as ISO 8601 UTC with milliseconds (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
pub fn format_utc(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Parses an ISO 8601 date or UTC/offset date-time (`2026-11-22`, `2026-11-22T21:31:47Z`,
/// `2026-11-22T21:31:47.123+03:00`, `2026-11-22T21:31Z`) into a time. `None` if malformed.
pub fn parse_iso8601(text: &str) -> Option<SystemTime> {
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (date, time) = match text.split_once(['T', 't', ' ']) {
        Some((d, t)) => (d, Some(t)),
        None => (text, None),
    };
    let mut parts = date.splitn(3, '-');
    let (y, m, d) = (
        num(parts.next()?)?,
        num(parts.next()?)?,
        num(parts.next()?)?,
    );
    if date.len() != 10 || !(1970..=9999).contains(&y) || !(1..=12).contains(&m) {
        return None;
    }
    let days_in_month = match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=days_in_month).contains(&d) {
        return None;
    }
    let mut ms = days_from_civil(y, m, d) * 86_400_000;
    if let Some(time) = time {
        let (clock, offset_s): (&str, i64) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
            (c, 0)
        } else {
            let at = time.rfind(['+', '-'])?;
            let (c, off) = time.split_at(at);
            let sign = if off.starts_with('-') { -1 } else { 1 };
            let (oh, om) = off[1..].split_once(':')?;
            let (oh, om) = (num(oh)?, num(om)?);
            if oh > 23 || om > 59 || off.len() != 6 {
                return None;
            }
            (c, sign * i64::try_from(oh * 3600 + om * 60).ok()?)
        };
        let (hms, frac) = match clock.split_once('.') {
            Some((hms, frac)) => (hms, Some(frac)),
            None => (clock, None),
        };
        let mut f = hms.split(':');
        let (h, mi) = (num(f.next()?)?, num(f.next()?)?);
        let sec = match f.next() {
            Some(s) => num(s)?,
            None => 0,
        };
        if f.next().is_some() || h > 23 || mi > 59 || sec > 59 {
            return None;
        }
        let frac_ms = match frac {
            Some(fr) => {
                num(fr)?;
                let digits: String = fr.chars().chain("000".chars()).take(3).collect();
                num(&digits)?
            }
            None => 0,
        };
        let local = i64::try_from(ms + (h * 3600 + mi * 60 + sec) * 1000 + frac_ms).ok()?;
        ms = u64::try_from(local - offset_s * 1000).ok()?;
    }
    Some(UNIX_EPOCH + std::time::Duration::from_millis(ms))
}

/// (year, month, day), proleptic Gregorian → days since 1970-01-01 (H. Hinnant's algorithm).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn tagged_digests_are_lower_case_hex_of_sha256() {
        // FIPS 180-2's "abc" vector.
        assert_eq!(
            sha256_tagged(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let d = digest("sha256:0", b"{", b"}");
        assert_eq!(d.len(), 7 + 64);
        assert_eq!(d, sha256_tagged(b"sha256:0{}"));
    }

    fn sample() -> Entry {
        Entry::from_draft(
            EntryDraft {
                timestamp: UNIX_EPOCH,
                request_id: "req-1".into(),
                actor_id: "alice \"ü\"\n".into(),
                team_id: "t".into(),
                key_id: "k".into(),
                auth: Some("key".into()),
                cert_sha256: None,
                charges: Vec::new(),
                action: "chat.completions".into(),
                model: None,
                prompt_hash: Some(sha256_tagged(b"hi")),
                routing_policy: None,
                residency_boundary: Some("eu".into()),
                retrieval_filtered: None,
                status: Status::Success,
                prompt_tokens: Some(3),
                completion_tokens: None,
                latency_us: 42,
                mcp: None,
            },
            1,
            GENESIS_HASH.into(),
        )
    }

    #[test]
    fn canonical_encoding_is_rfc8785() {
        let bytes = serde_json_canonicalizer::to_vec(&sample()).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        // Keys sorted by code unit, no whitespace, only `"`, `\` and controls escaped, null kept.
        assert!(text.starts_with(r#"{"action":"chat.completions","actor_id":"alice \"ü\"\n","#));
        assert!(text.contains(r#""completion_tokens":null,"key_id":"k","latency_us":42,"#));
        assert!(text.ends_with(
            r#""seq":1,"status":"success","team_id":"t","timestamp":"1970-01-01T00:00:00.000Z"}"#
        ));
    }

    #[test]
    fn sealed_line_parses_back_and_rehashes() {
        let mut out = Vec::new();
        let hash = sample().seal_into(&mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        let record = Record::parse(&out[..out.len() - 1]).unwrap();
        assert_eq!(record.journal_hash, hash);
        assert_eq!(record.entry.hash(), hash);
        // The line is the canonical encoding of the whole record.
        let reference = serde_json_canonicalizer::to_vec(&record).unwrap();
        assert_eq!(&out[..out.len() - 1], reference.as_slice());
        assert_eq!(record.entry, sample());
        assert!(Record::parse(br#"{"seq":1}"#).is_err());
    }

    // The hand-written encoding against the general implementation (was in canonical.rs).

    fn entry(text: &str, optional: bool) -> Entry {
        Entry::from_draft(
            EntryDraft {
                timestamp: UNIX_EPOCH,
                request_id: format!("req-{text}"),
                actor_id: text.into(),
                team_id: "t\u{7f}\u{2028}".into(),
                key_id: "k".into(),
                auth: Some("key".into()),
                cert_sha256: None,
                charges: if optional {
                    vec![
                        Charge {
                            model: text.into(),
                            spend_micros: u64::from(u32::MAX) * 1000,
                            tokens_in: 0,
                            tokens_out: 7,
                        },
                        Charge {
                            model: "e5".into(),
                            spend_micros: 0,
                            tokens_in: 1,
                            tokens_out: 0,
                        },
                    ]
                } else {
                    Vec::new()
                },
                action: "chat.completions".into(),
                model: optional.then(|| text.to_string()),
                prompt_hash: optional.then(|| "sha256:00".to_string()),
                routing_policy: optional.then(|| "r".to_string()),
                residency_boundary: optional.then(|| "eu".to_string()),
                retrieval_filtered: optional.then_some(2),
                status: Status::Blocked,
                prompt_tokens: optional.then_some(u64::from(u32::MAX) * 1000),
                completion_tokens: optional.then_some(0),
                latency_us: 7,
                mcp: optional.then(|| ToolCallRecord {
                    arguments_hash: "sha256:01".into(),
                    decision: "allow".into(),
                    result_hash: (!text.is_empty()).then(|| text.to_string()),
                    server: "records".into(),
                    tool: text.into(),
                }),
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
                let mut line = Vec::new();
                let hash = e.seal_into(&mut line);
                let back = Record::parse(&line[..line.len() - 1]).unwrap();
                assert_eq!((back.entry, back.journal_hash), (e, hash));
            }
        }
    }
}

//! The activity log's streamed formats: `jsonl` (each line as the chain holds it) and `csv`
//! (RFC 4180, a header row), produced a chunk at a time as the client reads them.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt as _;
use http::header;

use super::cursor::Cursor;
use super::{EXPORT_CHUNK, Format, Reader, SCAN_BUDGET};
use crate::journal::Record;

/// A `jsonl` or `csv` body produced a chunk at a time as the client reads it (bounded memory
/// whatever the export's size). A read error mid-way ends the body early (the client sees a
/// truncated transfer, never a silently short one: the connection is reset).
pub(super) fn export(reader: Reader, cursor: Cursor, limit: usize, format: Format) -> Response {
    let head = (format == Format::Csv).then(|| Bytes::from_static(CSV_HEADER.as_bytes()));
    // `Some(cursor)`: more to read from there.
    let state = (reader, Some(cursor), limit);
    let rows = futures_util::stream::unfold(state, move |(reader, next, left)| async move {
        let from = next?;
        if left == 0 {
            return None;
        }
        let chunk = left.min(EXPORT_CHUNK);
        match reader.page(from, chunk, SCAN_BUDGET).await {
            Ok(page) => {
                let mut out = Vec::with_capacity(page.entries.len() * 600);
                for (replica, hit) in &page.entries {
                    match format {
                        Format::Csv => csv_row(&mut out, &hit.record, replica),
                        // The line as the chain holds it, byte for byte: verifiable as is, and
                        // the leaf of the transparency log.
                        _ => {
                            out.extend_from_slice(&hit.line);
                            out.push(b'\n');
                        }
                    }
                }
                let left = left - page.entries.len();
                Some((
                    Ok::<_, std::io::Error>(Bytes::from(out)),
                    (reader, page.next, left),
                ))
            }
            Err(e) => Some((Err(std::io::Error::other(e.message)), (reader, None, 0))),
        }
    });
    let body = futures_util::stream::iter(head.map(Ok)).chain(rows);
    let content_type = match format {
        Format::Csv => "text/csv; charset=utf-8",
        _ => "application/x-ndjson",
    };
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(body),
    )
        .into_response()
}

const CSV_HEADER: &str = "seq,timestamp,request_id,actor_id,team_id,key_id,action,model,prompt_hash,routing_policy,residency_boundary,status,prompt_tokens,completion_tokens,latency_us,prev_hash,journal_hash,auth,cert_sha256,replica\r\n";

/// One RFC 4180 row (fields quoted when they hold `,`, `"`, CR or LF; null is empty).
fn csv_row(out: &mut Vec<u8>, r: &Record, replica: &str) {
    let e = &r.entry;
    let num = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
    // `auth` and `cert_sha256` (issue 16), then `replica` (issue 17) come last, so older
    // readers' columns keep their place.
    let fields: [&str; 20] = [
        &e.seq.to_string(),
        &e.timestamp,
        &e.request_id,
        &e.actor_id,
        &e.team_id,
        &e.key_id,
        &e.action,
        e.model.as_deref().unwrap_or(""),
        e.prompt_hash.as_deref().unwrap_or(""),
        e.routing_policy.as_deref().unwrap_or(""),
        e.residency_boundary.as_deref().unwrap_or(""),
        e.status.as_str(),
        &num(e.prompt_tokens),
        &num(e.completion_tokens),
        &e.latency_us.to_string(),
        &e.prev_hash,
        &r.journal_hash,
        e.auth.as_deref().unwrap_or(""),
        e.cert_sha256.as_deref().unwrap_or(""),
        replica,
    ];
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if f.contains([',', '"', '\r', '\n']) {
            out.push(b'"');
            out.extend_from_slice(f.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(f.as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn csv_rows_quote_what_needs_quoting() {
        let line = br#"{"action":"chat.completions","actor_id":"a, \"b\"\nc","completion_tokens":null,"journal_hash":"sha256:j","key_id":"k","latency_us":7,"model":null,"prev_hash":"sha256:p","prompt_hash":null,"prompt_tokens":3,"request_id":"req-1","residency_boundary":"eu","routing_policy":null,"seq":1,"status":"success","team_id":"t","timestamp":"2026-11-22T21:31:47.123Z"}"#;
        let record = Record::parse(line).unwrap();
        let mut out = Vec::new();
        csv_row(&mut out, &record, "gw-1");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1,2026-11-22T21:31:47.123Z,req-1,\"a, \"\"b\"\"\nc\",t,k,chat.completions,,,,eu,success,3,,7,sha256:p,sha256:j,,,gw-1\r\n"
        );
        assert_eq!(CSV_HEADER.split(',').count(), 20);
    }
}

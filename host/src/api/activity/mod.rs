//! Reading the activity journal over HTTP: `POST /v1/activity/logs` (auditor: its own team's
//! entries; admin: all) with filters, cursor pagination and `json` / `jsonl` / `csv` output
//! (the latter two streamed). File reads run on the blocking pool, never on the runtime, and
//! never touch the writer. docs/JOURNAL.md, "Querying".
//!
//! Replicas (`[store] postgres`) answer from the shared index of every replica's chain
//! (`state::journal_index`), ordered by time, then replica, then seq; `replica` narrows to one
//! chain. This replica's own entries are copied there first, so a client reads its own writes.
//!
//! The same log proved: `transparency` (checkpoints, inclusion and consistency proofs under
//! `/v1/activity/`).

mod cursor;
mod export;
pub mod transparency;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::access::Principal;
use crate::journal::query::{Filter, Hit, query, query_desc};
use crate::journal::{JournalError, Record, Status, format_utc, parse_iso8601};
use crate::server::body;
use crate::server::error::ApiError;
use crate::state::{AppState, JournalIndex};
use crate::store::JournalScan;
use cursor::Cursor;

/// Most entries in one `json` page.
pub const MAX_PAGE: usize = 1_000;
const DEFAULT_PAGE: usize = 100;
/// Most entries in one `jsonl`/`csv` export, read and sent a chunk at a time.
pub const MAX_EXPORT: usize = 1_000_000;
const EXPORT_CHUNK: usize = 1_000;
/// Longest a walk's first page waits for its own bound on replicas ([`Cursor::start`]'s 1 ms
/// and a clock tick).
const FIRST_PAGE_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

/// Most lines one read looks at before it returns what it has and where to continue.
const SCAN_BUDGET: u64 = 100_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogsRequest {
    from: Option<String>,
    to: Option<String>,
    actor_id: Option<String>,
    team_id: Option<String>,
    model: Option<String>,
    status: Option<String>,
    action: Option<String>,
    request_id: Option<String>,
    /// One replica's chain (its `sovereign_id`).
    replica: Option<String>,
    limit: Option<u64>,
    cursor: Option<String>,
    format: Option<String>,
    /// `asc` (oldest first, the default) or `desc` (newest first).
    order: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Jsonl,
    Csv,
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, "permission_error", message)
        .with_code("insufficient_permissions")
}

/// Where this gateway's chain is, if the journal is on.
fn journal_dir(app: &AppState) -> Result<(PathBuf, String), ApiError> {
    let settings = app
        .config()
        .journal
        .as_ref()
        .ok_or_else(ApiError::journal_disabled)?;
    Ok((
        settings.open.dir.clone(),
        settings.open.sovereign_id.clone(),
    ))
}

/// `POST /v1/activity/logs`.
pub async fn logs(
    State(app): State<AppState>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    // Role first: a member's body is not read.
    let own_team = match principal.role.as_str() {
        "admin" => None,
        "auditor" => Some(principal.team_id.to_string()),
        other => {
            return Err(forbidden(&format!(
                "The activity log needs an auditor or admin key; this key's role is `{other}`."
            )));
        }
    };
    let (dir, sovereign_id) = journal_dir(&app)?;
    let raw = body::read_json_object(&headers, body, &app.config().server).await?;
    let request: LogsRequest = serde_json::from_value(Value::Object(raw))
        .map_err(|e| ApiError::bad_request(format!("Invalid activity-log query: {e}.")))?;
    let replica = request.replica.clone();
    let shared = app.replicated();
    let Parsed {
        mut filter,
        cursor,
        limit,
        format,
        descending,
    } = parse(request, |descending| {
        Cursor::start(&app, shared, descending)
    })?;
    if let Cursor::After { last: None, before } = &cursor
        && let Some(bound) = parse_iso8601(before)
    {
        // A walk's first page on replicas: its bound is a time to the millisecond, and this
        // request's own entry, stamped when it ends, must not fall under it (docs/OPERATIONS.md,
        // "Walking the journal"). Only the bound `Cursor::start` just made is waited for (a
        // client's cursor may name any time), and only a few ticks (a clock stepped back).
        let now = std::time::SystemTime::now;
        if bound
            .duration_since(now())
            .is_ok_and(|left| left <= FIRST_PAGE_WAIT)
        {
            for _ in 0..3 {
                match bound.duration_since(now()) {
                    Ok(left) => tokio::time::sleep(left.min(FIRST_PAGE_WAIT)).await,
                    Err(_) => break,
                }
            }
        }
    }
    if let Some(team) = own_team {
        match &filter.team_id {
            Some(asked) if *asked != team => {
                return Err(forbidden(
                    "An auditor key sees its own team's entries only.",
                ));
            }
            _ => filter.team_id = Some(team),
        }
    }
    let source = if shared {
        // Read your own writes: this replica's latest entries are in the index first.
        if let Err(e) = app.index_journal_now().await {
            tracing::warn!(error = %e, "copying the journal before a query failed");
        }
        Source::Shared {
            index: app.journal_index(),
            replica,
        }
    } else {
        // One chain here: another replica's has no entries on this one.
        let other = replica.is_some_and(|r| r != sovereign_id);
        Source::Local {
            dir,
            sovereign_id,
            other,
        }
    };
    let reader = Reader {
        source: Arc::new(source),
        filter: Arc::new(filter),
        descending,
    };
    match format {
        Format::Json => {
            let page = reader.page(cursor, limit, SCAN_BUDGET).await?;
            let data: Vec<Value> = page
                .entries
                .iter()
                .map(|(replica, hit)| {
                    let mut v = serde_json::to_value(&hit.record).unwrap_or(Value::Null);
                    if let Some(o) = v.as_object_mut() {
                        o.insert("replica".into(), Value::String(replica.clone()));
                    }
                    v
                })
                .collect();
            Ok(axum::Json(json!({
                "object": "list",
                "data": data,
                "next_cursor": page.next.map(|c| c.to_string()),
            }))
            .into_response())
        }
        Format::Jsonl | Format::Csv => Ok(export::export(reader, cursor, limit, format)),
    }
}

/// A request, checked.
#[derive(Debug)]
struct Parsed {
    filter: Filter,
    cursor: Cursor,
    limit: usize,
    format: Format,
    /// Newest first.
    descending: bool,
}

/// The request's filters, checked: 400 naming the parameter on anything malformed. `start` is
/// where a walk in that order begins (newest first: at the head).
fn parse(r: LogsRequest, start: impl FnOnce(bool) -> Cursor) -> Result<Parsed, ApiError> {
    let time = |param: &str, v: Option<String>| -> Result<Option<String>, ApiError> {
        v.map(|t| {
            parse_iso8601(&t).map(format_utc).ok_or_else(|| {
                ApiError::invalid(
                    param,
                    format!("`{param}` must be an ISO 8601 date or date-time with a zone, such as 2026-11-22T21:00:00Z."),
                )
            })
        })
        .transpose()
    };
    let status = r
        .status
        .map(|s| match s.as_str() {
            "success" => Ok(Status::Success),
            "blocked" => Ok(Status::Blocked),
            "rejected" => Ok(Status::Rejected),
            "error" => Ok(Status::Error),
            _ => Err(ApiError::invalid(
                "status",
                "`status` must be one of success, blocked, rejected, error.",
            )),
        })
        .transpose()?;
    let format = match r.format.as_deref() {
        None | Some("json") => Format::Json,
        Some("jsonl") => Format::Jsonl,
        Some("csv") => Format::Csv,
        Some(_) => {
            return Err(ApiError::invalid(
                "format",
                "`format` must be json, jsonl or csv.",
            ));
        }
    };
    let max = if format == Format::Json {
        MAX_PAGE
    } else {
        MAX_EXPORT
    };
    let limit = match r.limit {
        None if format == Format::Json => DEFAULT_PAGE,
        None => MAX_EXPORT,
        Some(n) if n >= 1 && n <= max as u64 => n as usize,
        Some(_) => {
            return Err(ApiError::invalid(
                "limit",
                format!("`limit` must be between 1 and {max} for this format."),
            ));
        }
    };
    let bad_cursor = || {
        ApiError::invalid(
            "cursor",
            "`cursor` must be a `next_cursor` from an earlier page.",
        )
    };
    let descending = match r.order.as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(_) => return Err(ApiError::invalid("order", "`order` must be asc or desc.")),
    };
    let start = start(descending);
    let cursor = match r.cursor {
        None => start,
        Some(c) => Cursor::parse(&c, start).ok_or_else(bad_cursor)?,
    };
    let filter = Filter {
        from: time("from", r.from)?,
        to: time("to", r.to)?,
        actor_id: r.actor_id,
        team_id: r.team_id,
        model: r.model,
        status,
        action: r.action,
        request_id: r.request_id,
    };
    Ok(Parsed {
        filter,
        cursor,
        limit,
        format,
        descending,
    })
}

enum Source {
    Local {
        dir: PathBuf,
        sovereign_id: String,
        /// The query named another replica: nothing here.
        other: bool,
    },
    Shared {
        index: JournalIndex,
        replica: Option<String>,
    },
}

#[derive(Clone)]
struct Reader {
    source: Arc<Source>,
    filter: Arc<Filter>,
    descending: bool,
}

/// A page: each entry with the replica whose chain it is in, and where to continue.
struct Page {
    entries: Vec<(String, Hit)>,
    next: Option<Cursor>,
}

/// Rows read from the shared index at once.
const SHARED_CHUNK: u32 = 500;

impl Reader {
    async fn page(&self, cursor: Cursor, limit: usize, budget: u64) -> Result<Page, ApiError> {
        match &*self.source {
            Source::Local { other: true, .. } => Ok(Page {
                entries: Vec::new(),
                next: None,
            }),
            Source::Local {
                dir, sovereign_id, ..
            } => {
                let (dir, id, filter) = (dir.clone(), sovereign_id.clone(), self.filter.clone());
                let (next, head) = match cursor {
                    Cursor::Seq { next, head } => (next, head),
                    Cursor::After { .. } => (1, u64::MAX), // not made for this source
                };
                let descending = self.descending;
                let page = tokio::task::spawn_blocking(move || {
                    if descending {
                        // Newest first: `next` is the highest seq still to read.
                        query_desc(&dir, &id, &filter, next.min(head), limit, budget)
                    } else {
                        query(&dir, &id, &filter, next, head, limit, budget)
                    }
                })
                .await
                .map_err(ApiError::journal_unreadable)?
                .map_err(|e: JournalError| ApiError::journal_unreadable(e))?;
                let replica = sovereign_id.clone();
                Ok(Page {
                    entries: page
                        .entries
                        .into_iter()
                        .map(|r| (replica.clone(), r))
                        .collect(),
                    next: page.next_seq.map(|next| Cursor::Seq { next, head }),
                })
            }
            Source::Shared { index, replica } => {
                self.shared_page(index, replica.clone(), cursor, limit, budget)
                    .await
            }
        }
    }

    /// Rows of the shared index narrowed by team, replica and time in SQL, the rest of the
    /// filter applied to each line; at most `budget` rows looked at.
    async fn shared_page(
        &self,
        index: &JournalIndex,
        replica: Option<String>,
        cursor: Cursor,
        limit: usize,
        budget: u64,
    ) -> Result<Page, ApiError> {
        let (mut after, before) = match cursor {
            Cursor::After { last, before } => (last, Some(before)),
            Cursor::Seq { .. } => (None, None), // not made for this source
        };
        // Rows before the walk's bound and before the filter's `to`: the earlier of the two.
        let to = match (self.filter.to.clone(), before.clone()) {
            (Some(to), Some(before)) => Some(to.min(before)),
            (to, before) => to.or(before),
        };
        let mut entries = Vec::new();
        let mut scanned = 0u64;
        loop {
            let rows = index
                .rows(JournalScan {
                    after: after.clone(),
                    descending: self.descending,
                    team_id: self.filter.team_id.clone(),
                    replica: replica.clone(),
                    from: self.filter.from.clone(),
                    to: to.clone(),
                    limit: SHARED_CHUNK,
                })
                .await
                .map_err(ApiError::journal_unreadable)?;
            let full = rows.len() == SHARED_CHUNK as usize;
            for row in rows {
                scanned += 1;
                after = Some((row.timestamp, row.replica.clone(), row.seq));
                let Ok(record) = Record::parse(row.line.as_bytes()) else {
                    continue; // damage is verify's to report
                };
                if self.filter.matches(&record) {
                    let line = row.line.into_bytes();
                    entries.push((row.replica, Hit { record, line }));
                }
                if entries.len() >= limit || scanned >= budget {
                    let next = before.map(|before| Cursor::After {
                        last: after,
                        before,
                    });
                    return Ok(Page { entries, next });
                }
            }
            if !full {
                return Ok(Page {
                    entries,
                    next: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    fn request(v: Value) -> LogsRequest {
        serde_json::from_value(v).unwrap()
    }

    const LOCAL: Cursor = Cursor::Seq { next: 1, head: 500 };

    #[test]
    fn filters_are_parsed_and_times_normalised() {
        let Parsed {
            filter: f,
            cursor,
            limit,
            format,
            descending,
        } = parse(
            request(json!({
                "from": "2026-11-23T00:30:00+03:00", "to": "2026-11-23", "status": "rejected",
                "cursor": "42", "format": "csv", "model": "m"
            })),
            |_| LOCAL,
        )
        .unwrap();
        assert_eq!(f.from.as_deref(), Some("2026-11-22T21:30:00.000Z"));
        assert_eq!(f.to.as_deref(), Some("2026-11-23T00:00:00.000Z"));
        assert_eq!(f.status, Some(Status::Rejected));
        assert!(!descending);
        assert_eq!(
            (cursor, limit, format),
            (
                Cursor::Seq {
                    next: 42,
                    head: 500
                },
                MAX_EXPORT,
                Format::Csv
            )
        );
        let p = parse(request(json!({})), |_| LOCAL).unwrap();
        assert_eq!(
            (p.cursor, p.limit, p.format),
            (LOCAL, DEFAULT_PAGE, Format::Json)
        );
        // Newest first starts where `start` says for that order (the head).
        let top = Cursor::Seq {
            next: 500,
            head: 500,
        };
        let p = parse(request(json!({"order": "desc"})), |desc| {
            if desc { top.clone() } else { LOCAL }
        })
        .unwrap();
        assert!(p.descending && p.cursor == top);
    }

    #[test]
    fn bad_filters_name_their_parameter() {
        for (body, param) in [
            (json!({"from": "soon"}), "from"),
            (json!({"status": "ok"}), "status"),
            (json!({"limit": 0}), "limit"),
            (json!({"limit": 1001}), "limit"),
            (json!({"cursor": "0"}), "cursor"),
            (json!({"format": "xml"}), "format"),
            (json!({"order": "newest"}), "order"),
        ] {
            let e = parse(request(body.clone()), |_| LOCAL).err().unwrap();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(e.param.as_deref(), Some(param), "{body}");
        }
        assert!(
            parse(request(json!({"format": "jsonl", "limit": 5000})), |_| {
                LOCAL
            })
            .is_ok()
        );
    }
}

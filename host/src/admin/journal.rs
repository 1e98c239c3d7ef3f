//! `GET /v1/admin/journal/verify` (admin): the report of `sovereign journal verify` as JSON, run
//! on the blocking pool. docs/JOURNAL.md, "Verifying". With replicas, `replicas` adds every
//! replica's chain as indexed in the shared store, each walked link by link and every hash
//! recomputed (the signed checkpoints are on each replica's disk: that replica's own `chains`).
//!
//! `POST`/`GET /v1/admin/journal/checkpoints` (auditor or admin): sign this replica's durable head
//! now, and list its signed checkpoints — what an auditor keeps off the host to verify an export
//! later without trusting it (docs/JOURNAL.md, "Checkpoints").

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::journal::{
    SignedCheckpoint, VerifyReport, checkpoint_file_name, public_key_path, read_public_key,
    verify_dir,
};
use crate::pipeline::admission::AdminOnly;
use crate::server::error::ApiError;
use crate::state::{AppState, JournalIndex};

/// `GET /v1/admin/journal/verify`: what `sovereign journal verify DIR --public-key <the
/// operator's key>` reports, as JSON. 200 whatever the verdict; `ok` says it.
pub async fn verify(State(app): State<AppState>, _: AdminOnly) -> Result<Response, ApiError> {
    let settings = app
        .config()
        .journal
        .clone()
        .ok_or_else(ApiError::journal_disabled)?;
    let report = tokio::task::spawn_blocking(move || {
        let public = read_public_key(&public_key_path(&settings.open.signing_key))?;
        verify_dir(&settings.open.dir, None, Some(&public))
    })
    .await
    .map_err(ApiError::journal_unreadable)?
    .map_err(ApiError::journal_unreadable)?;
    let mut out = report_json(&report);
    if app.replicated() {
        // This replica's newest entries first, so its indexed chain is whole.
        if let Err(e) = app.index_journal_now().await {
            tracing::warn!(error = %e, "copying the journal before verifying failed");
        }
        let replicas = indexed_chains(&app.journal_index()).await?;
        let all_ok = replicas.iter().all(|r| r["ok"] == true);
        out["replicas"] = Value::Array(replicas);
        out["ok"] = Value::Bool(out["ok"] == true && all_ok);
    }
    Ok(axum::Json(out).into_response())
}

/// `POST /v1/admin/journal/checkpoints`: waits until every entry so far is durable, signs a
/// checkpoint of the chain's head, appends it to the checkpoints file; 201 with it. 409 when the
/// journal is off or still empty.
pub async fn checkpoint(State(app): State<AppState>) -> Result<Response, ApiError> {
    let journal = app.journal().ok_or_else(ApiError::journal_disabled)?;
    match journal
        .checkpoint_now()
        .await
        .map_err(ApiError::journal_unreadable)?
    {
        Some(signed) => Ok((StatusCode::CREATED, axum::Json(signed)).into_response()),
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            "invalid_request_error",
            "The journal has no entries yet: there is nothing to vouch for.",
        )
        .with_code("journal_empty")),
    }
}

/// Checkpoints listed at most (the newest; a journal writes one per 10,000 entries).
const CHECKPOINTS_LISTED: usize = 10_000;

/// `GET /v1/admin/journal/checkpoints`: this replica's signed checkpoints, oldest first (the
/// newest 10,000). Lines that do not parse (a torn last line) are left out: verify reports them.
pub async fn checkpoints(State(app): State<AppState>) -> Result<Response, ApiError> {
    let settings = app
        .config()
        .journal
        .clone()
        .ok_or_else(ApiError::journal_disabled)?;
    let path = settings
        .open
        .dir
        .join(checkpoint_file_name(&settings.open.sovereign_id));
    let text = match tokio::fs::read(&path).await {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(ApiError::journal_unreadable(e)),
    };
    let all: Vec<SignedCheckpoint> = text
        .split(|b| *b == b'\n')
        .filter_map(|line| SignedCheckpoint::parse(line).ok())
        .collect();
    let data = &all[all.len().saturating_sub(CHECKPOINTS_LISTED)..];
    Ok(axum::Json(json!({"object": "list", "data": data})).into_response())
}

/// Rows of one indexed chain read at once.
const CHAIN_PAGE: u32 = 5_000;

/// Every replica's indexed chain: seqs contiguous, each entry's `prev_hash` the previous entry's
/// `journal_hash`, each `journal_hash` recomputed from its entry.
async fn indexed_chains(index: &JournalIndex) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    for replica in index
        .replicas()
        .await
        .map_err(ApiError::journal_unreadable)?
    {
        let (mut after, mut entries, mut prev): (i64, u64, Option<String>) = (0, 0, None);
        let mut problem: Option<Value> = None;
        'chain: loop {
            let rows = index
                .chain(replica.clone(), after, CHAIN_PAGE)
                .await
                .map_err(ApiError::journal_unreadable)?;
            let full = rows.len() == CHAIN_PAGE as usize;
            for row in rows {
                let bad = |reason: &str| Some(json!({"seq": row.seq, "reason": reason}));
                let record = match crate::journal::Record::parse(row.line.as_bytes()) {
                    Ok(r) => r,
                    Err(e) => {
                        problem = bad(&format!("unparseable entry: {e}"));
                        break 'chain;
                    }
                };
                let e = &record.entry;
                if i64::try_from(e.seq).ok() != Some(row.seq) || (after > 0 && row.seq != after + 1)
                {
                    problem = bad("seq out of order (an entry missing or moved)");
                } else if prev.as_ref().is_some_and(|p| *p != e.prev_hash)
                    || (e.seq == 1 && e.prev_hash != crate::journal::GENESIS_HASH)
                {
                    problem = bad("prev_hash is not the previous entry's journal_hash");
                } else if e.hash() != record.journal_hash {
                    problem = bad("journal_hash does not match the entry (altered)");
                }
                if problem.is_some() {
                    break 'chain;
                }
                after = row.seq;
                entries += 1;
                prev = Some(record.journal_hash);
            }
            if !full {
                break;
            }
        }
        out.push(json!({
            "sovereign_id": replica,
            "ok": problem.is_none(),
            "entries": entries,
            "head_seq": after,
            "head_hash": prev,
            "problem": problem,
        }));
    }
    Ok(out)
}

fn report_json(r: &VerifyReport) -> Value {
    let problem = |p: &crate::journal::Problem| {
        json!({
            "file": p.file.file_name().map(|n| n.to_string_lossy().into_owned()),
            "line": p.line,
            "seq": p.seq,
            "reason": p.reason,
        })
    };
    let chains: Vec<Value> = r
        .chains
        .iter()
        .map(|c| {
            json!({
                "sovereign_id": c.sovereign_id,
                "ok": c.problem.is_none(),
                "entries": c.entries,
                "pruned": c.pruned,
                "segments": c.segments,
                "head_seq": c.head_seq,
                "head_hash": c.head_hash,
                "checkpoints_checked": c.checkpoints_checked,
                "torn_tail_bytes": c.torn_tail.as_ref().map(|t| t.bytes),
                "problem": c.problem.as_ref().map(problem),
            })
        })
        .collect();
    json!({
        "object": "journal.verification",
        "ok": r.is_ok(),
        "report": r.to_string(),
        "checkpoint_problem": r.checkpoint_problem.as_ref().map(problem),
        "chains": chains,
    })
}

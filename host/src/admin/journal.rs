//! `GET /v1/admin/journal/verify` (admin): the report of `sovereign journal verify` as JSON, run
//! on the blocking pool. docs/JOURNAL.md, "Verifying".

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::journal::{VerifyReport, public_key_path, read_public_key, verify_dir};
use crate::pipeline::admission::AdminOnly;
use crate::server::error::ApiError;
use crate::state::AppState;

/// `GET /v1/admin/journal/verify`: what `sovereign journal verify DIR --public-key <the
/// operator's key>` reports, as JSON. 200 whatever the verdict; `ok` says it.
pub async fn verify(State(app): State<AppState>, _: AdminOnly) -> Result<Response, ApiError> {
    let settings = app
        .0
        .config
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
    Ok(axum::Json(report_json(&report)).into_response())
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

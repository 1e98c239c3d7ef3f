//! The document library on the request path: [`library`] (the gateway's library, or 404 when
//! `[documents] enabled = false`), [`ingest`] (an upload into the library with the journal and
//! guardrail phases around `rag::Library::ingest`, its usage recorded) and [`record_usage`] (the
//! embedding model's work for this call, in the journal entry and in usage). The documents,
//! files, vector-store, retrieval and built-in embeddings endpoints share them.

use std::sync::Arc;

use serde_json::Map;

use super::call::Call;
use super::guard;
use crate::rag::{Library, Upload, usage};
use crate::server::error::ApiError;
use crate::store::documents::DocumentRecord;

/// The library, or 404 when `[documents] enabled = false`.
pub fn library(call: &Call) -> Result<Arc<Library>, ApiError> {
    call.app.library().cloned().ok_or_else(|| {
        ApiError::not_found(
            "Documents and retrieval are disabled on this gateway ([documents] enabled = false).",
        )
    })
}

/// An upload into the library, top to bottom; `true` when it was stored now, `false` when the
/// team's collection already held these bytes. How `/v1/documents/upload` stores a document and
/// how a file attached to a vector store is ingested.
pub async fn ingest(
    call: &mut Call,
    library: &Library,
    upload: Upload,
) -> Result<(DocumentRecord, bool), ApiError> {
    // The journal records the file's hash, never its text.
    let sha256 = upload.sha256();
    call.identify(&Map::new(), None);
    call.audit.content(&sha256);

    // Re-upload, extraction, the guardrail on the chunks (block: nothing stored; redact: what
    // is stored), embedded, stored, indexed.
    let call = &*call;
    let ingested = library
        .ingest(upload, sha256, async |texts: &mut [String]| {
            guard::texts(call, texts).await.map(drop)
        })
        .await?;

    // The model's work counted in usage.
    if ingested.created {
        record_usage(call, library.model_id(), ingested.tokens).await;
    }
    Ok((ingested.record, ingested.created))
}

/// The embedding model's work for the library, in the journal entry and in usage (no spend: the
/// built-in model runs on the gateway's own CPU, and an upstream embedding model's cost is not
/// charged to budgets).
pub async fn record_usage(call: &Call, model: &str, tokens: u64) {
    call.audit.local_model(model, tokens);
    let work = usage::Work {
        team_id: &call.principal.team_id,
        key_id: &call.principal.key_id,
        actor: &call.actor,
        model,
        tokens,
        request_id: call.ctx.id.to_string(),
    };
    usage::record(call.app.store().as_ref(), work).await;
}

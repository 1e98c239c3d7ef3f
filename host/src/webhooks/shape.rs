//! A delivery through the subscription's shaper policy (`crate::policy::shaper`): the stored
//! event handed to the named shaper; whatever goes wrong (unknown shaper, trap, deadline, an
//! answer the host refuses) keeps the event from going out unshaped.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

use super::Shared;
use crate::policy::shaper::ShaperEvent;
use crate::store::webhooks::Delivery;

/// The shaped body, its content type and the extra headers the shaper set that the host keeps;
/// `None` when the shaper chose not to deliver.
pub(super) async fn shape(
    shared: &Shared,
    name: &str,
    d: &Delivery,
    target: &str,
) -> Result<Option<(Bytes, HeaderValue, HeaderMap)>, String> {
    let event = event(d).map_err(|e| format!("stored event unreadable: {e}"))?;
    let started = std::time::Instant::now();
    let shaped = shared.shapers.shape(name, &event, target).await;
    shared.metrics.by.policy_call("shaper", started.elapsed());
    match shaped {
        Ok(None) => Ok(None),
        Ok(Some(s)) => {
            if !s.dropped_headers.is_empty() {
                tracing::warn!(shaper = name, webhook = %d.webhook_id, dropped = ?s.dropped_headers, "the shaper set headers the gateway does not send");
            }
            Ok(Some((s.body, s.content_type, s.headers)))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Whether a subscription may name this shaper (it must be loaded now).
pub(super) fn check_name(shared: &Shared, name: &str) -> Result<(), String> {
    if shared.shapers.contains(name) {
        Ok(())
    } else {
        Err(format!(
            "`shaper_policy`: no shaper named `{name}` is loaded (upload it with POST /v1/admin/webhook-shapers)."
        ))
    }
}

/// The stored payload (the seed's shape) as the shaper world's event.
fn event(d: &Delivery) -> Result<ShaperEvent, serde_json::Error> {
    #[derive(serde::Deserialize)]
    struct Stored {
        timestamp: String,
        request_id: Option<String>,
        details: serde_json::Value,
        metadata: Meta,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        team_id: Option<String>,
        user_id: Option<String>,
    }
    let s: Stored = serde_json::from_str(&d.payload)?;
    Ok(ShaperEvent {
        id: d.event_id.clone(),
        kind: d.kind.clone(),
        timestamp: s.timestamp,
        request_id: s.request_id,
        // Written compactly by the outbox, in order: re-encoding gives the same text.
        details_json: s.details.to_string(),
        team_id: s.metadata.team_id,
        user_id: s.metadata.user_id,
    })
}

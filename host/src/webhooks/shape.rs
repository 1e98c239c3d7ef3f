//! A delivery through the subscription's shaper policy (`crate::policy::shaper`).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};

use super::Shared;
use crate::store::webhooks::Delivery;

/// The shaped body, its content type and the extra headers the shaper may set (already
/// filtered); `None` when the shaper chose not to deliver.
pub(super) async fn shape(
    _shared: &Shared,
    name: &str,
    _d: &Delivery,
    _target: &str,
) -> Result<Option<(Bytes, HeaderValue, HeaderMap)>, String> {
    Err(format!("no shaper named `{name}` is loaded"))
}

/// Whether a subscription may name this shaper.
pub(super) fn check_name(_shared: &Shared, name: &str) -> Result<(), String> {
    Err(format!(
        "`shaper_policy`: no shaper named `{name}` is loaded."
    ))
}

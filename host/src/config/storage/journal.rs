//! `[journal]`: the activity journal (`docs/JOURNAL.md`): where the chain and the signing key
//! live, durability and batching, segment sizes, checkpoints and retention. Paths are relative to
//! the config file; unset paths default to `<data_dir>/journal` and
//! `<data_dir>/journal-signing.key`.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawJournal {
    enabled: bool,
    dir: Option<String>,
    signing_key: Option<String>,
    /// The transparency log's origin (and note key name); default
    /// `sovereign-gateway/journal/<sovereign_id>`.
    origin: Option<String>,
    /// Keep the transparency log (default true).
    transparency_log: bool,
    durability: String,
    batch_window_ms: u64,
    batch_max_entries: usize,
    max_segment_bytes: u64,
    max_segment_entries: u64,
    checkpoint_every: u64,
    preallocate_bytes: u64,
    max_age_days: Option<u64>,
    max_bytes: Option<u64>,
    export_dir: Option<String>,
    retention_interval_s: u64,
    force: bool,
}

impl Default for RawJournal {
    fn default() -> Self {
        RawJournal {
            enabled: true,
            dir: None,
            signing_key: None,
            origin: None,
            transparency_log: true,
            durability: "durable".into(),
            batch_window_ms: 5,
            batch_max_entries: 4096,
            max_segment_bytes: 64 << 20,
            max_segment_entries: 1_000_000,
            checkpoint_every: 10_000,
            preallocate_bytes: 0,
            max_age_days: None,
            max_bytes: None,
            export_dir: None,
            retention_interval_s: 3600,
            force: false,
        }
    }
}

/// `[journal]`, validated: how to open the chain, and what retention prunes.
#[derive(Debug, Clone)]
pub struct JournalSettings {
    pub open: crate::journal::JournalConfig,
    pub retention: crate::journal::Retention,
}

/// `None` when `enabled = false` (the other fields are still checked).
pub(in crate::config) fn validate(
    j: RawJournal,
    base: &Path,
    data_dir: &Path,
    sovereign_id: &str,
    err: &mut impl FnMut(String, &str),
) -> Option<JournalSettings> {
    use crate::journal::{Durability, JournalConfig, Retention};
    let durability = match j.durability.as_str() {
        "durable" => Durability::Durable,
        "batched" => Durability::Batched {
            window: Duration::from_millis(j.batch_window_ms),
            max_entries: j.batch_max_entries,
        },
        _ => {
            err(
                "journal.durability".into(),
                "must be `durable` or `batched`",
            );
            Durability::Durable
        }
    };
    if j.batch_window_ms == 0 || j.batch_window_ms > 10_000 {
        err(
            "journal.batch_window_ms".into(),
            "must be between 1 and 10000",
        );
    }
    for (name, zero) in [
        ("batch_max_entries", j.batch_max_entries == 0),
        ("max_segment_bytes", j.max_segment_bytes == 0),
        ("max_segment_entries", j.max_segment_entries == 0),
        ("checkpoint_every", j.checkpoint_every == 0),
        ("retention_interval_s", j.retention_interval_s == 0),
        ("max_age_days", j.max_age_days == Some(0)),
        ("max_bytes", j.max_bytes == Some(0)),
    ] {
        if zero {
            err(format!("journal.{name}"), "must be at least 1");
        }
    }
    if let Some(origin) = &j.origin
        && let Err(e) = crate::journal::tlog::note::check_origin(origin)
    {
        err("journal.origin".into(), &e);
    }
    if j.preallocate_bytes > 1 << 30 {
        err(
            "journal.preallocate_bytes".into(),
            "must be at most 1073741824 (1 GiB); 0 turns it off",
        );
    }
    if !j.enabled {
        return None;
    }
    let dir = j
        .dir
        .map_or_else(|| data_dir.join("journal"), |d| base.join(d));
    let signing_key = j
        .signing_key
        .map_or_else(|| data_dir.join("journal-signing.key"), |k| base.join(k));
    if signing_key.starts_with(&dir) {
        err(
            "journal.signing_key".into(),
            "must not be inside the journal directory (whoever can rewrite the journal must not hold the key)",
        );
    }
    let export_dir = j.export_dir.map(|d| base.join(d));
    if export_dir.as_ref().is_some_and(|e| e == &dir) {
        err(
            "journal.export_dir".into(),
            "must not be the journal directory",
        );
    }
    let mut open = JournalConfig::new(dir, sovereign_id, signing_key);
    open.durability = durability;
    open.max_segment_bytes = j.max_segment_bytes;
    open.max_segment_entries = j.max_segment_entries;
    open.checkpoint_every = j.checkpoint_every;
    open.preallocate_bytes = j.preallocate_bytes;
    open.force = j.force;
    if let Some(origin) = j.origin {
        open.origin = origin;
    }
    open.transparency = j.transparency_log;
    Some(JournalSettings {
        open,
        retention: Retention {
            max_age: j.max_age_days.map(|d| Duration::from_secs(d * 86_400)),
            max_bytes: j.max_bytes,
            export_dir,
            interval: Duration::from_secs(j.retention_interval_s),
        },
    })
}

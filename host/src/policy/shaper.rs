//! Webhook shapers: components of the `webhook-policy` world that turn an event into the body one
//! webhook target receives (the built-in one is `policies/webhook-shaper`: the event as is).
//! Loaded like every policy (compile, world check, smoke call), called in a fresh store per event
//! under a deadline and memory cap. The host checks and filters every answer before delivery
//! sees it: content type and header syntax, body size, header count; hop-by-hop, credential and
//! `webhook-*` headers (the host signs) are dropped and named in
//! [`ShapedDelivery::dropped_headers`].
//!
//! [`Shapers`] holds the named shapers the delivery worker calls, hot-swappable by the admin API
//! (`http/shapers.rs`). A shaper that fails — trap, timeout, refused answer — fails the event's
//! delivery, which the caller sends to the dead-letter queue: an event is never delivered
//! unshaped.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::bindings::{CallState, WebhookPolicyPre, WitDelivery, WitEvent};
use super::{CallLimits, PolicyError, PolicyHost};

/// The world every shaper component must export.
pub const WORLD: &str = "sovereign:policy/webhook-policy@0.1.0";
/// The shaper every gateway has, built in (`policies/webhook-shaper`); it may be replaced.
pub const DEFAULT_SHAPER: &str = "default";
/// Largest body a shaper may answer.
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Most headers a shaper may answer (before filtering).
pub const MAX_HEADERS: usize = 32;
/// Longest header value a shaper may answer, and longest content type.
pub const MAX_HEADER_VALUE_BYTES: usize = 4096;
/// Most named shapers a gateway keeps (the admin API refuses new names beyond it).
pub const MAX_SHAPERS: usize = 64;
/// The event id of the smoke call every shaper answers at load; guests may recognise it.
pub const SMOKE_EVENT_ID: &str = "smoke-call";

/// Limits of each shaper call: `deadline` of running time (`[webhooks] shaper_deadline_ms`,
/// 50 ms unless set) and the 32 MiB of every policy. Shapers run off the request path, in the
/// delivery worker, and a shaper written in JavaScript instantiates a whole engine per call.
pub fn limits(deadline: std::time::Duration) -> CallLimits {
    CallLimits {
        deadline,
        ..CallLimits::default()
    }
}

/// Headers the host owns or that would break or leak the delivery: hop-by-hop headers, the
/// framing the HTTP client sets, credentials. Plus, by prefix, `webhook-*` (the host signs) and
/// `content-type` (the delivery's own field).
const DROPPED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
    "content-type",
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
];

/// One event, in the host's types (`wit/policy.wit`, `webhook-shaper.event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShaperEvent {
    /// Stable across delivery attempts (deduplication).
    pub id: String,
    pub kind: String,
    /// ISO 8601 UTC.
    pub timestamp: String,
    pub request_id: Option<String>,
    /// The event's `details`, one JSON value as text.
    pub details_json: String,
    pub team_id: Option<String>,
    pub user_id: Option<String>,
}

/// A shaper's answer, checked and filtered: ready to sign and send.
#[derive(Debug, Clone)]
pub struct ShapedDelivery {
    pub body: Bytes,
    pub content_type: HeaderValue,
    /// The headers the shaper set that the host keeps.
    pub headers: HeaderMap,
    /// Names (lower case, each once) of headers the shaper set and the host dropped; the caller
    /// logs them at warn.
    pub dropped_headers: Vec<String>,
}

/// Why [`Shapers::shape`] did not produce a delivery. Every one of them dead-letters the event.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("no webhook shaper named `{0}`")]
    UnknownShaper(String),
    #[error(transparent)]
    Policy(PolicyError),
    /// The shaper's answer (or the event given to it) broke the host's rules.
    #[error("invalid shaped delivery: {0}")]
    Invalid(String),
}

/// What the admin API lists about a shaper.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ShaperInfo {
    pub name: String,
    /// Of the component (hex).
    pub sha256: String,
    /// Of the component, in bytes.
    pub size: usize,
    /// Unix seconds.
    pub loaded_at: u64,
}

/// A loaded shaper. Cheap to share; calls run concurrently.
pub struct ShaperPolicy {
    host: PolicyHost,
    name: Arc<str>,
    sha256: String,
    size: usize,
    pre: WebhookPolicyPre<CallState>,
    settings: Arc<HashMap<String, String>>,
    limits: CallLimits,
    /// Unix seconds.
    loaded_at: u64,
}

impl std::fmt::Debug for ShaperPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShaperPolicy")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

impl ShaperPolicy {
    /// Compiles (or reads from the cache), checks the exports against the `webhook-policy`
    /// world, pre-instantiates off the runtime, then smoke-calls it with the event
    /// [`smoke_event`] (id [`SMOKE_EVENT_ID`]): it must answer none or a delivery the host
    /// accepts. `settings` is what the shaper reads with `config-get("settings")`.
    pub async fn load(
        host: &PolicyHost,
        name: &str,
        wasm: Arc<[u8]>,
        settings: Option<String>,
        limits: CallLimits,
    ) -> Result<ShaperPolicy, PolicyError> {
        let host = host.clone();
        let name: Arc<str> = name.into();
        let policy = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let (sha256, instance_pre) = super::call::compile_and_link(&host, &wasm, WORLD)?;
            let pre = WebhookPolicyPre::new(instance_pre)
                .map_err(|e| super::call::wrong_world(WORLD, &e))?;
            tracing::info!(shaper = &*name, sha256, elapsed = ?started.elapsed(), "webhook shaper compiled");
            let mut map = HashMap::new();
            if let Some(s) = settings {
                map.insert("settings".to_string(), s);
            }
            Ok::<_, PolicyError>(ShaperPolicy {
                limits: super::call::capped(&host, limits),
                host,
                name,
                sha256,
                size: wasm.len(),
                pre,
                settings: Arc::new(map),
                loaded_at: SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            })
        })
        .await
        .map_err(|e| PolicyError::Cancelled(e.to_string()))??;
        if let Err(e) = policy
            .shape(&smoke_event(), "https://webhook.invalid/smoke")
            .await
        {
            return Err(PolicyError::SmokeCall {
                policy: policy.name.to_string(),
                cause: Box::new(e),
            });
        }
        Ok(policy)
    }

    /// What the admin API lists about it.
    pub fn info(&self) -> ShaperInfo {
        ShaperInfo {
            name: self.name.to_string(),
            sha256: self.sha256.clone(),
            size: self.size,
            loaded_at: self.loaded_at,
        }
    }

    /// Shapes `event` for `target` (the subscription's URL or id, as the caller chooses) in a
    /// fresh instance; the answer checked and filtered. An answer the host refuses is
    /// [`PolicyError::BadAnswer`].
    pub async fn shape(
        &self,
        event: &ShaperEvent,
        target: &str,
    ) -> Result<Option<ShapedDelivery>, PolicyError> {
        let budget = self.host.ticks(self.limits.deadline);
        let mut store = super::call::new_store(
            &self.host,
            self.name.clone(),
            self.settings.clone(),
            self.limits,
            budget,
        );
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| super::call::classify(&self.name, self.limits, &store, e, true))?;
        let answer = instance
            .sovereign_policy_webhook_shaper()
            .call_shape(&mut store, &WitEvent::from(event), target)
            .await
            .map_err(|e| super::call::classify(&self.name, self.limits, &store, e, false))?;
        drop(store);
        answer
            .map(|d| {
                checked(d).map_err(|reason| PolicyError::BadAnswer {
                    policy: self.name.to_string(),
                    reason,
                })
            })
            .transpose()
    }
}

/// The event of every shaper's smoke call.
pub fn smoke_event() -> ShaperEvent {
    ShaperEvent {
        id: SMOKE_EVENT_ID.into(),
        kind: "gateway.smoke".into(),
        timestamp: "2025-01-01T00:00:00.000Z".into(),
        request_id: None,
        details_json: "{}".into(),
        team_id: None,
        user_id: None,
    }
}

impl From<&ShaperEvent> for WitEvent {
    fn from(e: &ShaperEvent) -> Self {
        WitEvent {
            id: e.id.clone(),
            kind: e.kind.clone(),
            timestamp: e.timestamp.clone(),
            request_id: e.request_id.clone().unwrap_or_default(),
            details_json: e.details_json.clone(),
            team_id: e.team_id.clone().unwrap_or_default(),
            user_id: e.user_id.clone().unwrap_or_default(),
        }
    }
}

/// A shaper's answer checked against the host's rules, its headers filtered.
fn checked(d: WitDelivery) -> Result<ShapedDelivery, String> {
    if d.body.len() > MAX_BODY_BYTES {
        return Err(format!(
            "the body is {} bytes; the limit is {MAX_BODY_BYTES}",
            d.body.len()
        ));
    }
    if d.headers.len() > MAX_HEADERS {
        return Err(format!(
            "{} headers; the limit is {MAX_HEADERS}",
            d.headers.len()
        ));
    }
    let content_type = d.content_type.trim();
    if content_type.is_empty() || content_type.len() > MAX_HEADER_VALUE_BYTES {
        return Err(format!(
            "the content type must be 1 to {MAX_HEADER_VALUE_BYTES} bytes"
        ));
    }
    let content_type = HeaderValue::from_str(content_type)
        .map_err(|_| format!("the content type {content_type:?} is not a valid header value"))?;
    let mut headers = HeaderMap::new();
    let mut dropped_headers: Vec<String> = Vec::new();
    for (name, value) in d.headers {
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            format!(
                "{:?} is not a valid header name",
                name.chars().take(64).collect::<String>()
            )
        })?;
        if value.len() > MAX_HEADER_VALUE_BYTES {
            return Err(format!(
                "the value of header `{name}` is longer than {MAX_HEADER_VALUE_BYTES} bytes"
            ));
        }
        let value = HeaderValue::from_str(value.trim())
            .map_err(|_| format!("the value of header `{name}` is not a valid header value"))?;
        if dropped(&name) {
            if !dropped_headers.iter().any(|d| d == name.as_str()) {
                dropped_headers.push(name.as_str().to_string());
            }
            continue;
        }
        headers.append(name, value);
    }
    Ok(ShapedDelivery {
        body: Bytes::from(d.body),
        content_type,
        headers,
        dropped_headers,
    })
}

/// Whether the host drops this header from a shaper's answer (names are lower case already).
fn dropped(name: &HeaderName) -> bool {
    let n = name.as_str();
    DROPPED.contains(&n) || n.starts_with("webhook-")
}

/// Checks what the host hands a shaper: `details_json` must be one JSON value.
fn check_event(event: &ShaperEvent) -> Result<(), ShapeError> {
    serde_json::from_str::<serde::de::IgnoredAny>(&event.details_json)
        .map(|_| ())
        .map_err(|e| ShapeError::Invalid(format!("the event's details are not JSON: {e}")))
}

/// The named shapers, hot-swappable: each name holds one loaded version, replaced whole. A call
/// runs on the version it looked up, so in-flight calls finish on the old one while a new one
/// takes over; a version that fails to load never replaces anything.
pub struct Shapers {
    host: PolicyHost,
    limits: CallLimits,
    by_name: arc_swap::ArcSwap<HashMap<String, Arc<ShaperPolicy>>>,
    /// Writers one at a time (read-copy-update of `by_name`).
    swaps: std::sync::Mutex<()>,
    /// Where uploaded shapers are kept across restarts (`<data_dir>/shapers`), when set.
    dir: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Shapers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shapers")
            .field("names", &self.by_name.load().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Shapers {
    /// The registry with the built-in shaper loaded as [`DEFAULT_SHAPER`].
    pub async fn new(host: PolicyHost, limits: CallLimits) -> Result<Shapers, PolicyError> {
        let shapers = Shapers {
            host,
            limits,
            by_name: arc_swap::ArcSwap::from_pointee(HashMap::new()),
            swaps: std::sync::Mutex::new(()),
            dir: None,
        };
        shapers
            .put(
                DEFAULT_SHAPER,
                Arc::from(policy_artifacts::WEBHOOK_SHAPER_COMPONENT),
                None,
            )
            .await?;
        Ok(shapers)
    }

    /// Keeps uploaded shapers in `dir` (`<name>.wasm`, `<name>.settings`) from now on, and
    /// loads the ones kept there by an earlier run — a subscription naming a shaper finds it
    /// after a restart. One that no longer loads is logged and left out (its deliveries
    /// dead-letter until it is uploaded again).
    pub async fn persisted_in(mut self, dir: std::path::PathBuf) -> Result<Shapers, PolicyError> {
        let stored = {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || read_stored(&dir))
                .await
                .map_err(|e| PolicyError::Cancelled(e.to_string()))?
        };
        for (name, wasm, settings) in stored {
            match self.load_and_swap(&name, wasm.into(), settings).await {
                Ok(info) => tracing::info!(
                    shaper = name,
                    sha256 = info.sha256,
                    "webhook shaper restored"
                ),
                Err(e) => {
                    tracing::error!(shaper = name, error = %e, "a stored webhook shaper no longer loads; left out")
                }
            }
        }
        self.dir = Some(dir);
        Ok(self)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.by_name.load().contains_key(name)
    }

    /// Loads `wasm` fully (compile, world check, smoke call), then makes it the shaper called
    /// `name`, replacing any previous one; calls in flight finish on the previous one.
    pub async fn put(
        &self,
        name: &str,
        wasm: Arc<[u8]>,
        settings: Option<String>,
    ) -> Result<ShaperInfo, PolicyError> {
        let info = self
            .load_and_swap(name, wasm.clone(), settings.clone())
            .await?;
        if let Some(dir) = &self.dir {
            let (dir, name) = (dir.clone(), name.to_string());
            let stored = tokio::task::spawn_blocking(move || store(&dir, &name, &wasm, settings))
                .await
                .map_err(|e| PolicyError::Cancelled(e.to_string()))?;
            if let Err(e) = stored {
                // Loaded and serving; only the next restart would miss it.
                tracing::error!(shaper = info.name, error = %e, "webhook shaper loaded but not saved; upload it again after a restart");
            }
        }
        Ok(info)
    }

    async fn load_and_swap(
        &self,
        name: &str,
        wasm: Arc<[u8]>,
        settings: Option<String>,
    ) -> Result<ShaperInfo, PolicyError> {
        let policy =
            Arc::new(ShaperPolicy::load(&self.host, name, wasm, settings, self.limits).await?);
        let info = policy.info();
        let _one_at_a_time = self
            .swaps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = HashMap::clone(&self.by_name.load());
        next.insert(name.to_string(), policy);
        self.by_name.store(Arc::new(next));
        Ok(info)
    }

    /// Every shaper, by name.
    pub fn list(&self) -> Vec<ShaperInfo> {
        let map = self.by_name.load();
        let mut out: Vec<ShaperInfo> = map.values().map(|p| p.info()).collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The shaper called `name` now. Holding it keeps that version callable after a swap.
    pub fn get(&self, name: &str) -> Option<Arc<ShaperPolicy>> {
        self.by_name.load().get(name).cloned()
    }

    /// Shapes `event` for `target` with the shaper called `name`. `Ok(None)`: the shaper chose
    /// not to deliver this event to this target. Any error: do not deliver (dead-letter it).
    pub async fn shape(
        &self,
        name: &str,
        event: &ShaperEvent,
        target: &str,
    ) -> Result<Option<ShapedDelivery>, ShapeError> {
        let policy = self
            .get(name)
            .ok_or_else(|| ShapeError::UnknownShaper(name.to_string()))?;
        check_event(event)?;
        policy.shape(event, target).await.map_err(|e| match e {
            PolicyError::BadAnswer { reason, .. } => ShapeError::Invalid(reason),
            e => ShapeError::Policy(e),
        })
    }
}

/// The shapers kept in `dir`: (name, component, settings), by name.
fn read_stored(dir: &std::path::Path) -> Vec<(String, Vec<u8>, Option<String>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".wasm"))
            .filter(|n| valid_name(n))
        else {
            continue;
        };
        match std::fs::read(&path) {
            Ok(wasm) => {
                let settings = std::fs::read_to_string(dir.join(format!("{name}.settings"))).ok();
                out.push((name.to_string(), wasm, settings));
            }
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "reading a stored webhook shaper failed")
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Keeps one shaper in `dir`, each file written whole (temporary file, then rename).
fn store(
    dir: &std::path::Path,
    name: &str,
    wasm: &[u8],
    settings: Option<String>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let write = |file: String, bytes: &[u8]| -> std::io::Result<()> {
        let tmp = dir.join(format!("{file}.tmp"));
        std::fs::write(&tmp, bytes)?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, dir.join(file))
    };
    match settings {
        Some(s) => write(format!("{name}.settings"), s.as_bytes())?,
        None => match std::fs::remove_file(dir.join(format!("{name}.settings"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        },
    }
    write(format!("{name}.wasm"), wasm)
}

/// Whether `name` is a valid shaper name: `[a-z0-9][a-z0-9_-]{0,62}`.
pub fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    matches!(b.first(), Some(c) if ok(c))
        && b.len() <= 63
        && b.iter().all(|c| ok(c) || *c == b'_' || *c == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(headers: &[(&str, &str)]) -> WitDelivery {
        WitDelivery {
            body: "{}".into(),
            content_type: "application/json".into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn forbidden_headers_are_dropped_and_named_once() {
        let d = checked(delivery(&[
            ("Authorization", "Bearer x"),
            ("Connection", "close"),
            ("Host", "evil"),
            ("Transfer-Encoding", "chunked"),
            ("Cookie", "a=1"),
            ("cookie", "b=2"),
            ("Webhook-Signature", "v1,x"),
            ("X-Api-Key", "k"),
            ("Content-Type", "text/plain"),
            ("X-Team", "t1"),
            ("X-Multi", "1"),
            ("X-Multi", "2"),
        ]))
        .unwrap();
        assert_eq!(
            d.dropped_headers,
            [
                "authorization",
                "connection",
                "host",
                "transfer-encoding",
                "cookie",
                "webhook-signature",
                "x-api-key",
                "content-type"
            ]
        );
        assert_eq!(d.headers.len(), 3);
        assert_eq!(d.headers["x-team"], "t1");
        assert_eq!(d.headers.get_all("x-multi").iter().count(), 2);
        assert_eq!(d.content_type, "application/json");
    }

    #[test]
    fn answers_breaking_the_rules_are_refused() {
        assert!(checked(delivery(&[("Bad Header", "x")])).is_err());
        assert!(checked(delivery(&[("X-A", "line\nbreak")])).is_err());
        let many: Vec<(String, String)> = (0..=MAX_HEADERS)
            .map(|i| (format!("x-h{i}"), "v".to_string()))
            .collect();
        let mut d = delivery(&[]);
        d.headers = many;
        assert!(checked(d).unwrap_err().contains("headers"));
        let mut d = delivery(&[]);
        d.content_type = String::new();
        assert!(checked(d).is_err());
        let mut d = delivery(&[]);
        d.content_type = "text/plain\r\nx: y".into();
        assert!(checked(d).is_err());
        let mut d = delivery(&[]);
        d.body = "x".repeat(MAX_BODY_BYTES + 1);
        assert!(checked(d).unwrap_err().contains("body"));
        let mut d = delivery(&[]);
        d.body = "x".repeat(MAX_BODY_BYTES);
        assert!(checked(d).is_ok());
    }

    #[test]
    fn names() {
        for ok in ["default", "slack", "a", "team-1_ops", &"a".repeat(63)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "_a", "Slack", "a b", "a.b", "ä", &"a".repeat(64)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn details_must_be_json() {
        let mut e = smoke_event();
        assert!(check_event(&e).is_ok());
        e.details_json = "{".into();
        assert!(matches!(check_event(&e), Err(ShapeError::Invalid(_))));
    }
}

//! Gateway configuration: the TOML file as written (`Raw*`, serde with `deny_unknown_fields`) and
//! the validated, typed [`Config`] the rest of the gateway uses. Validation reports every problem at
//! once, each with its path (`models[2].base_url: ...`).

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use url::Url;

mod webhooks;
pub use webhooks::WebhooksConfig;
mod health;
pub use health::{HealthConfig, MAX_FALLBACKS};

/// Model id a client may send to let the gateway choose the model.
pub const AUTO_ROUTER: &str = "auto-router";

/// A model id as clients name it (newtype so ids are not mixed with other strings).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModelId(pub String);

impl fmt::Display for ModelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    Chat,
    Embedding,
}

impl ModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Chat => "chat",
            ModelKind::Embedding => "embedding",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Member,
    Auditor,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Auditor => "auditor",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file as written.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    sovereign_id: String,
    region: String,
    default_model: String,
    /// Where the gateway keeps its state (store, journal); relative to the config file.
    #[serde(default = "default_data_dir")]
    data_dir: String,
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    models: Vec<RawModel>,
    #[serde(default)]
    teams: Vec<RawTeam>,
    #[serde(default)]
    keys: Vec<RawKey>,
    #[serde(default)]
    routing: Option<RawRouting>,
    #[serde(default)]
    access: RawAccess,
    #[serde(default)]
    plans: RawPlans,
    #[serde(default)]
    budgets: RawBudgets,
    #[serde(default)]
    journal: RawJournal,
    #[serde(default)]
    guardrail: Option<RawGuardrail>,
    #[serde(default)]
    webhooks: webhooks::RawWebhooks,
    #[serde(default)]
    health: health::RawHealth,
}

/// `[guardrail]`: the PII guardrail (docs/GUARDRAIL.md). Present: enabled.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuardrail {
    /// A guardrail component (.wasm) to run instead of the built-in PII guardrail.
    #[serde(default)]
    component: Option<String>,
    /// The guardrail's settings document (JSON text, given to it as `settings`).
    #[serde(default)]
    settings: Option<String>,
    #[serde(default = "default_policy_deadline_ms")]
    deadline_ms: u64,
    #[serde(default = "default_policy_memory_mb")]
    memory_mb: u64,
}

/// `[access]`: who may call from where, and how often.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawAccess {
    /// CIDRs of reverse proxies whose `X-Forwarded-For` is believed; empty: the client address
    /// is always the socket peer.
    trusted_proxies: Vec<String>,
    /// Per client address, before authentication; 0 turns the per-address limit off.
    ip_requests_per_minute: u32,
    ip_burst: u32,
    /// How long a rotated key keeps working unless the rotate call says otherwise.
    rotation_grace_seconds: u64,
}

impl Default for RawAccess {
    fn default() -> Self {
        RawAccess {
            trusted_proxies: Vec::new(),
            ip_requests_per_minute: 60_000,
            ip_burst: 5_000,
            rotation_grace_seconds: 3_600,
        }
    }
}

/// `[plans.<name>]`: a plan's defaults; 0 means unlimited.
#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    requests_per_minute: u32,
    burst: u32,
    tokens_per_day: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawPlans {
    development: RawPlan,
    professional: RawPlan,
    enterprise: RawPlan,
}

impl Default for RawPlans {
    fn default() -> Self {
        RawPlans {
            development: RawPlan {
                requests_per_minute: 60,
                burst: 20,
                tokens_per_day: 200_000,
            },
            professional: RawPlan {
                requests_per_minute: 600,
                burst: 100,
                tokens_per_day: 5_000_000,
            },
            enterprise: RawPlan {
                requests_per_minute: 6_000,
                burst: 1_000,
                tokens_per_day: 0,
            },
        }
    }
}

/// `[budgets]`: money.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawBudgets {
    /// The currency model prices are in and budgets are counted in (ISO 4217 code).
    currency: String,
    /// Percentages of a budget whose crossing emits a `cost.threshold` event.
    thresholds: Vec<u32>,
    /// Completion tokens reserved for a request that gives no `max_tokens`.
    default_max_tokens: u32,
}

impl Default for RawBudgets {
    fn default() -> Self {
        RawBudgets {
            currency: "USD".into(),
            thresholds: vec![50, 80, 100],
            default_max_tokens: 4_096,
        }
    }
}

/// `[journal]`: the activity journal (docs/JOURNAL.md). Paths are relative to the config file;
/// unset paths default to `<data_dir>/journal` and `<data_dir>/journal-signing.key`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawJournal {
    enabled: bool,
    dir: Option<String>,
    signing_key: Option<String>,
    durability: String,
    batch_window_ms: u64,
    batch_max_entries: usize,
    max_segment_bytes: u64,
    max_segment_entries: u64,
    checkpoint_every: u64,
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
            durability: "durable".into(),
            batch_window_ms: 5,
            batch_max_entries: 4096,
            max_segment_bytes: 64 << 20,
            max_segment_entries: 1_000_000,
            checkpoint_every: 10_000,
            max_age_days: None,
            max_bytes: None,
            export_dir: None,
            retention_interval_s: 3600,
            force: false,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRouting {
    /// The routing document (YAML) given to the router as its `policy` setting; a path relative
    /// to the config file.
    #[serde(default)]
    document: Option<String>,
    /// A router component (.wasm) to run instead of the built-in rules router.
    #[serde(default)]
    component: Option<String>,
    #[serde(default = "default_policy_deadline_ms")]
    deadline_ms: u64,
    #[serde(default = "default_policy_memory_mb")]
    memory_mb: u64,
    /// Where compiled policies are cached (a directory only the gateway writes to); relative to
    /// the config file. Unset: policies are compiled at every start.
    #[serde(default)]
    cache_dir: Option<String>,
    /// `fresh` (a new instance per call, the default) or `warm` (reused instances, for Python and
    /// JavaScript routers); uploads may choose per version.
    #[serde(default)]
    pool: crate::policy::PoolMode,
    /// With `pool = "warm"`: calls one instance serves before it is retired.
    #[serde(default = "default_warm_max_calls")]
    warm_max_calls: u32,
}

fn default_warm_max_calls() -> u32 {
    crate::policy::DEFAULT_WARM_MAX_CALLS
}

fn default_data_dir() -> String {
    "data".into()
}

fn default_policy_deadline_ms() -> u64 {
    5
}
fn default_policy_memory_mb() -> u64 {
    32
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawServer {
    listen: String,
    max_body_bytes: u64,
    max_connections: u32,
    header_read_timeout_ms: u64,
    body_read_timeout_ms: u64,
    shutdown_grace_ms: u64,
}

impl Default for RawServer {
    fn default() -> Self {
        RawServer {
            listen: "127.0.0.1:8080".into(),
            max_body_bytes: 4 * 1024 * 1024,
            max_connections: 10_000,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            shutdown_grace_ms: 30_000,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    id: String,
    #[serde(default)]
    upstream_model: Option<String>,
    family: String,
    kind: ModelKind,
    #[serde(default)]
    languages: Vec<String>,
    region: String,
    #[serde(default)]
    local: bool,
    base_url: String,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    input_cost_per_mtok: f64,
    #[serde(default)]
    output_cost_per_mtok: f64,
    #[serde(default = "default_context_window")]
    context_window: u32,
    #[serde(default = "default_connect_timeout_ms")]
    connect_timeout_ms: u64,
    #[serde(default = "default_first_byte_timeout_ms")]
    first_byte_timeout_ms: u64,
    #[serde(default = "default_total_timeout_ms")]
    total_timeout_ms: u64,
    #[serde(default = "default_stream_idle_timeout_ms")]
    stream_idle_timeout_ms: u64,
    /// Models to try, in order, when this one fails before answering.
    #[serde(default)]
    fallbacks: Vec<String>,
}

fn default_context_window() -> u32 {
    8192
}
fn default_connect_timeout_ms() -> u64 {
    2_000
}
fn default_first_byte_timeout_ms() -> u64 {
    60_000
}
fn default_total_timeout_ms() -> u64 {
    600_000
}
fn default_stream_idle_timeout_ms() -> u64 {
    60_000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTeam {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    plan: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    name: String,
    team: String,
    role: Role,
    /// `sha256:<64 hex>` of the secret; the secret itself is never in the file.
    hash: String,
}

// ---------------------------------------------------------------------------------------------
// The validated configuration.

#[derive(Debug, Clone)]
pub struct Config {
    pub sovereign_id: String,
    pub region: String,
    pub default_model: ModelId,
    /// The gateway's state directory (store, journal), resolved against the config file's
    /// directory; created at start if absent.
    pub data_dir: PathBuf,
    pub server: ServerConfig,
    /// In file order (the order `/v1/models` lists them).
    pub models: Vec<Arc<ModelConfig>>,
    pub teams: Vec<TeamConfig>,
    pub keys: Vec<KeyConfig>,
    /// The router policy; `None` sends `auto-router` to the default model.
    pub routing: Option<RoutingConfig>,
    pub access: AccessConfig,
    pub plans: Plans,
    pub budgets: BudgetsConfig,
    /// The activity journal; `None` when `[journal] enabled = false`.
    pub journal: Option<JournalSettings>,
    /// The guardrail; `None` without a `[guardrail]` section.
    pub guardrail: Option<GuardrailConfig>,
    /// Webhook delivery (`[webhooks]`; defaults when absent).
    pub webhooks: WebhooksConfig,
    /// Passive health and fallback (`[health]`).
    pub health: HealthConfig,
}

/// `[guardrail]`, validated.
#[derive(Debug, Clone)]
pub struct GuardrailConfig {
    /// `None`: the built-in PII guardrail.
    pub component: Option<Arc<[u8]>>,
    pub settings: Option<String>,
    pub deadline: Duration,
    pub memory_bytes: usize,
}

/// Who may call from where, and how often (`[access]`).
#[derive(Debug, Clone)]
pub struct AccessConfig {
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Per client address; `None` when off.
    pub ip_limit: Option<RateLimit>,
    pub rotation_grace: Duration,
}

/// A request rate: `per_minute` sustained, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_minute: std::num::NonZeroU32,
    pub burst: std::num::NonZeroU32,
}

/// A plan's defaults for its teams and their keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// Per key; `None`: unlimited.
    pub rate: Option<RateLimit>,
    /// Per key and per team, unless they set their own; `None`: unlimited.
    pub tokens_per_day: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
pub struct Plans {
    pub development: PlanLimits,
    pub professional: PlanLimits,
    pub enterprise: PlanLimits,
}

impl Plans {
    pub fn get(&self, plan: crate::store::Plan) -> PlanLimits {
        match plan {
            crate::store::Plan::Development => self.development,
            crate::store::Plan::Professional => self.professional,
            crate::store::Plan::Enterprise => self.enterprise,
        }
    }
}

/// `[budgets]`.
#[derive(Debug, Clone)]
pub struct BudgetsConfig {
    pub currency: String,
    /// Ascending percentages, each 1..=1000.
    pub thresholds: Vec<u32>,
    pub default_max_tokens: u32,
}

/// `[journal]`, validated: how to open the chain, and what retention prunes.
#[derive(Debug, Clone)]
pub struct JournalSettings {
    pub open: crate::journal::JournalConfig,
    pub retention: crate::journal::Retention,
}

#[derive(Debug, Clone)]
pub struct RoutingConfig {
    /// The routing document's text (the router's `policy` setting).
    pub document: Option<String>,
    /// Where the document was read from; the gateway reloads it when the file changes.
    pub document_path: Option<PathBuf>,
    /// A router component to use instead of the built-in rules router: its path and bytes.
    pub component: Option<(PathBuf, Arc<[u8]>)>,
    pub deadline: Duration,
    pub memory_bytes: usize,
    pub cache_dir: Option<PathBuf>,
    /// How the configured router's calls get their instance (uploads may override).
    pub pool: crate::policy::PoolMode,
    pub warm_max_calls: u32,
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub max_body_bytes: usize,
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub shutdown_grace: Duration,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub id: ModelId,
    /// The name the upstream server knows the model by.
    pub upstream_model: String,
    pub family: String,
    pub kind: ModelKind,
    pub languages: Vec<String>,
    pub region: String,
    pub local: bool,
    /// Base URL of an OpenAI-compatible server, ending in `/` (e.g. `http://host:8000/v1/`).
    pub base_url: Url,
    /// Name of the environment variable holding the upstream's API key.
    pub api_key_env: Option<String>,
    pub input_cost_per_mtok: f64,
    pub output_cost_per_mtok: f64,
    pub context_window: u32,
    pub timeouts: UpstreamTimeouts,
    /// Models to try, in order, when this one fails before answering (each exists, is of the
    /// same kind and is not this model).
    pub fallbacks: Vec<ModelId>,
}

#[derive(Debug, Clone, Copy)]
pub struct UpstreamTimeouts {
    pub connect: Duration,
    /// Until the upstream's response headers arrive.
    pub first_byte: Duration,
    /// Whole exchange, non-streaming and streaming alike.
    pub total: Duration,
    /// Longest silence between two streamed chunks.
    pub stream_idle: Duration,
}

#[derive(Debug, Clone)]
pub struct TeamConfig {
    pub id: String,
    pub name: String,
    pub plan: crate::store::Plan,
}

#[derive(Debug, Clone)]
pub struct KeyConfig {
    pub name: String,
    pub team: String,
    pub role: Role,
    pub hash: [u8; 32],
}

/// Every problem found in a configuration, each with its path.
#[derive(Debug, thiserror::Error)]
pub struct ConfigErrors(pub Vec<String>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(e)?;
        }
        Ok(())
    }
}

impl Config {
    /// Reads a config file; paths in it are relative to the file's directory.
    pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigErrors(vec![format!("{}: {e}", path.display())]))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::parse_in(&text, base)
    }

    /// Parses config text; paths in it are relative to the current directory.
    pub fn parse(text: &str) -> Result<Config, ConfigErrors> {
        Config::parse_in(text, Path::new("."))
    }

    fn parse_in(text: &str, base: &Path) -> Result<Config, ConfigErrors> {
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| ConfigErrors(vec![e.to_string().trim().into()]))?;
        validate(raw, base)
    }

    pub fn model(&self, id: &str) -> Option<&Arc<ModelConfig>> {
        self.models.iter().find(|m| m.id.0 == id)
    }
}

fn validate(raw: RawConfig, base: &Path) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    let mut err = |path: String, msg: &str| errors.push(format!("{path}: {msg}"));

    if raw.sovereign_id.trim().is_empty() {
        err("sovereign_id".into(), "must not be empty");
    }
    if raw.region.trim().is_empty() {
        err("region".into(), "must not be empty");
    }

    let s = &raw.server;
    let listen = match s.listen.parse::<SocketAddr>() {
        Ok(a) => Some(a),
        Err(_) => {
            err("server.listen".into(), "not an address of the form IP:PORT");
            None
        }
    };
    if s.max_body_bytes == 0 || s.max_body_bytes > 1 << 30 {
        err(
            "server.max_body_bytes".into(),
            "must be between 1 and 1 GiB",
        );
    }
    if s.max_connections == 0 {
        err("server.max_connections".into(), "must be at least 1");
    }
    for (name, v) in [
        ("header_read_timeout_ms", s.header_read_timeout_ms),
        ("body_read_timeout_ms", s.body_read_timeout_ms),
    ] {
        if v == 0 {
            err(format!("server.{name}"), "must be at least 1");
        }
    }

    {
        let kinds: HashMap<&str, ModelKind> =
            raw.models.iter().map(|m| (m.id.as_str(), m.kind)).collect();
        for (i, m) in raw.models.iter().enumerate() {
            health::check_fallbacks(i, &m.id, m.kind, &m.fallbacks, &kinds, &mut err);
        }
    }
    let health = health::validate(&raw.health, &mut err);

    let mut models = Vec::new();
    let mut seen = HashMap::new();
    for (i, m) in raw.models.into_iter().enumerate() {
        let p = format!("models[{i}]");
        if m.id.trim().is_empty() || m.id.chars().any(char::is_whitespace) {
            err(
                format!("{p}.id"),
                "must be non-empty and contain no white space",
            );
        } else if m.id == AUTO_ROUTER {
            err(format!("{p}.id"), "`auto-router` is reserved");
        } else if let Some(j) = seen.insert(m.id.clone(), i) {
            err(format!("{p}.id"), &format!("duplicate of models[{j}].id"));
        }
        if m.family.trim().is_empty() {
            err(format!("{p}.family"), "must not be empty");
        }
        if m.region.trim().is_empty() {
            err(format!("{p}.region"), "must not be empty");
        }
        for (j, l) in m.languages.iter().enumerate() {
            if !is_language_code(l) {
                err(
                    format!("{p}.languages[{j}]"),
                    "must be a lower-case ISO 639-1 code such as `ar`",
                );
            }
        }
        let base_url = match Url::parse(&m.base_url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                Some(with_trailing_slash(u))
            }
            _ => {
                err(
                    format!("{p}.base_url"),
                    "must be an http(s) URL such as http://127.0.0.1:8000/v1",
                );
                None
            }
        };
        for (name, v) in [
            ("input_cost_per_mtok", m.input_cost_per_mtok),
            ("output_cost_per_mtok", m.output_cost_per_mtok),
        ] {
            if !v.is_finite() || v < 0.0 {
                err(format!("{p}.{name}"), "must be a non-negative number");
            }
        }
        for (name, v) in [
            ("connect_timeout_ms", m.connect_timeout_ms),
            ("first_byte_timeout_ms", m.first_byte_timeout_ms),
            ("total_timeout_ms", m.total_timeout_ms),
            ("stream_idle_timeout_ms", m.stream_idle_timeout_ms),
        ] {
            if v == 0 {
                err(format!("{p}.{name}"), "must be at least 1");
            }
        }
        if let Some(env) = &m.api_key_env
            && env.trim().is_empty()
        {
            err(
                format!("{p}.api_key_env"),
                "must name an environment variable",
            );
        }
        if let Some(base_url) = base_url {
            models.push(Arc::new(ModelConfig {
                upstream_model: m.upstream_model.unwrap_or_else(|| m.id.clone()),
                id: ModelId(m.id),
                family: m.family,
                kind: m.kind,
                languages: m.languages,
                region: m.region,
                local: m.local,
                base_url,
                api_key_env: m.api_key_env,
                input_cost_per_mtok: m.input_cost_per_mtok,
                output_cost_per_mtok: m.output_cost_per_mtok,
                context_window: m.context_window,
                timeouts: UpstreamTimeouts {
                    connect: Duration::from_millis(m.connect_timeout_ms),
                    first_byte: Duration::from_millis(m.first_byte_timeout_ms),
                    total: Duration::from_millis(m.total_timeout_ms),
                    stream_idle: Duration::from_millis(m.stream_idle_timeout_ms),
                },
                fallbacks: m.fallbacks.into_iter().map(ModelId).collect(),
            }));
        }
    }

    match models.iter().find(|m| m.id.0 == raw.default_model) {
        Some(m) if m.kind != ModelKind::Chat => {
            err("default_model".into(), "must name a chat model");
        }
        Some(_) => {}
        None if seen.contains_key(&raw.default_model) => {}
        None => err(
            "default_model".into(),
            &format!(
                "`{}` is not one of the configured models",
                raw.default_model
            ),
        ),
    }

    let mut teams = Vec::new();
    let mut team_ids = HashMap::new();
    for (i, t) in raw.teams.into_iter().enumerate() {
        if t.id.trim().is_empty() {
            err(format!("teams[{i}].id"), "must not be empty");
        } else if let Some(j) = team_ids.insert(t.id.clone(), i) {
            err(
                format!("teams[{i}].id"),
                &format!("duplicate of teams[{j}].id"),
            );
        }
        let plan = match t.plan.as_deref() {
            None => crate::store::Plan::default(),
            Some(p) => crate::store::Plan::parse(p).unwrap_or_else(|| {
                err(
                    format!("teams[{i}].plan"),
                    "must be `development`, `professional` or `enterprise`",
                );
                crate::store::Plan::default()
            }),
        };
        teams.push(TeamConfig {
            plan,
            name: t.name.unwrap_or_else(|| t.id.clone()),
            id: t.id,
        });
    }

    let mut keys = Vec::new();
    let mut hashes = HashMap::new();
    for (i, k) in raw.keys.into_iter().enumerate() {
        let p = format!("keys[{i}]");
        if !team_ids.contains_key(&k.team) {
            err(
                format!("{p}.team"),
                &format!("`{}` is not one of the teams", k.team),
            );
        }
        match parse_key_hash(&k.hash) {
            Some(hash) => {
                if let Some(j) = hashes.insert(hash, i) {
                    err(format!("{p}.hash"), &format!("same key as keys[{j}]"));
                }
                keys.push(KeyConfig {
                    name: k.name,
                    team: k.team,
                    role: k.role,
                    hash,
                });
            }
            None => err(
                format!("{p}.hash"),
                "must be `sha256:` followed by 64 hex digits (see `sovereign hash-key`)",
            ),
        }
    }

    let routing = raw.routing.map(|r| {
        let mut problems = Vec::new();
        let document = r.document.as_deref().and_then(|p| {
            read_file(base, p)
                .and_then(|bytes| {
                    String::from_utf8(bytes).map_err(|_| format!("{p}: not UTF-8 text"))
                })
                .map_err(|e| problems.push(("routing.document", e)))
                .ok()
        });
        let component = r.component.as_deref().and_then(|p| {
            read_file(base, p)
                .map(|bytes| (base.join(p), Arc::from(bytes)))
                .map_err(|e| problems.push(("routing.component", e)))
                .ok()
        });
        if r.document.is_none() && r.component.is_none() {
            problems.push((
                "routing",
                "name a `document` for the built-in rules router, or a router `component`".into(),
            ));
        }
        if r.deadline_ms == 0 || r.deadline_ms > 1_000 {
            problems.push(("routing.deadline_ms", "must be between 1 and 1000".into()));
        }
        if r.memory_mb == 0 || r.memory_mb > 128 {
            problems.push(("routing.memory_mb", "must be between 1 and 128".into()));
        }
        if r.warm_max_calls == 0 || r.warm_max_calls > 1_000_000 {
            problems.push((
                "routing.warm_max_calls",
                "must be between 1 and 1000000".into(),
            ));
        }
        let routing = RoutingConfig {
            document,
            document_path: r.document.as_deref().map(|p| base.join(p)),
            component,
            deadline: Duration::from_millis(r.deadline_ms),
            memory_bytes: usize::try_from(r.memory_mb << 20).unwrap_or(usize::MAX),
            cache_dir: r.cache_dir.as_deref().map(|d| base.join(d)),
            pool: r.pool,
            warm_max_calls: r.warm_max_calls,
        };
        (routing, problems)
    });
    let routing = routing.map(|(routing, problems)| {
        for (path, msg) in problems {
            err(path.into(), &msg);
        }
        routing
    });

    let a = &raw.access;
    let mut trusted_proxies = Vec::new();
    for (i, c) in a.trusted_proxies.iter().enumerate() {
        match parse_cidr(c) {
            Some(net) => trusted_proxies.push(net),
            None => err(
                format!("access.trusted_proxies[{i}]"),
                "must be an IPv4/IPv6 address or CIDR such as 10.0.0.0/8",
            ),
        }
    }
    let access = AccessConfig {
        trusted_proxies,
        ip_limit: rate_limit(a.ip_requests_per_minute, a.ip_burst),
        rotation_grace: Duration::from_secs(a.rotation_grace_seconds),
    };
    let plan = |p: RawPlan| PlanLimits {
        rate: rate_limit(p.requests_per_minute, p.burst),
        tokens_per_day: (p.tokens_per_day > 0).then_some(p.tokens_per_day),
    };
    let plans = Plans {
        development: plan(raw.plans.development),
        professional: plan(raw.plans.professional),
        enterprise: plan(raw.plans.enterprise),
    };
    let b = raw.budgets;
    if b.currency.len() != 3 || !b.currency.bytes().all(|c| c.is_ascii_uppercase()) {
        err(
            "budgets.currency".into(),
            "must be a three-letter ISO 4217 code such as USD",
        );
    }
    if b.thresholds.iter().any(|t| *t == 0 || *t > 1_000)
        || b.thresholds.windows(2).any(|w| w[0] >= w[1])
    {
        err(
            "budgets.thresholds".into(),
            "must be ascending percentages between 1 and 1000",
        );
    }
    if b.default_max_tokens == 0 {
        err("budgets.default_max_tokens".into(), "must be at least 1");
    }
    let budgets = BudgetsConfig {
        currency: b.currency,
        thresholds: b.thresholds,
        default_max_tokens: b.default_max_tokens,
    };
    let guardrail = raw.guardrail.map(|g| {
        let component = g.component.as_deref().and_then(|p| {
            read_file(base, p)
                .map(Arc::from)
                .map_err(|e| err("guardrail.component".into(), &e))
                .ok()
        });
        if let Some(s) = &g.settings
            && serde_json::from_str::<serde_json::Value>(s).is_err()
        {
            err(
                "guardrail.settings".into(),
                "must be a JSON document (docs/GUARDRAIL.md)",
            );
        }
        if g.deadline_ms == 0 || g.deadline_ms > 1_000 {
            err("guardrail.deadline_ms".into(), "must be between 1 and 1000");
        }
        if g.memory_mb == 0 || g.memory_mb > 128 {
            err("guardrail.memory_mb".into(), "must be between 1 and 128");
        }
        GuardrailConfig {
            component,
            settings: g.settings,
            deadline: Duration::from_millis(g.deadline_ms),
            memory_bytes: usize::try_from(g.memory_mb << 20).unwrap_or(usize::MAX),
        }
    });
    let webhooks = webhooks::validate(raw.webhooks, &mut err);
    let data_dir = base.join(&raw.data_dir);
    let journal = validate_journal(raw.journal, base, &data_dir, &raw.sovereign_id, &mut err);

    match listen {
        Some(listen) if errors.is_empty() => Ok(Config {
            sovereign_id: raw.sovereign_id,
            region: raw.region,
            default_model: ModelId(raw.default_model),
            data_dir,
            server: ServerConfig {
                listen,
                max_body_bytes: usize::try_from(s.max_body_bytes).unwrap_or(usize::MAX),
                max_connections: s.max_connections as usize,
                header_read_timeout: Duration::from_millis(s.header_read_timeout_ms),
                body_read_timeout: Duration::from_millis(s.body_read_timeout_ms),
                shutdown_grace: Duration::from_millis(s.shutdown_grace_ms),
            },
            models,
            teams,
            keys,
            routing,
            access,
            plans,
            budgets,
            journal,
            guardrail,
            webhooks,
            health,
        }),
        _ => Err(ConfigErrors(errors)),
    }
}

fn validate_journal(
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
    open.force = j.force;
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

/// Reads a file named in the config, relative to the config's directory.
fn read_file(base: &Path, path: &str) -> Result<Vec<u8>, String> {
    let full = base.join(path);
    std::fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))
}

fn is_language_code(l: &str) -> bool {
    l.len() == 2 && l.bytes().all(|b| b.is_ascii_lowercase())
}

/// `Url::join` treats a base without a trailing slash as a file and drops its last segment.
fn with_trailing_slash(mut u: Url) -> Url {
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    u
}

/// `requests_per_minute`, `burst` as written; 0 for either means no limit.
fn rate_limit(per_minute: u32, burst: u32) -> Option<RateLimit> {
    Some(RateLimit {
        per_minute: std::num::NonZeroU32::new(per_minute)?,
        burst: std::num::NonZeroU32::new(burst)?,
    })
}

/// A CIDR, or a bare address meaning just that address.
pub fn parse_cidr(s: &str) -> Option<ipnet::IpNet> {
    let s = s.trim();
    s.parse::<ipnet::IpNet>()
        .ok()
        .or_else(|| s.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
}

fn parse_key_hash(s: &str) -> Option<[u8; 32]> {
    let hex_part = s.strip_prefix("sha256:")?;
    let bytes = hex::decode(hex_part).ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
sovereign_id = "gw-1"
region = "sa-riyadh-1"
default_model = "m1"

[[models]]
id = "m1"
family = "jais"
kind = "chat"
languages = ["ar", "en"]
region = "sa-riyadh-1"
local = true
base_url = "http://127.0.0.1:9000/v1"

[[teams]]
id = "t"

[[keys]]
name = "admin"
team = "t"
role = "admin"
hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
"#;

    #[test]
    fn parses_a_good_config() {
        let c = Config::parse(GOOD).unwrap();
        assert_eq!(c.models[0].base_url.as_str(), "http://127.0.0.1:9000/v1/");
        assert_eq!(c.models[0].upstream_model, "m1");
        assert_eq!(c.server.listen.port(), 8080);
    }

    #[test]
    fn reports_every_error_with_its_path() {
        let bad = GOOD
            .replace(
                "base_url = \"http://127.0.0.1:9000/v1\"",
                "base_url = \"ftp:/x\"",
            )
            .replace("languages = [\"ar\", \"en\"]", "languages = [\"Arabic\"]")
            .replace("team = \"t\"", "team = \"nope\"")
            .replace("default_model = \"m1\"", "default_model = \"m9\"");
        let e = Config::parse(&bad).unwrap_err();
        let text = e.to_string();
        for needle in [
            "models[0].base_url",
            "models[0].languages[0]",
            "keys[0].team",
            "default_model",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
        assert_eq!(e.0.len(), 4, "{text}");
    }

    #[test]
    fn journal_defaults_to_durable_under_data_dir() {
        let c = Config::parse(GOOD).unwrap();
        let j = c.journal.unwrap();
        assert_eq!(j.open.dir, Path::new("./data/journal"));
        assert_eq!(j.open.signing_key, Path::new("./data/journal-signing.key"));
        assert_eq!(j.open.durability, crate::journal::Durability::Durable);
        assert_eq!(j.open.sovereign_id, "gw-1");
        assert!(j.retention.max_age.is_none() && j.retention.max_bytes.is_none());
        let off = Config::parse(&format!("{GOOD}\n[journal]\nenabled = false\n")).unwrap();
        assert!(off.journal.is_none());
    }

    #[test]
    fn journal_errors_have_their_paths() {
        let bad = format!(
            "{GOOD}\n[journal]\ndurability = \"sometimes\"\nbatch_window_ms = 0\nmax_bytes = 0\ndir = \"j\"\nsigning_key = \"j/k\"\n"
        );
        let text = Config::parse(&bad).unwrap_err().to_string();
        for needle in [
            "journal.durability",
            "journal.batch_window_ms",
            "journal.max_bytes",
            "journal.signing_key",
        ] {
            assert!(text.contains(needle), "{needle} missing from:\n{text}");
        }
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let e = Config::parse(&format!("{GOOD}\nbogus = 1\n")).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}

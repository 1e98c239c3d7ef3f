//! Gateway configuration: the TOML file as written (`Raw*`, serde with `deny_unknown_fields`) and
//! the validated, typed [`Config`] the rest of the gateway uses. Validation reports every problem at
//! once, each with its path (`models[2].base_url: ...`). The domain's own types a section names
//! (`Role`, `Plan`, `ModelConfig`, `ModelId`, …) are `crate::domain`'s, not this module's.
//!
//! One file per section, each with its `Raw*` struct and its own `validate`; this module holds the
//! top level (`sovereign_id`, `region`, `default_model`, `data_dir`), loading and parsing, the
//! error collector, and re-exports so `crate::config::Xxx` names every section's types. A new
//! section (`tls`, `store`) is a file, a field in [`RawConfig`] and [`Config`], and one line in
//! [`validate`].
//!
//! Where a section's file lives: the sections about who calls and what they may spend (teams and
//! keys, access and plans, budgets) in `tenants/`; the sections about what the gateway keeps and
//! for how long (store and shared, journal, responses, documents) in `storage/`; every other
//! section (the models and their upstreams, routing, guardrail, server, TLS, traces, webhooks)
//! and the shared name checks at the top.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::domain::{ModelConfig, ModelId, ModelKind};

mod guardrail;
mod health;
mod mcp;
mod models;
mod names;
mod routing;
mod server;
mod storage;
mod tenants;
mod tls;
mod traces;
mod webhooks;

use storage::{documents, journal, responses, store};
use tenants::{access, budgets, teams};

pub use access::{AccessConfig, PlanLimits, Plans, RateLimit, parse_cidr};
pub use budgets::BudgetsConfig;
pub use documents::DocumentsConfig;
pub use guardrail::{GuardrailConfig, defaults as guardrail_defaults};
pub use health::{HealthConfig, MAX_FALLBACKS};
pub use journal::JournalSettings;
pub use mcp::{
    DEFAULT_STDIO_CPU_SECONDS, DEFAULT_STDIO_MEMORY_MB, MAX_SERVER_NAME, McpConfig, RawMcpServer,
    check_server_name, check_stdio,
};
pub use names::{check_model_id, check_region};
pub use responses::ResponsesConfig;
pub use routing::{DEFAULT_WARM_MAX_CALLS, PoolMode, RoutingConfig};
pub use server::ServerConfig;
pub use store::{
    ENV_REDIS_URL, ENV_SHARED_NAMESPACE, ENV_STORE_URL, OnFailure, PostgresConfig, RedisConfig,
    SharedConfig, StoreConfig,
};
pub use teams::{KeyConfig, TeamConfig};
pub use tls::{CertIdentityConfig, TlsConfig};
pub use traces::TracesConfig;
pub use webhooks::WebhooksConfig;

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
    server: server::RawServer,
    #[serde(default)]
    models: Vec<models::RawModel>,
    #[serde(default)]
    teams: Vec<teams::RawTeam>,
    #[serde(default)]
    keys: Vec<teams::RawKey>,
    #[serde(default)]
    routing: Option<routing::RawRouting>,
    #[serde(default)]
    access: access::RawAccess,
    #[serde(default)]
    plans: access::RawPlans,
    #[serde(default)]
    budgets: budgets::RawBudgets,
    #[serde(default)]
    journal: journal::RawJournal,
    #[serde(default)]
    guardrail: Option<guardrail::RawGuardrail>,
    #[serde(default)]
    webhooks: webhooks::RawWebhooks,
    #[serde(default)]
    mcp: mcp::RawMcp,
    #[serde(default)]
    health: health::RawHealth,
    #[serde(default)]
    documents: documents::RawDocuments,
    #[serde(default)]
    responses: responses::RawResponses,
    #[serde(default)]
    tls: Option<tls::RawTls>,
    #[serde(default)]
    cert_identities: Vec<tls::RawCertIdentity>,
    #[serde(default)]
    store: store::RawStore,
    #[serde(default)]
    shared: store::RawShared,
    #[serde(default)]
    traces: traces::RawTraces,
}

fn default_data_dir() -> String {
    "data".into()
}

/// The per-call deadline of a policy section (`routing`, `guardrail`) left unset.
fn default_policy_deadline_ms() -> u64 {
    5
}
/// The memory cap of a policy section (`routing`, `guardrail`) left unset.
fn default_policy_memory_mb() -> u64 {
    32
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
    /// The MCP gateway (`[mcp]`; defaults when absent).
    pub mcp: McpConfig,
    /// The document library and retrieval (`[documents]`; defaults when absent).
    pub documents: DocumentsConfig,
    /// Passive health and fallback (`[health]`).
    pub health: HealthConfig,
    /// OpenTelemetry traces (`[traces]`).
    pub traces: TracesConfig,
    /// Stored responses of the Responses API (`[responses]`).
    pub responses: ResponsesConfig,
    /// The HTTPS listener; `None`: plain HTTP.
    pub tls: Option<TlsConfig>,
    /// Client certificates mapped to teams and roles (`[[cert_identities]]`).
    pub cert_identities: Vec<CertIdentityConfig>,
    /// Durable state's back end (`[store]`): SQLite in `data_dir`, or PostgreSQL.
    pub store: StoreConfig,
    /// State replicas share at once (`[shared]`): this process, or Redis.
    pub shared: SharedConfig,
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

/// Every section validated in turn, in the order their errors are reported; any error fails the
/// whole file, with every error found.
fn validate(raw: RawConfig, base: &Path) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    let mut err = |path: String, msg: &str| errors.push(format!("{path}: {msg}"));

    if raw.sovereign_id.trim().is_empty() {
        err("sovereign_id".into(), "must not be empty");
    }
    if let Err(e) = names::check_region(&raw.region) {
        err("region".into(), &e);
    }
    let server = server::validate(&raw.server, &mut err);
    models::check_fallbacks(&raw.models, &mut err);
    let health = health::validate(&raw.health, &mut err);
    let traces = traces::validate(raw.traces, &mut err);
    let (models, model_ids) = models::validate(raw.models, base, &mut err);
    models::check_default_model(&raw.default_model, &models, &model_ids, &mut err);
    let (teams, team_ids) = teams::validate_teams(raw.teams, &mut err);
    let keys = teams::validate_keys(raw.keys, &team_ids, &mut err);
    let cert_identities = tls::validate_identities(raw.cert_identities, &team_ids, &mut err);
    let routing = raw.routing.map(|r| routing::validate(r, base, &mut err));
    let access = access::validate(&raw.access, &mut err);
    let plans = access::plans(raw.plans);
    let budgets = budgets::validate(raw.budgets, &mut err);
    let guardrail = raw
        .guardrail
        .map(|g| guardrail::validate(g, base, &mut err));
    let webhooks = webhooks::validate(raw.webhooks, base, &mut err);
    let mcp = mcp::validate(raw.mcp, base, &mut err);
    let documents = documents::validate(raw.documents, base, &mut err);
    if let Some(id) = &documents.embedding_model
        && !models
            .iter()
            .any(|m| &m.id.0 == id && m.kind == ModelKind::Embedding)
    {
        err(
            "documents.embedding_model".into(),
            "must name a [[models]] entry of kind \"embedding\"",
        );
    }
    let data_dir = base.join(&raw.data_dir);
    let journal = journal::validate(raw.journal, base, &data_dir, &raw.sovereign_id, &mut err);
    let responses = responses::validate(&raw.responses, &mut err);
    let tls = raw.tls.and_then(|t| tls::validate(t, base, &mut err));
    if !cert_identities.is_empty()
        && tls
            .as_ref()
            .is_none_or(|t| t.spec.client_auth == crate::tls::ClientAuth::Off)
    {
        err(
            "cert_identities".into(),
            "certificate identities need [tls] with client_auth \"optional\" or \"required\"",
        );
    }
    let (store, shared) =
        store::validate(raw.store, raw.shared, |k| std::env::var(k).ok(), &mut err);

    match server {
        Some(server) if errors.is_empty() => Ok(Config {
            sovereign_id: raw.sovereign_id,
            region: raw.region,
            default_model: ModelId(raw.default_model),
            data_dir,
            server,
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
            mcp,
            documents,
            health,
            traces,
            responses,
            tls,
            cert_identities,
            store,
            shared,
        }),
        _ => Err(ConfigErrors(errors)),
    }
}

/// Reads a file named in the config, relative to the config's directory.
fn read_file(base: &Path, path: &str) -> Result<Vec<u8>, String> {
    let full = base.join(path);
    std::fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))
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

    /// Issue 49: model ids and regions are names with a shape, each error at its path.
    #[test]
    fn a_bad_model_id_or_region_is_refused_at_its_path() {
        let bad = GOOD
            .replace(
                "region = \"sa-riyadh-1\"\ndefault_model",
                "region = \"sa riyadh\"\ndefault_model",
            )
            .replace("id = \"m1\"", "id = \"m1\\u202e\"")
            .replace("region = \"sa-riyadh-1\"\nlocal", "region = \"\"\nlocal");
        let errors = Config::parse(&bad).unwrap_err().to_string();
        for start in [
            "region: must be 1 to 64",
            "models[0].id: must be 1 to 128",
            "models[0].region: must be 1 to 64",
        ] {
            assert!(
                errors.lines().any(|l| l.starts_with(start)),
                "{start} in {errors}"
            );
        }
        assert!(
            errors.contains(r#"got "m1\u{202e}""#),
            "shown escaped: {errors}"
        );
    }

    #[test]
    fn parses_a_good_config() {
        let c = Config::parse(GOOD).unwrap();
        assert_eq!(c.models[0].base_url.as_str(), "http://127.0.0.1:9000/v1/");
        assert_eq!(c.models[0].upstream_model, "m1");
        assert_eq!(c.server.listen.port(), 8080);
    }

    /// Issue 45: `messages = "native"` (chat models only); translation by default.
    #[test]
    fn a_model_may_speak_messages_natively() {
        use crate::domain::MessagesApi;
        assert_eq!(
            Config::parse(GOOD).unwrap().models[0].messages,
            MessagesApi::Translate
        );
        let native = GOOD.replace("local = true\n", "local = true\nmessages = \"native\"\n");
        assert_eq!(
            Config::parse(&native).unwrap().models[0].messages,
            MessagesApi::Native
        );
        let embedding = native.replace("kind = \"chat\"", "kind = \"embedding\"");
        let errors = Config::parse(&embedding).unwrap_err().to_string();
        assert!(
            errors.contains("models[0].messages: `native` is for chat models"),
            "{errors}"
        );
        let unknown = GOOD.replace("local = true\n", "local = true\nmessages = \"anthropic\"\n");
        assert!(Config::parse(&unknown).is_err());
    }

    #[test]
    fn serving_threads_default_to_the_cpus_and_are_bounded() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(Config::parse(GOOD).unwrap().server.threads, cpus);
        let shared = Config::parse(&format!("{GOOD}\n[server]\nthreads = 0\n")).unwrap();
        assert_eq!(shared.server.threads, 0);
        let text = Config::parse(&format!("{GOOD}\n[server]\nthreads = 5000\n"))
            .unwrap_err()
            .to_string();
        assert!(text.contains("server.threads"), "{text}");
    }

    #[test]
    fn a_base_url_with_credentials_is_refused() {
        let bad = GOOD.replace(
            "base_url = \"http://127.0.0.1:9000/v1\"",
            "base_url = \"http://user:secret@127.0.0.1:9000/v1\"",
        );
        let text = Config::parse(&bad).unwrap_err().to_string();
        assert!(
            text.contains("models[0].base_url") && text.contains("api_key_env"),
            "{text}"
        );
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
            "{GOOD}\n[journal]\ndurability = \"sometimes\"\nbatch_window_ms = 0\nmax_bytes = 0\npreallocate_bytes = 2000000000\ndir = \"j\"\nsigning_key = \"j/k\"\n"
        );
        let text = Config::parse(&bad).unwrap_err().to_string();
        for needle in [
            "journal.durability",
            "journal.batch_window_ms",
            "journal.max_bytes",
            "journal.preallocate_bytes",
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

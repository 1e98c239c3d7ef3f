//! `[store]` and `[shared]`: where the gateway's state lives. The embedded default is SQLite in
//! `data_dir` and limits in process memory; replicas share PostgreSQL (`[store] backend =
//! "postgres"`) for durable state and Redis (`[shared] backend = "redis"`) for request rates,
//! budgets and revocation across replicas (docs/SCALE-OUT.md).
//!
//! Connection strings usually carry a password, so the environment may give them instead of the
//! file: `SOVEREIGN_STORE_URL` (a `postgres://` URL: selects PostgreSQL), `SOVEREIGN_REDIS_URL`
//! (selects Redis) and `SOVEREIGN_SHARED_NAMESPACE`. The environment wins over the file.

use std::time::Duration;

use serde::Deserialize;

pub const ENV_STORE_URL: &str = "SOVEREIGN_STORE_URL";
pub const ENV_REDIS_URL: &str = "SOVEREIGN_REDIS_URL";
pub const ENV_SHARED_NAMESPACE: &str = "SOVEREIGN_SHARED_NAMESPACE";

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawStore {
    backend: Option<String>,
    url: Option<String>,
    pool_size: Option<usize>,
    /// How long authenticated traffic may go on from the key cache while PostgreSQL is down.
    outage_grace_ms: Option<u64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(in crate::config) struct RawShared {
    backend: Option<String>,
    url: Option<String>,
    namespace: Option<String>,
    on_failure: Option<String>,
    key_cache_ttl_ms: Option<u64>,
    timeout_ms: Option<u64>,
}

/// `[store]`, validated: the durable state's back end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// `<data_dir>/sovereign.db` (the default).
    Sqlite,
    Postgres(PostgresConfig),
}

impl StoreConfig {
    /// Whether replicas may share it (PostgreSQL), rather than one process owning it (SQLite).
    pub fn is_shared(&self) -> bool {
        matches!(self, StoreConfig::Postgres(_))
    }

    /// How long traffic goes on while the store does not answer (`None`: the embedded store,
    /// whose writes requests always wait for).
    pub fn outage_grace(&self) -> Option<Duration> {
        match self {
            StoreConfig::Sqlite => None,
            StoreConfig::Postgres(pg) => Some(pg.outage_grace),
        }
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct PostgresConfig {
    pub url: String,
    pub pool_size: usize,
    /// A cached key keeps authenticating this long after PostgreSQL stopped answering.
    pub outage_grace: Duration,
}

impl std::fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never in logs.
        f.debug_struct("PostgresConfig")
            .field("pool_size", &self.pool_size)
            .field("outage_grace", &self.outage_grace)
            .finish_non_exhaustive()
    }
}

/// `[shared]`, validated: state every replica must see at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SharedConfig {
    /// In this process only (the default; one replica).
    Local,
    Redis(RedisConfig),
}

/// What a request meets when Redis does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// 503 `shared_state_unavailable` with `Retry-After` (the default: limits stay exact).
    Closed,
    /// This replica's own limits, logged and counted (`sovereign_shared_fail_open_total`).
    Open,
}

#[derive(Clone, PartialEq, Eq)]
pub struct RedisConfig {
    pub url: String,
    /// Prefix of every key and channel: replicas of one gateway share it, other gateways on the
    /// same Redis use another.
    pub namespace: String,
    pub on_failure: OnFailure,
    /// How long a replica trusts a cached key without hearing of a change: the freshness bound
    /// when a revocation message is lost.
    pub key_cache_ttl: Duration,
    /// The deadline of one Redis call on the request path.
    pub timeout: Duration,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("namespace", &self.namespace)
            .field("on_failure", &self.on_failure)
            .field("key_cache_ttl", &self.key_cache_ttl)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

pub(in crate::config) fn validate(
    store: RawStore,
    shared: RawShared,
    env: impl Fn(&str) -> Option<String>,
    err: &mut impl FnMut(String, &str),
) -> (StoreConfig, SharedConfig) {
    let store = validate_store(store, &env, err);
    let shared = validate_shared(shared, &env, err);
    if matches!(shared, SharedConfig::Redis(_)) && store == StoreConfig::Sqlite {
        err(
            "shared.backend".into(),
            "\"redis\" needs [store] backend = \"postgres\": replicas must share one database",
        );
    }
    (store, shared)
}

fn validate_store(
    raw: RawStore,
    env: &impl Fn(&str) -> Option<String>,
    err: &mut impl FnMut(String, &str),
) -> StoreConfig {
    let url = env(ENV_STORE_URL).or(raw.url);
    let backend = match (raw.backend.as_deref(), &url) {
        (Some(b), _) => b.to_owned(),
        (None, Some(_)) => "postgres".into(),
        (None, None) => "sqlite".into(),
    };
    match backend.as_str() {
        "sqlite" => {
            if url.is_some() {
                err(
                    "store.url".into(),
                    "only for backend = \"postgres\" (SQLite lives in data_dir)",
                );
            }
            StoreConfig::Sqlite
        }
        "postgres" => {
            let url = url.unwrap_or_default();
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                err(
                    "store.url".into(),
                    "must be a postgres:// URL (or set SOVEREIGN_STORE_URL)",
                );
            }
            let pool_size = raw.pool_size.unwrap_or(16);
            if !(1..=512).contains(&pool_size) {
                err("store.pool_size".into(), "must be between 1 and 512");
            }
            let grace = raw.outage_grace_ms.unwrap_or(300_000);
            if grace > 86_400_000 {
                err("store.outage_grace_ms".into(), "must be at most a day");
            }
            StoreConfig::Postgres(PostgresConfig {
                url,
                pool_size: pool_size.clamp(1, 512),
                outage_grace: Duration::from_millis(grace),
            })
        }
        _ => {
            err("store.backend".into(), "must be \"sqlite\" or \"postgres\"");
            StoreConfig::Sqlite
        }
    }
}

fn validate_shared(
    raw: RawShared,
    env: &impl Fn(&str) -> Option<String>,
    err: &mut impl FnMut(String, &str),
) -> SharedConfig {
    let url = env(ENV_REDIS_URL).or(raw.url);
    let backend = match (raw.backend.as_deref(), &url) {
        (Some(b), _) => b.to_owned(),
        (None, Some(_)) => "redis".into(),
        (None, None) => "local".into(),
    };
    match backend.as_str() {
        "local" => {
            if url.is_some() {
                err("shared.url".into(), "only for backend = \"redis\"");
            }
            SharedConfig::Local
        }
        "redis" => {
            let url = url.unwrap_or_default();
            if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
                err(
                    "shared.url".into(),
                    "must be a redis:// URL (or set SOVEREIGN_REDIS_URL)",
                );
            }
            let namespace = env(ENV_SHARED_NAMESPACE)
                .or(raw.namespace)
                .unwrap_or_else(|| "sovereign".into());
            if namespace.is_empty()
                || namespace.len() > 64
                || !namespace
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            {
                err(
                    "shared.namespace".into(),
                    "1 to 64 characters of letters, digits, '-', '_', '.'",
                );
            }
            let on_failure = match raw.on_failure.as_deref().unwrap_or("closed") {
                "closed" => OnFailure::Closed,
                "open" => OnFailure::Open,
                _ => {
                    err("shared.on_failure".into(), "must be \"closed\" or \"open\"");
                    OnFailure::Closed
                }
            };
            let ttl = raw.key_cache_ttl_ms.unwrap_or(5_000);
            if !(100..=3_600_000).contains(&ttl) {
                err(
                    "shared.key_cache_ttl_ms".into(),
                    "must be between 100 and 3600000",
                );
            }
            let timeout = raw.timeout_ms.unwrap_or(250);
            if !(1..=60_000).contains(&timeout) {
                err("shared.timeout_ms".into(), "must be between 1 and 60000");
            }
            SharedConfig::Redis(RedisConfig {
                url,
                namespace,
                on_failure,
                key_cache_ttl: Duration::from_millis(ttl),
                timeout: Duration::from_millis(timeout),
            })
        }
        _ => {
            err("shared.backend".into(), "must be \"local\" or \"redis\"");
            SharedConfig::Local
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        store: &str,
        shared: &str,
        env: &[(&str, &str)],
    ) -> Result<(StoreConfig, SharedConfig), Vec<String>> {
        let store: RawStore = toml::from_str(store).unwrap();
        let shared: RawShared = toml::from_str(shared).unwrap();
        let mut errors = Vec::new();
        let out = validate(
            store,
            shared,
            |k| {
                env.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            },
            &mut |p, m| errors.push(format!("{p}: {m}")),
        );
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        }
    }

    #[test]
    fn defaults_are_embedded() {
        assert_eq!(
            run("", "", &[]).unwrap(),
            (StoreConfig::Sqlite, SharedConfig::Local)
        );
    }

    #[test]
    fn the_environment_selects_and_overrides() {
        let (store, shared) = run(
            "url = \"postgres://file/db\"",
            "",
            &[
                (ENV_STORE_URL, "postgres://env/db"),
                (ENV_REDIS_URL, "redis://127.0.0.1:1/"),
                (ENV_SHARED_NAMESPACE, "gw-a"),
            ],
        )
        .unwrap();
        let StoreConfig::Postgres(pg) = store else {
            panic!("postgres expected")
        };
        assert_eq!(pg.url, "postgres://env/db");
        let SharedConfig::Redis(r) = shared else {
            panic!("redis expected")
        };
        assert_eq!(r.namespace, "gw-a");
        assert_eq!(r.on_failure, OnFailure::Closed);
        assert!(!format!("{pg:?}").contains("env/db"), "no URL in logs");
    }

    #[test]
    fn bad_values_are_named() {
        let e = run(
            "backend = \"mysql\"",
            "backend = \"redis\"\nurl = \"http://x\"\non_failure = \"maybe\"\nnamespace = \"a b\"",
            &[],
        )
        .unwrap_err();
        let all = e.join("\n");
        for path in [
            "store.backend",
            "shared.url",
            "shared.on_failure",
            "shared.namespace",
        ] {
            assert!(all.contains(path), "{path} in {all}");
        }
        let e = run("", "backend = \"redis\"\nurl = \"redis://x\"", &[]).unwrap_err();
        assert!(
            e[0].contains("needs [store] backend = \"postgres\""),
            "{e:?}"
        );
    }
}

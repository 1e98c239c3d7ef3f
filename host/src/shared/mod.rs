//! State every replica must see at once (`[shared]`): request rates and changes that end cached
//! trust (a revoked key, a changed team, a deleted certificate identity). [`Shared::Local`] is one process (the
//! embedded default: the callers keep their in-memory limiters and caches); [`Shared::Redis`]
//! puts each rate decision in one atomic Redis script and carries [`Change`]s to every replica
//! over pub/sub. Below `access` and `state`: it knows Redis and the config, no gateway type.
//! docs/SCALE-OUT.md.

mod admission;
mod ledger;
mod redis;

use std::time::Duration;

use tokio::sync::mpsc;

pub use self::redis::RedisShared;
use crate::config::{OnFailure, SharedConfig};
pub use ledger::{Counters, LeaseTerms, Reserved, Settled, Settlement};

/// Where shared state lives.
#[derive(Clone)]
pub enum Shared {
    Local,
    Redis(std::sync::Arc<RedisShared>),
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shared::Local => f.write_str("Shared::Local"),
            Shared::Redis(r) => write!(f, "Shared::Redis({})", r.namespace()),
        }
    }
}

/// Redis did not answer in time, or refused.
#[derive(Debug, Clone, thiserror::Error)]
#[error("redis: {0}")]
pub struct SharedError(pub String);

/// A Redis call under `timeout`: its error, or the deadline passing, as a [`SharedError`].
async fn within<T>(
    timeout: Duration,
    f: impl std::future::Future<Output = ::redis::RedisResult<T>>,
) -> Result<T, SharedError> {
    match tokio::time::timeout(timeout, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(SharedError(e.to_string())),
        Err(_) => Err(SharedError(format!(
            "no answer in {} ms",
            timeout.as_millis()
        ))),
    }
}

/// One request-rate decision (GCRA), in the terms of the `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub remaining: u32,
    /// Until the whole burst is available again.
    pub reset_after: Duration,
    /// Set when refused: until the next request can be admitted.
    pub retry_after: Option<Duration>,
}

impl Decision {
    /// A GCRA script's answer (`shared::redis`, `shared::admission`): admitted 0/1, remaining,
    /// reset after and retry after in µs.
    fn of_gcra(admitted: i64, remaining: i64, reset_us: i64, wait_us: i64) -> Decision {
        let us = |v: i64| Duration::from_micros(u64::try_from(v).unwrap_or(0));
        Decision {
            remaining: u32::try_from(remaining).unwrap_or(0),
            reset_after: us(reset_us),
            retry_after: (admitted == 0).then(|| us(wait_us).max(Duration::from_millis(1))),
        }
    }
}

/// A change that ends what replicas hold in memory. Sent after the store committed it, so a
/// replica that reloads on receipt sees the new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A key was revoked, rotated, changed or deleted.
    Key(String),
    /// A team was changed or deleted (its keys' cached principals with it).
    Team(String),
    /// Certificate identities were added or deleted: reload the table.
    CertIdentities,
    /// Webhook subscriptions were created, deleted or re-keyed: reload them.
    Webhooks,
    /// The team's document was added or deleted: the search index follows the store.
    Document { team: String, id: String },
    /// A router version was uploaded or activated: load and follow the stored ones.
    Policies,
    /// The guardrail was swapped: follow the stored active one.
    Guardrail,
    /// MCP servers were registered or removed, or a key's tool allowlist changed: reload them.
    Mcp,
}

impl Change {
    fn encode(&self) -> String {
        match self {
            Change::Key(id) => format!("key:{id}"),
            Change::Team(id) => format!("team:{id}"),
            Change::CertIdentities => "cert-identities".into(),
            Change::Webhooks => "webhooks".into(),
            Change::Policies => "policies".into(),
            Change::Guardrail => "guardrail".into(),
            Change::Mcp => "mcp".into(),
            // Document ids (`doc_…`) hold no ':'; team ids may.
            Change::Document { team, id } => format!("document:{id}:{team}"),
        }
    }

    fn decode(s: &str) -> Option<Change> {
        Some(match s.split_once(':') {
            Some(("key", id)) => Change::Key(id.into()),
            Some(("team", id)) => Change::Team(id.into()),
            Some(("document", rest)) => {
                let (id, team) = rest.split_once(':')?;
                Change::Document {
                    team: team.into(),
                    id: id.into(),
                }
            }
            Some(_) => return None,
            None => match s {
                "cert-identities" => Change::CertIdentities,
                "webhooks" => Change::Webhooks,
                "policies" => Change::Policies,
                "guardrail" => Change::Guardrail,
                "mcp" => Change::Mcp,
                _ => return None,
            },
        })
    }
}

/// What the change listener hears.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Another replica changed something.
    Changed(Change),
    /// The subscription was (re)established after a gap in which messages may have been lost:
    /// drop everything cached.
    Resync,
}

impl Shared {
    /// Connects to Redis when `[shared]` says so; the first connection must succeed (a replica
    /// that cannot reach Redis at start says so and stops, rather than serving with wrong limits).
    pub async fn connect(config: &SharedConfig, replica: &str) -> anyhow::Result<Shared> {
        match config {
            SharedConfig::Local => Ok(Shared::Local),
            SharedConfig::Redis(r) => Ok(Shared::Redis(std::sync::Arc::new(
                RedisShared::connect(r, replica).await?,
            ))),
        }
    }

    /// What a request meets when Redis does not answer (`Closed` for the local back end, which
    /// never fails).
    pub fn on_failure(&self) -> OnFailure {
        match self {
            Shared::Local => OnFailure::Closed,
            Shared::Redis(r) => r.on_failure(),
        }
    }

    /// Tells every other replica; a no-op locally. A failure is logged and counted by the
    /// caller: the change is committed, and the cache TTL bounds how long others miss it.
    pub async fn publish(&self, change: Change) -> Result<(), SharedError> {
        match self {
            Shared::Local => Ok(()),
            Shared::Redis(r) => r.publish(&change).await,
        }
    }

    /// [`Shared::publish`], a failure logged and counted: the change is committed, and the other
    /// replicas' key-cache time-to-live bounds how long they miss it.
    pub async fn announce(&self, change: Change, metrics: &crate::metrics::Metrics) {
        if let Err(e) = self.publish(change).await {
            crate::metrics::Metrics::inc(&metrics.shared_publish_failures_total);
            tracing::warn!(error = %e, "telling the other replicas failed: their caches expire it");
        }
    }

    /// Other replicas' changes, until the receiver is dropped; `None` locally.
    pub fn listen(&self) -> Option<mpsc::Receiver<Notice>> {
        match self {
            Shared::Local => None,
            Shared::Redis(r) => Some(r.listen()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_round_trip() {
        for c in [
            Change::Key("key_01".into()),
            Change::Team("team:with:colons".into()),
            Change::CertIdentities,
            Change::Webhooks,
            Change::Policies,
            Change::Guardrail,
            Change::Mcp,
            Change::Document {
                team: "team:x".into(),
                id: "doc_01".into(),
            },
        ] {
            assert_eq!(Change::decode(&c.encode()), Some(c));
        }
        assert_eq!(Change::decode("nonsense"), None);
        assert_eq!(Change::decode("what:x"), None);
    }
}

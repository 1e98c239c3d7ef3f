//! The Redis back end of [`super::Shared`]: one multiplexed connection (reconnecting by itself),
//! request rates as GCRA scripts (one round trip, Redis's own clock, so replicas' clocks never
//! disagree; a request's admission batched with its neighbours' in `super::admission`), and
//! changes on one pub/sub channel per namespace.

use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::mpsc;

use super::{Change, Decision, Notice, SharedError};
use crate::config::{OnFailure, RedisConfig};

/// GCRA on Redis's clock, in microseconds (`GCRA` calls it; `super::admission` runs the same
/// rule over a batch): `key` the limit's key, `interval` µs per request, `burst`. Returns
/// {admitted 0/1, remaining, reset_after µs, retry_after µs}. The stored value is the
/// theoretical arrival time; it expires when the burst is whole again, so idle limits cost no
/// memory.
const GCRA_FN: &str = r"
local function gcra(key, interval, burst)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local tat = tonumber(redis.call('GET', key))
  if not tat or tat < now then tat = now end
  local tolerance = interval * (burst - 1)
  local wait = tat - tolerance - now
  if wait > 0 then
    return {0, 0, tat - now, wait}
  end
  local new_tat = tat + interval
  redis.call('SET', key, string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
  local remaining = math.floor((now + tolerance - new_tat) / interval) + 1
  return {1, remaining, new_tat - now, 0}
end
";

/// One limit: KEYS[1]; ARGV: interval, burst.
const GCRA: &str = "return gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))";

/// Reconnect back-off of the change listener.
const LISTEN_BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));

pub struct RedisShared {
    client: redis::Client,
    pub(super) conn: ConnectionManager,
    gcra: redis::Script,
    admissions: super::admission::Admissions,
    pub(super) scripts: super::ledger::Scripts,
    config: RedisConfig,
    channel: String,
    replica: String,
    /// Whose budget leases this process holds: the replica and this run of it (a restarted
    /// replica must not inherit, and keep renewing, what its previous run held).
    lease_owner: String,
}

impl std::fmt::Debug for RedisShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisShared")
            .field("namespace", &self.config.namespace)
            .finish_non_exhaustive()
    }
}

impl RedisShared {
    pub async fn connect(config: &RedisConfig, replica: &str) -> anyhow::Result<RedisShared> {
        let client = redis::Client::open(config.url.as_str())
            .map_err(|e| anyhow::anyhow!("[shared] url: {e}"))?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout.max(Duration::from_secs(1))))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let conn = client
            .get_connection_manager_with_config(manager)
            .await
            .map_err(|e| anyhow::anyhow!("[shared] redis is not reachable: {e}"))?;
        let admissions = super::admission::Admissions::start(
            conn.clone(),
            format!("{}:unused", config.namespace),
            config.timeout,
        );
        Ok(RedisShared {
            client,
            conn,
            gcra: redis::Script::new(&format!("{GCRA_FN}\n{GCRA}")),
            admissions,
            scripts: super::ledger::Scripts::new(),
            channel: format!("{}:changes", config.namespace),
            config: config.clone(),
            replica: replica.to_owned(),
            lease_owner: format!("{replica}#{}", uuid::Uuid::now_v7().simple()),
        })
    }

    pub fn namespace(&self) -> &str {
        &self.config.namespace
    }

    /// Whose lease a ledger script moves: this replica's current run.
    pub(super) fn lease_owner(&self) -> &str {
        &self.lease_owner
    }

    pub fn on_failure(&self) -> OnFailure {
        self.config.on_failure
    }

    /// Takes one request from the limit named `scope` (e.g. `key:key_01…`, `ip:192.0.2.1`).
    pub async fn gcra(
        &self,
        scope: &str,
        per_minute: u32,
        burst: u32,
    ) -> Result<Decision, SharedError> {
        let interval_us = 60_000_000 / u64::from(per_minute.max(1));
        let key = format!("{}:rate:{scope}", self.config.namespace);
        let mut conn = self.conn.clone();
        let (admitted, remaining, reset_us, wait_us): (i64, i64, i64, i64) = self
            .call(
                self.gcra
                    .key(key)
                    .arg(interval_us)
                    .arg(burst.max(1))
                    .invoke_async(&mut conn),
            )
            .await?;
        Ok(Decision::of_gcra(admitted, remaining, reset_us, wait_us))
    }

    /// A request's admission in one round trip (shared with the requests admitted alongside
    /// it: `super::admission`): `rate` (scope, per minute, burst) taken from, and the day's
    /// token counts of `tokens` (the key's and the team's scopes) read.
    pub async fn admit(
        &self,
        rate: Option<(String, u32, u32)>,
        tokens: Option<([String; 2], i64)>,
    ) -> Result<(Option<Decision>, Option<[u64; 2]>), SharedError> {
        let rate = rate.map(|(scope, per_minute, burst)| {
            (
                format!("{}:rate:{scope}", self.config.namespace),
                60_000_000 / u64::from(per_minute.max(1)),
                burst,
            )
        });
        let tokens = tokens
            .map(|([key, team], day)| [self.tokens_key(&key, day), self.tokens_key(&team, day)]);
        self.admissions
            .admit(super::admission::Admission { rate, tokens })
            .await
    }

    pub async fn publish(&self, change: &Change) -> Result<(), SharedError> {
        let mut conn = self.conn.clone();
        let message = format!("{}|{}", self.replica, change.encode());
        let _receivers: i64 = self
            .call(
                redis::cmd("PUBLISH")
                    .arg(&self.channel)
                    .arg(message)
                    .query_async(&mut conn),
            )
            .await?;
        Ok(())
    }

    /// Subscribes on a task of its own, reconnecting with back-off; every (re)subscription is
    /// announced as [`Notice::Resync`] (messages sent while it was away are lost). Ends when the
    /// receiver is dropped.
    pub fn listen(&self) -> mpsc::Receiver<Notice> {
        let (tx, rx) = mpsc::channel(1024);
        let client = self.client.clone();
        let channel = self.channel.clone();
        let own = format!("{}|", self.replica);
        tokio::spawn(async move {
            let mut backoff = LISTEN_BACKOFF.0;
            while !tx.is_closed() {
                match client.get_async_pubsub().await {
                    Ok(mut pubsub) => {
                        if let Err(e) = pubsub.subscribe(&channel).await {
                            tracing::warn!(error = %e, "subscribing to replica changes failed");
                        } else {
                            backoff = LISTEN_BACKOFF.0;
                            if tx.send(Notice::Resync).await.is_err() {
                                return;
                            }
                            let mut messages = pubsub.on_message();
                            while let Some(msg) = messages.next().await {
                                let Ok(text) = msg.get_payload::<String>() else {
                                    continue;
                                };
                                if text.starts_with(&own) {
                                    continue;
                                }
                                let change =
                                    text.split_once('|').and_then(|(_, c)| Change::decode(c));
                                match change {
                                    Some(c) => {
                                        if tx.send(Notice::Changed(c)).await.is_err() {
                                            return;
                                        }
                                    }
                                    None => {
                                        tracing::warn!(message = %text, "unknown replica change")
                                    }
                                }
                            }
                            tracing::warn!("the replica changes subscription ended; reconnecting");
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "redis pub/sub connection failed"),
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(LISTEN_BACKOFF.1);
            }
        });
        rx
    }

    /// A call under the configured deadline.
    pub(super) async fn call<T>(
        &self,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, SharedError> {
        super::within(self.config.timeout, f).await
    }
}

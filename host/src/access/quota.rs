//! Tokens per UTC day, per key and per team. Counted in memory from completed requests' usage,
//! started at boot from the store's usage rows of the current day, reset at midnight UTC.
//!
//! Admission refuses a request once a counter has reached its cap; a request admitted under the
//! cap is served whole, so a counter can end above its cap by the requests in flight when it was
//! reached (documented in docs/LIMITS.md). Money, which must never be exceeded, is held by
//! reservation instead (`budget`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::shared::{RedisShared, Shared, SharedError};

use crate::store::{KeyId, Store, StoreResult, TeamId, UnixMillis, UsageFilter};

const DAY_MS: i64 = 86_400_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QuotaScope {
    Team(String),
    Key(String),
}

impl QuotaScope {
    pub fn describe(&self) -> String {
        match self {
            QuotaScope::Team(t) => format!("team {t}"),
            QuotaScope::Key(k) => format!("key {k}"),
        }
    }
}

#[derive(Debug, Default)]
pub struct TokenQuota {
    inner: Mutex<Day>,
    /// Every replica's counters (`[shared] backend = "redis"`); this process's `inner` stays
    /// the fallback when Redis fails open.
    shared: Option<Arc<RedisShared>>,
}

#[derive(Debug, Default)]
struct Day {
    /// Days since the Unix epoch (UTC) the counters are for.
    day: i64,
    /// By key id and by team id: two maps, so a check looks up by `&str` without allocating.
    keys: HashMap<String, u64>,
    teams: HashMap<String, u64>,
}

impl Day {
    fn used(&self, scope: &QuotaScope) -> u64 {
        match scope {
            QuotaScope::Key(k) => self.keys.get(k),
            QuotaScope::Team(t) => self.teams.get(t),
        }
        .copied()
        .unwrap_or(0)
    }

    /// A key's and its team's counts.
    fn pair(&self, key: &str, team: &str) -> [u64; 2] {
        [
            self.keys.get(key).copied().unwrap_or(0),
            self.teams.get(team).copied().unwrap_or(0),
        ]
    }
}

/// A cap that was reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaExceeded {
    pub scope: QuotaScope,
    pub cap: u64,
    pub used: u64,
    /// Next midnight UTC, Unix milliseconds.
    pub resets_at: UnixMillis,
}

impl TokenQuota {
    /// Today's counters from the store's usage rows, team by team: each team's query reads a
    /// range of the `(team_id, at)` index, where one query for the whole day had no index to use
    /// (none on `at` alone, which every charge would pay for) and read the whole table (SQLite, 2
    /// million rows over 30 days: ~155 ms, against ~29 ms for 20 teams' queries; docs/STORE.md).
    /// A deleted team's usage is not loaded: its keys went with it.
    pub async fn load(store: &dyn Store, now: UnixMillis) -> StoreResult<TokenQuota> {
        let day = now.div_euclid(DAY_MS);
        let mut d = Day {
            day,
            ..Day::default()
        };
        for team in store.teams().await? {
            let rows = store
                .usage(UsageFilter {
                    team_id: Some(team.id),
                    from: Some(day * DAY_MS),
                    ..UsageFilter::default()
                })
                .await?;
            for r in rows {
                let tokens = r.tokens_in.saturating_add(r.tokens_out);
                *d.teams.entry(r.team_id.0).or_insert(0) += tokens;
                *d.keys.entry(r.key_id.0).or_insert(0) += tokens;
            }
        }
        Ok(TokenQuota {
            inner: Mutex::new(d),
            shared: None,
        })
    }

    /// Refuses when the key's or the team's counter has reached its cap (`None`: no cap).
    pub fn check(
        &self,
        key: &str,
        key_cap: Option<u64>,
        team: &str,
        team_cap: Option<u64>,
        now: UnixMillis,
    ) -> Result<(), QuotaExceeded> {
        if key_cap.is_none() && team_cap.is_none() {
            return Ok(());
        }
        let d = self.day(now);
        judge([(key, key_cap), (team, team_cap)], d.pair(key, team), d.day)
    }

    /// [`TokenQuota::check`] against counts read elsewhere (every replica's, from Redis): `used` is
    /// the key's and the team's tokens today there. This replica's own counters already hold its
    /// settlements the settler has not yet sent to Redis, so the larger of the two counts is taken:
    /// a client's next request on the same replica sees its last request's tokens at once. Both
    /// counts are lower bounds of the day's use, so the larger one never over-counts.
    pub fn check_shared(
        &self,
        key: &str,
        key_cap: Option<u64>,
        team: &str,
        team_cap: Option<u64>,
        used: [u64; 2],
        now: UnixMillis,
    ) -> Result<(), QuotaExceeded> {
        let d = self.day(now);
        let here = d.pair(key, team);
        let used = [used[0].max(here[0]), used[1].max(here[1])];
        judge([(key, key_cap), (team, team_cap)], used, d.day)
    }

    /// Counts tokens per day in Redis from now on, its counters started from this replica's
    /// view of the day (unless another replica started them first).
    pub async fn share(mut self, shared: &Shared) -> Result<TokenQuota, SharedError> {
        let Shared::Redis(redis) = shared else {
            return Ok(self);
        };
        let seeds: Vec<(String, u64, i64)> = {
            let d = self
                .inner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            d.keys
                .iter()
                .map(|(k, n)| (format!("key:{k}"), *n, d.day))
                .chain(
                    d.teams
                        .iter()
                        .map(|(t, n)| (format!("team:{t}"), *n, d.day)),
                )
                .collect()
        };
        for (scope, tokens, day) in seeds {
            redis.seed_tokens(&scope, day, tokens).await?;
        }
        self.shared = Some(redis.clone());
        Ok(self)
    }

    /// Counts a completed request's tokens against its key and team.
    pub fn add(&self, key: &KeyId, team: &TeamId, tokens: u64, now: UnixMillis) {
        self.add_here(key, team, tokens, now);
        if let Some(redis) = self.shared.clone() {
            let day = now.div_euclid(DAY_MS);
            let (k, t) = (format!("key:{}", key.0), format!("team:{}", team.0));
            tokio::spawn(async move {
                if let Err(e) = redis.add_tokens(&[&k, &t], day, tokens).await {
                    tracing::warn!(error = %e, "counting tokens per day in Redis failed");
                }
            });
        }
    }

    /// This process's counters only (the shared ones were counted elsewhere: the budget's settle
    /// script counts them with the money).
    pub fn add_here(&self, key: &KeyId, team: &TeamId, tokens: u64, now: UnixMillis) {
        let mut d = self.day(now);
        add_to(&mut d.keys, &key.0, tokens);
        add_to(&mut d.teams, &team.0, tokens);
    }

    pub fn used(&self, scope: &QuotaScope, now: UnixMillis) -> u64 {
        self.day(now).used(scope)
    }

    /// The counters, rolled over to `now`'s day first.
    fn day(&self, now: UnixMillis) -> std::sync::MutexGuard<'_, Day> {
        let mut d = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let today = now.div_euclid(DAY_MS);
        if today != d.day {
            d.day = today;
            d.keys.clear();
            d.teams.clear();
        }
        d
    }
}

/// Days since the Unix epoch (UTC) of a time: the counters' day.
pub fn day_of(at: UnixMillis) -> i64 {
    at.div_euclid(DAY_MS)
}

/// The first cap reached (the key's, then the team's), given each one's use today.
fn judge(caps: [(&str, Option<u64>); 2], used: [u64; 2], day: i64) -> Result<(), QuotaExceeded> {
    let resets_at = (day + 1) * DAY_MS;
    for (i, ((id, cap), used)) in caps.into_iter().zip(used).enumerate() {
        if let Some(cap) = cap
            && used >= cap
        {
            let scope = match i {
                0 => QuotaScope::Key(id.to_string()),
                _ => QuotaScope::Team(id.to_string()),
            };
            return Err(QuotaExceeded {
                scope,
                cap,
                used,
                resets_at,
            });
        }
    }
    Ok(())
}

/// Adds to a counter, allocating its key only the first time.
fn add_to(map: &mut HashMap<String, u64>, id: &str, tokens: u64) {
    match map.get_mut(id) {
        Some(n) => *n += tokens,
        None => {
            map.insert(id.to_string(), tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_key_and_team_reset_at_midnight() {
        let q = TokenQuota::default();
        let now = 20_000 * DAY_MS + 5;
        let (k, t) = (KeyId("k".into()), TeamId("t".into()));
        assert!(q.check("k", Some(100), "t", Some(150), now).is_ok());
        q.add(&k, &t, 100, now);
        let e = q.check("k", Some(100), "t", Some(150), now).unwrap_err();
        assert_eq!(e.scope, QuotaScope::Key("k".into()));
        assert_eq!(e.resets_at, 20_001 * DAY_MS);
        // Another key of the same team: stopped by the team's cap once it is reached.
        assert!(q.check("k2", Some(100), "t", Some(150), now).is_ok());
        q.add(&KeyId("k2".into()), &t, 50, now);
        let e = q.check("k2", Some(100), "t", Some(150), now).unwrap_err();
        assert_eq!(e.scope, QuotaScope::Team("t".into()));
        // Next day.
        assert!(
            q.check("k", Some(100), "t", Some(150), now + DAY_MS)
                .is_ok()
        );
        assert_eq!(q.used(&QuotaScope::Team("t".into()), now + DAY_MS), 0);
    }

    #[test]
    fn shared_counts_and_this_replicas_unsent_ones_the_larger_wins() {
        let q = TokenQuota::default();
        let now = 20_000 * DAY_MS + 5;
        // Settled here, not yet in Redis: refused at once on this replica.
        q.add_here(&KeyId("k".into()), &TeamId("t".into()), 20, now);
        let e = q
            .check_shared("k", Some(10), "t", None, [0, 0], now)
            .unwrap_err();
        assert_eq!((e.scope, e.used), (QuotaScope::Key("k".into()), 20));
        // Other replicas' tokens, in Redis only: refused too.
        let e = q
            .check_shared("k2", None, "t", Some(50), [0, 60], now)
            .unwrap_err();
        assert_eq!((e.scope, e.used), (QuotaScope::Team("t".into()), 60));
        // Neither reaches the cap: admitted, the counts not added together.
        assert!(
            q.check_shared("k", Some(30), "t", Some(30), [15, 25], now)
                .is_ok()
        );
    }
}

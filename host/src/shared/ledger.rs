//! Budgets and tokens per day in Redis, for every replica at once. A budget scope is one hash
//! (`<ns>:budget:<scope>`: `limit` — absent when unlimited —, `spent`, `reserved`, `fired`, the
//! thresholds already announced), loaded from the durable store on first use by whichever
//! replica needs it first (`HSETNX` semantics: a later load never overwrites live counters).
//! Reserve is one script over all of a request's scopes, so two replicas can never hold more
//! than a budget between them; settlements (and releases: settlements of nothing) go in
//! batches. Tokens per day are two counters per UTC day (`<ns>:tokens:<scope>:<day>`), expiring
//! after two days.

use super::{RedisShared, SharedError};

/// KEYS: the scopes' hashes; ARGV[1]: the amount. {0}: reserved on all; {1, i, remaining}: the
/// i-th (1-based) scope cannot cover it; {2, i…}: these scopes are not loaded yet.
const RESERVE: &str = r"
local amount = tonumber(ARGV[1])
local missing = {}
for i, k in ipairs(KEYS) do
  if redis.call('EXISTS', k) == 0 then missing[#missing + 1] = i end
end
if #missing > 0 then return {2, unpack(missing)} end
for i, k in ipairs(KEYS) do
  local v = redis.call('HMGET', k, 'limit', 'spent', 'reserved')
  if v[1] then
    local remaining = tonumber(v[1]) - tonumber(v[2]) - tonumber(v[3])
    if amount > remaining then return {1, i, remaining} end
  end
end
for _, k in ipairs(KEYS) do redis.call('HINCRBY', k, 'reserved', amount) end
return {0}
";

/// Sets `fired` to the thresholds reached now (ARGV[first..]) and returns the newly reached
/// ones' bits; shared by the scripts below (prepended to each).
const REACHED: &str = r"
local function reached(k, first)
  local v = redis.call('HMGET', k, 'limit', 'spent', 'fired')
  if not v[1] then return 0 end
  local limit, spent, fired = tonumber(v[1]), tonumber(v[2]), tonumber(v[3] or '0')
  local now = 0
  for j = first, #ARGV do
    if spent * 100 >= limit * tonumber(ARGV[j]) then now = bit.bor(now, bit.lshift(1, j - first)) end
  end
  redis.call('HSET', k, 'fired', bit.bor(fired, now))
  return bit.band(now, bit.bnot(fired))
end
";

/// Settlements in one call: for the i-th (0-based), KEYS[4i+1..4i+2] its team's and key's budget
/// scopes and KEYS[4i+3..4i+4] their token counters of the day; ARGV: n, the counters' expiry
/// (s), then (reserved, actual, tokens) per settlement, then the thresholds. Per scope, in order,
/// {spent, limit (-1: none), newly reached bits}; a scope not loaded (Redis lost it) is
/// {-1, -1, 0}: its durable charge still reaches the store, and the next load starts from there.
const SETTLE: &str = r"
local n, ttl = tonumber(ARGV[1]), ARGV[2]
local first = 3 + 3 * n
local out = {}
for i = 0, n - 1 do
  local reserved, actual, tokens = tonumber(ARGV[3 + 3 * i]), tonumber(ARGV[4 + 3 * i]), ARGV[5 + 3 * i]
  for j = 1, 2 do
    local k = KEYS[4 * i + j]
    if redis.call('EXISTS', k) == 1 then
      if redis.call('HINCRBY', k, 'reserved', -reserved) < 0 then redis.call('HSET', k, 'reserved', 0) end
      local spent = redis.call('HINCRBY', k, 'spent', actual)
      local newly = reached(k, first)
      out[#out + 1] = {spent, tonumber(redis.call('HGET', k, 'limit') or '-1'), newly}
    else
      out[#out + 1] = {-1, -1, 0}
    end
  end
  for j = 3, 4 do
    redis.call('INCRBY', KEYS[4 * i + j], tokens)
    redis.call('EXPIRE', KEYS[4 * i + j], ttl)
  end
end
return out
";

/// KEYS[1]: the scope; ARGV: limit ('' = none), spent, thresholds…. Creates it unless present.
const LOAD: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'spent', ARGV[2], 'reserved', 0, 'fired', 0)
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'limit', ARGV[1]) end
reached(KEYS[1], 3)
return 1
";

/// KEYS[1]: the scope; ARGV: limit ('' = none), thresholds…. Re-arms thresholds against the new
/// limit; a scope not loaded is left to load from the store.
const SET_LIMIT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'limit') else redis.call('HSET', KEYS[1], 'limit', ARGV[1]) end
redis.call('HSET', KEYS[1], 'fired', 0)
reached(KEYS[1], 2)
return 1
";

/// KEYS: the day's counters; ARGV[1]: tokens; ARGV[2]: expiry in seconds.
const ADD_TOKENS: &str = r"
for _, k in ipairs(KEYS) do
  redis.call('INCRBY', k, ARGV[1])
  redis.call('EXPIRE', k, ARGV[2])
end
return 0
";

/// Two days: a day's counter outlives its day, whatever the clocks' skew.
const TOKENS_TTL_S: u64 = 2 * 86_400;

/// The outcome of a shared reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reserved {
    Admitted,
    /// The scope at this index cannot cover it; what it has left.
    Insufficient {
        index: usize,
        remaining: i64,
    },
    /// These scopes (indexes) must be loaded from the store first.
    Unloaded(Vec<usize>),
}

/// One request's settlement: its team's and key's scopes, what was reserved, what it cost, its
/// tokens and their day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    pub scopes: [String; 2],
    pub reserved: i64,
    pub actual: i64,
    pub tokens: u64,
    pub day: i64,
}

/// A scope after a settlement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    pub spent: i64,
    /// `None`: unlimited, or not loaded.
    pub limit: Option<i64>,
    /// Bit i: the i-th threshold was reached by this settlement.
    pub newly: u64,
}

/// A scope's counters, as the admin API shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    pub limit: Option<i64>,
    pub spent: i64,
    pub reserved: i64,
}

pub(super) struct Scripts {
    reserve: redis::Script,
    settle: redis::Script,
    load: redis::Script,
    set_limit: redis::Script,
    add_tokens: redis::Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        let with_reached = |s: &str| redis::Script::new(&format!("{REACHED}\n{s}"));
        Scripts {
            reserve: redis::Script::new(RESERVE),
            settle: with_reached(SETTLE),
            load: with_reached(LOAD),
            set_limit: with_reached(SET_LIMIT),
            add_tokens: redis::Script::new(ADD_TOKENS),
        }
    }
}

fn limit_arg(limit: Option<i64>) -> String {
    limit.map(|l| l.to_string()).unwrap_or_default()
}

impl RedisShared {
    fn budget_key(&self, scope: &str) -> String {
        format!("{}:budget:{scope}", self.namespace())
    }

    pub(super) fn tokens_key(&self, scope: &str, day: i64) -> String {
        format!("{}:tokens:{scope}:{day}", self.namespace())
    }

    /// Holds `amount` on every scope, all or none.
    pub async fn reserve(&self, scopes: &[String], amount: i64) -> Result<Reserved, SharedError> {
        let mut inv = self.scripts.reserve.prepare_invoke();
        for s in scopes {
            inv.key(self.budget_key(s));
        }
        inv.arg(amount);
        let mut conn = self.conn.clone();
        let out: Vec<i64> = self.call(inv.invoke_async(&mut conn)).await?;
        let index = |v: i64| usize::try_from(v - 1).unwrap_or(0);
        Ok(match out.as_slice() {
            [0] => Reserved::Admitted,
            [1, i, remaining] => Reserved::Insufficient {
                index: index(*i),
                remaining: *remaining,
            },
            [2, rest @ ..] => Reserved::Unloaded(rest.iter().map(|i| index(*i)).collect()),
            other => return Err(SharedError(format!("reserve script answered {other:?}"))),
        })
    }

    /// Creates the scope's counters from the store's figures, unless a replica already did.
    pub async fn load(
        &self,
        scope: &str,
        limit: Option<i64>,
        spent: i64,
        thresholds: &[u32],
    ) -> Result<(), SharedError> {
        let mut inv = self.scripts.load.key(self.budget_key(scope));
        inv.arg(limit_arg(limit)).arg(spent);
        for t in thresholds {
            inv.arg(*t);
        }
        let mut conn = self.conn.clone();
        let _: i64 = self.call(inv.invoke_async(&mut conn)).await?;
        Ok(())
    }

    /// Settlements in one round trip: each moves its `reserved` out and `actual` in on its
    /// team's and key's scopes and adds its tokens to their counters of its day. Two
    /// [`Settled`] per settlement (team, key), in order.
    pub async fn settle(
        &self,
        batch: &[Settlement],
        thresholds: &[u32],
    ) -> Result<Vec<Settled>, SharedError> {
        let mut inv = self.scripts.settle.prepare_invoke();
        for s in batch {
            for scope in &s.scopes {
                inv.key(self.budget_key(scope));
            }
            for scope in &s.scopes {
                inv.key(self.tokens_key(scope, s.day));
            }
        }
        inv.arg(batch.len()).arg(TOKENS_TTL_S);
        for s in batch {
            inv.arg(s.reserved).arg(s.actual).arg(s.tokens);
        }
        for t in thresholds {
            inv.arg(*t);
        }
        let mut conn = self.conn.clone();
        let out: Vec<(i64, i64, i64)> = self.call(inv.invoke_async(&mut conn)).await?;
        Ok(out
            .into_iter()
            .map(|(spent, limit, newly)| Settled {
                spent,
                limit: (limit >= 0).then_some(limit),
                newly: u64::try_from(newly).unwrap_or(0),
            })
            .collect())
    }

    /// After the store's limit changed: the live counters follow, thresholds re-armed.
    pub async fn set_limit(
        &self,
        scope: &str,
        limit: Option<i64>,
        thresholds: &[u32],
    ) -> Result<(), SharedError> {
        let mut inv = self.scripts.set_limit.key(self.budget_key(scope));
        inv.arg(limit_arg(limit));
        for t in thresholds {
            inv.arg(*t);
        }
        let mut conn = self.conn.clone();
        let _: i64 = self.call(inv.invoke_async(&mut conn)).await?;
        Ok(())
    }

    /// After a team or key was deleted.
    pub async fn forget(&self, scope: &str) -> Result<(), SharedError> {
        let mut conn = self.conn.clone();
        let _: i64 = self
            .call(
                redis::cmd("DEL")
                    .arg(self.budget_key(scope))
                    .query_async(&mut conn),
            )
            .await?;
        Ok(())
    }

    /// The live counters of a scope; `None` when no replica has loaded it.
    pub async fn counters(&self, scope: &str) -> Result<Option<Counters>, SharedError> {
        let mut conn = self.conn.clone();
        let (limit, spent, reserved): (Option<i64>, Option<i64>, Option<i64>) = self
            .call(
                redis::cmd("HMGET")
                    .arg(self.budget_key(scope))
                    .arg("limit")
                    .arg("spent")
                    .arg("reserved")
                    .query_async(&mut conn),
            )
            .await?;
        Ok(spent.map(|spent| Counters {
            limit,
            spent,
            reserved: reserved.unwrap_or(0),
        }))
    }

    /// Adds `tokens` to each scope's counter of `day`.
    pub async fn add_tokens(
        &self,
        scopes: &[&str],
        day: i64,
        tokens: u64,
    ) -> Result<(), SharedError> {
        let mut inv = self.scripts.add_tokens.prepare_invoke();
        for s in scopes {
            inv.key(self.tokens_key(s, day));
        }
        inv.arg(tokens).arg(TOKENS_TTL_S);
        let mut conn = self.conn.clone();
        let _: i64 = self.call(inv.invoke_async(&mut conn)).await?;
        Ok(())
    }

    /// Starts a day's counter from the store's usage unless a replica already has (start-up).
    pub async fn seed_tokens(&self, scope: &str, day: i64, tokens: u64) -> Result<(), SharedError> {
        let mut conn = self.conn.clone();
        let _: Option<String> = self
            .call(
                redis::cmd("SET")
                    .arg(self.tokens_key(scope, day))
                    .arg(tokens)
                    .arg("NX")
                    .arg("EX")
                    .arg(TOKENS_TTL_S)
                    .query_async(&mut conn),
            )
            .await?;
        Ok(())
    }
}

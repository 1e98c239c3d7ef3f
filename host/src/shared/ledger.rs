//! Budgets and tokens per day in Redis, for every replica at once. A budget scope is one hash
//! (`<ns>:budget:<scope>`: `limit` — absent when unlimited —, `spent`, `reserved`, `fired`, the
//! thresholds already announced), loaded from the durable store on first use by whichever
//! replica needs it first (`HSETNX` semantics: a later load never overwrites live counters).
//! What a replica holds is a *lease* (`<ns>:lease:<scope>`: per replica, the amount it holds and
//! when that expires, by Redis's clock): acquiring is one script over all of a request's scopes
//! that reserves the request's amount — and, far from the budget's end, some headroom for the
//! replica's next requests, which it then draws without a round trip — so replicas can never hold
//! more than a budget between them. Settlements (and releases: settlements of nothing) move a
//! request's amount from its replica's lease to `spent`, in batches. A dead replica's lease
//! expires; a live one renews it. Tokens per day are two counters per UTC day
//! (`<ns>:tokens:<scope>:<day>`), expiring after two days.

use std::collections::HashMap;

use super::{RedisShared, SharedError};

/// The live leases of a scope other than `me`'s, summed; expired ones deleted on the way.
/// Fields: `<owner>` (amount held) and `<owner>:exp` (expiry, ms of Redis's clock); the owner
/// is a replica's current run (`<sovereign_id>#<uuid>`).
const HELD: &str = r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function held_by_others(l, me, now)
  local all = redis.call('HGETALL', l)
  local held = 0
  for j = 1, #all, 2 do
    local f = all[j]
    if string.sub(f, -4) ~= ':exp' and f ~= me then
      if tonumber(redis.call('HGET', l, f .. ':exp') or '0') < now then
        redis.call('HDEL', l, f, f .. ':exp')
      else
        held = held + tonumber(all[j + 1])
      end
    end
  end
  return held
end
";

/// KEYS: per scope its budget hash and its lease hash; ARGV: amount, replica, lease ttl (ms),
/// tail (headroom is leased only while what is left covers this many more requests), most
/// (headroom: at most this many requests' worth, and an eighth of what is left), then per scope
/// what the replica gives back of the headroom it held. {0, extra…}: reserved on all, with this
/// much headroom leased per scope (-1: the scope has no limit); {1, i, remaining}: the i-th
/// (1-based) scope cannot cover it; {2, i…}: these scopes are not loaded yet.
const ACQUIRE: &str = r"
local amount, me, ttl = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local tail, most = tonumber(ARGV[4]), tonumber(ARGV[5])
local n = #KEYS / 2
local missing = {}
for i = 1, n do
  if redis.call('EXISTS', KEYS[2 * i - 1]) == 0 then missing[#missing + 1] = i end
end
if #missing > 0 then return {2, unpack(missing)} end
local now = now_ms()
local own, avail = {}, {}
for i = 1, n do
  local b, l = KEYS[2 * i - 1], KEYS[2 * i]
  local mine = tonumber(redis.call('HGET', l, me) or '0') - tonumber(ARGV[5 + i])
  if mine < 0 then mine = 0 end
  own[i] = mine
  local v = redis.call('HMGET', b, 'limit', 'spent', 'reserved')
  if v[1] then
    avail[i] = tonumber(v[1]) - tonumber(v[2]) - tonumber(v[3] or '0') - held_by_others(l, me, now) - mine
  end
end
local refused = nil
for i = 1, n do
  if avail[i] and amount > avail[i] then refused = i; break end
end
local out = {0}
for i = 1, n do
  local extra = -1
  if avail[i] then
    extra = 0
    if not refused then
      local spare = avail[i] - amount
      if spare >= tail * amount then extra = math.min(most * amount, math.floor(spare / 8)) end
      own[i] = own[i] + amount + extra
    end
    redis.call('HSET', KEYS[2 * i], me, own[i], me .. ':exp', now + ttl)
  end
  out[#out + 1] = extra
end
if refused then return {1, refused, avail[refused]} end
return out
";

/// KEYS: lease hashes; ARGV: replica, ttl (ms). Pushes the replica's expiry out where it holds.
const RENEW: &str = r"
local now = now_ms()
for _, l in ipairs(KEYS) do
  if redis.call('HEXISTS', l, ARGV[1]) == 1 then redis.call('HSET', l, ARGV[1] .. ':exp', now + tonumber(ARGV[2])) end
end
return 0
";

/// The thresholds (ARGV[first..], percent) that `spent` reaches of `limit`, as bits; and the
/// same over a budget hash: sets `fired` to what is reached now and returns the newly reached
/// bits. Prepended to `SETTLE` (which applies `crossed` to the counters it carries through a
/// batch), `LOAD` and `SET_LIMIT`.
const REACHED: &str = r"
local percents = {}
local function crossed(spent, limit, first)
  local now = 0
  for j = first, #ARGV do
    local p = percents[j]
    if p == nil then p = tonumber(ARGV[j]); percents[j] = p end
    if spent * 100 >= limit * p then now = bit.bor(now, bit.lshift(1, j - first)) end
  end
  return now
end
local function reached(k, first)
  local v = redis.call('HMGET', k, 'limit', 'spent', 'fired')
  if not v[1] then return 0 end
  local fired = tonumber(v[3] or '0')
  local now = crossed(tonumber(v[2]), tonumber(v[1]), first)
  redis.call('HSET', k, 'fired', bit.bor(fired, now))
  return bit.band(now, bit.bnot(fired))
end
";

/// Settlements in one call: for the i-th (0-based), KEYS[6i+1..6i+2] its team's and key's budget
/// scopes, KEYS[6i+3..6i+4] their lease hashes and KEYS[6i+5..6i+6] their token counters of the
/// day; ARGV: replica, n, the counters' expiry (s), then (team's reserved, key's reserved,
/// actual, tokens) per settlement, then the thresholds. The reserved amounts leave the replica's
/// lease (unless it expired meanwhile), `actual` joins `spent`. The answer is flat, three integers
/// per scope in order: spent, limit (-1: none), newly reached bits (nested tables cost Redis more
/// to build and encode, as in `shared::admission`); a scope not loaded (Redis lost it) is
/// -1, -1, 0: its durable charge still reaches the store, and the next load starts from there.
///
/// A batch's settlements mostly share their scopes (a team's keys, a key's requests), so each
/// distinct hash and counter is read once, the settlements applied to it in order in Lua (each
/// answer what settling one at a time would have answered), and written once: the script's
/// Redis commands grow with the distinct scopes, not with the batch.
const SETTLE: &str = r"
local me, n, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local first = 4 + 4 * n
local scopes, leases, tokens = {}, {}, {}
local scope_keys, lease_keys, token_keys = {}, {}, {}
local out, o = {}, 0
for i = 0, n - 1 do
  local actual, added = tonumber(ARGV[6 + 4 * i]), tonumber(ARGV[7 + 4 * i])
  for j = 1, 2 do
    local k, l = KEYS[6 * i + j], KEYS[6 * i + 2 + j]
    local reserved = tonumber(ARGV[3 + 4 * i + j])
    if reserved > 0 then
      if not leases[l] then leases[l] = 0; lease_keys[#lease_keys + 1] = l end
      leases[l] = leases[l] + reserved
    end
    local s = scopes[k]
    if s == nil then
      local v = redis.call('HMGET', k, 'limit', 'spent', 'fired')
      if v[2] then
        s = {limit = v[1] and tonumber(v[1]), spent = tonumber(v[2]), fired = tonumber(v[3] or '0'), added = 0}
        scope_keys[#scope_keys + 1] = k
      else
        s = false
      end
      scopes[k] = s
    end
    if s then
      s.spent = s.spent + actual
      s.added = s.added + actual
      local newly = 0
      if s.limit then
        local now = crossed(s.spent, s.limit, first)
        newly = bit.band(now, bit.bnot(s.fired))
        s.fired = bit.bor(s.fired, now)
      end
      out[o + 1], out[o + 2], out[o + 3] = s.spent, s.limit or -1, newly
    else
      out[o + 1], out[o + 2], out[o + 3] = -1, -1, 0
    end
    o = o + 3
  end
  for j = 5, 6 do
    local c = KEYS[6 * i + j]
    if not tokens[c] then tokens[c] = 0; token_keys[#token_keys + 1] = c end
    tokens[c] = tokens[c] + added
  end
end
for _, l in ipairs(lease_keys) do
  if redis.call('HEXISTS', l, me) == 1 then
    if redis.call('HINCRBY', l, me, -leases[l]) < 0 then redis.call('HSET', l, me, 0) end
  end
end
for _, k in ipairs(scope_keys) do
  local s = scopes[k]
  redis.call('HINCRBY', k, 'spent', s.added)
  if s.limit then redis.call('HSET', k, 'fired', s.fired) end
end
for _, c in ipairs(token_keys) do
  redis.call('INCRBY', c, tokens[c])
  redis.call('EXPIRE', c, ttl)
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
    /// Reserved on every scope, with this much headroom leased per scope besides (`None`: the
    /// scope has no limit).
    Admitted(Vec<Option<i64>>),
    /// The scope at this index cannot cover it; what it has left.
    Insufficient { index: usize, remaining: i64 },
    /// These scopes (indexes) must be loaded from the store first.
    Unloaded(Vec<usize>),
}

/// One request's settlement: its team's and key's scopes, what was reserved on each, what it cost,
/// its tokens and their day. Headroom given back is a settlement of nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    pub scopes: [String; 2],
    pub reserved: [i64; 2],
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

/// How headroom is leased: for `ttl`; only while what is left covers `tail` more requests of
/// the one asking; at most `most` requests' worth (and an eighth of what is left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTerms {
    pub ttl: std::time::Duration,
    pub tail: i64,
    pub most: i64,
}

pub(super) struct Scripts {
    acquire: redis::Script,
    renew: redis::Script,
    settle: redis::Script,
    load: redis::Script,
    set_limit: redis::Script,
    add_tokens: redis::Script,
}

impl Scripts {
    pub(super) fn new() -> Scripts {
        let with_reached = |s: &str| redis::Script::new(&format!("{REACHED}\n{s}"));
        Scripts {
            acquire: redis::Script::new(&format!("{HELD}\n{ACQUIRE}")),
            renew: redis::Script::new(&format!("{HELD}\n{RENEW}")),
            settle: with_reached(SETTLE),
            load: with_reached(LOAD),
            set_limit: with_reached(SET_LIMIT),
            add_tokens: redis::Script::new(ADD_TOKENS),
        }
    }
}

/// A budget hash's `limit`, `spent` and `reserved` (absent: `None`).
type BudgetFields = (Option<i64>, Option<i64>, Option<i64>);

fn limit_arg(limit: Option<i64>) -> String {
    limit.map(|l| l.to_string()).unwrap_or_default()
}

impl RedisShared {
    fn budget_key(&self, scope: &str) -> String {
        format!("{}:budget:{scope}", self.namespace())
    }

    fn lease_key(&self, scope: &str) -> String {
        format!("{}:lease:{scope}", self.namespace())
    }

    pub(super) fn tokens_key(&self, scope: &str, day: i64) -> String {
        format!("{}:tokens:{scope}:{day}", self.namespace())
    }

    /// Holds `amount` on every scope, all or none, in this replica's lease — with headroom
    /// beside it on the terms given — after giving back `give_back[i]` of the headroom held on
    /// the i-th scope.
    pub async fn acquire(
        &self,
        scopes: &[String],
        amount: i64,
        give_back: &[i64],
        terms: LeaseTerms,
    ) -> Result<Reserved, SharedError> {
        let mut inv = self.scripts.acquire.prepare_invoke();
        for s in scopes {
            inv.key(self.budget_key(s)).key(self.lease_key(s));
        }
        inv.arg(amount)
            .arg(self.lease_owner())
            .arg(u64::try_from(terms.ttl.as_millis()).unwrap_or(u64::MAX))
            .arg(terms.tail)
            .arg(terms.most);
        for g in give_back {
            inv.arg(*g);
        }
        let mut conn = self.conn.clone();
        let out: Vec<i64> = self.call(inv.invoke_async(&mut conn)).await?;
        let index = |v: i64| usize::try_from(v - 1).unwrap_or(0);
        Ok(match out.as_slice() {
            [0, extra @ ..] => {
                Reserved::Admitted(extra.iter().map(|e| (*e >= 0).then_some(*e)).collect())
            }
            [1, i, remaining] => Reserved::Insufficient {
                index: index(*i),
                remaining: *remaining,
            },
            [2, rest @ ..] => Reserved::Unloaded(rest.iter().map(|i| index(*i)).collect()),
            other => return Err(SharedError(format!("reserve script answered {other:?}"))),
        })
    }

    /// Pushes out the expiry of this replica's leases on these scopes (it still holds them).
    pub async fn renew(
        &self,
        scopes: &[String],
        ttl: std::time::Duration,
    ) -> Result<(), SharedError> {
        let mut inv = self.scripts.renew.prepare_invoke();
        for s in scopes {
            inv.key(self.lease_key(s));
        }
        inv.arg(self.lease_owner())
            .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        let mut conn = self.conn.clone();
        let _: i64 = self.call(inv.invoke_async(&mut conn)).await?;
        Ok(())
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
                inv.key(self.lease_key(scope));
            }
            for scope in &s.scopes {
                inv.key(self.tokens_key(scope, s.day));
            }
        }
        inv.arg(self.lease_owner())
            .arg(batch.len())
            .arg(TOKENS_TTL_S);
        for s in batch {
            inv.arg(s.reserved[0])
                .arg(s.reserved[1])
                .arg(s.actual)
                .arg(s.tokens);
        }
        for t in thresholds {
            inv.arg(*t);
        }
        let mut conn = self.conn.clone();
        let out: Vec<i64> = self.call(inv.invoke_async(&mut conn)).await?;
        let (triples, rest) = out.as_chunks::<3>();
        if !rest.is_empty() {
            return Err(SharedError(format!(
                "settle script answered {} integers, not triples",
                out.len()
            )));
        }
        Ok(triples
            .iter()
            .map(|&[spent, limit, newly]| Settled {
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
                    .arg(self.lease_key(scope))
                    .query_async(&mut conn),
            )
            .await?;
        Ok(())
    }

    /// The live counters of a scope; `None` when no replica has loaded it. `reserved` is what
    /// every replica's lease holds (in-flight requests and headroom not yet drawn).
    pub async fn counters(&self, scope: &str) -> Result<Option<Counters>, SharedError> {
        let mut conn = self.conn.clone();
        let ((limit, spent, reserved), leases): (BudgetFields, HashMap<String, i64>) = self
            .call(
                redis::pipe()
                    .cmd("HMGET")
                    .arg(self.budget_key(scope))
                    .arg("limit")
                    .arg("spent")
                    .arg("reserved")
                    .cmd("HGETALL")
                    .arg(self.lease_key(scope))
                    .query_async(&mut conn),
            )
            .await?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let held: i64 = leases
            .iter()
            .filter(|(f, _)| !f.ends_with(":exp"))
            .filter(|(f, _)| {
                leases
                    .get(&format!("{f}:exp"))
                    .is_some_and(|exp| *exp >= now)
            })
            .map(|(_, amount)| *amount)
            .sum();
        Ok(spent.map(|spent| Counters {
            limit,
            spent,
            reserved: reserved.unwrap_or(0) + held,
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

//! Admissions on Redis, many requests per script call: each request's rate decision (GCRA) and
//! the day's token counts of its key and team, queued to one task that sends whatever gathered
//! while its previous call was in flight as the next call (group commit, as the budget settler
//! does for settlements). Under load a replica makes one Redis call per batch instead of one
//! per request; alone, a request waits for one call as before. Exact: the script is atomic and
//! takes the batch in order, each rate key's state read once, carried through the batch, and
//! written once, on Redis's one clock.

use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio::sync::{mpsc, oneshot};

use super::{Decision, SharedError};

/// Most admissions in one script call.
const MAX_BATCH: usize = 256;
/// Integers per admission in the script's answer.
const ANSWER_LEN: usize = 6;

/// ARGV[1]: n; per admission i (0-based) KEYS[3i+1] its rate key and KEYS[3i+2..3i+3] its
/// key's and team's token counters of the day, ARGV[2+4i..5+4i]: take from the rate (1/0),
/// interval (µs per request), burst, read the counters (1/0). The answer is flat, six integers
/// per admission: the GCRA answer {admitted 0/1, remaining, reset_after µs, retry_after µs} or
/// {-1, 0, 0, 0}, then {key tokens, team tokens} or {-1, 0}: a nested table per admission took
/// Redis 36–76 % longer per call to build and encode (bench/README.md). A rate key's stored value is its
/// theoretical arrival time, expiring when the burst is whole again, so idle limits cost no
/// memory.
const ADMIT: &str = r"
local n = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats, taken, rate_keys, counts = {}, {}, {}, {}
local function count(k)
  local c = counts[k]
  if c == nil then c = tonumber(redis.call('GET', k) or '0'); counts[k] = c end
  return c
end
local out = {}
for i = 0, n - 1 do
  local a, b = 2 + 4 * i, 6 * i
  out[b + 1], out[b + 2], out[b + 3], out[b + 4], out[b + 5], out[b + 6] = -1, 0, 0, 0, -1, 0
  if ARGV[a] == '1' then
    local key, interval, burst = KEYS[3 * i + 1], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
    local tat = tats[key]
    if tat == nil then
      tat = tonumber(redis.call('GET', key)) or now
      rate_keys[#rate_keys + 1] = key
    end
    if tat < now then tat = now end
    local tolerance = interval * (burst - 1)
    local wait = tat - tolerance - now
    if wait > 0 then
      out[b + 1], out[b + 2], out[b + 3], out[b + 4] = 0, 0, tat - now, wait
    else
      tat = tat + interval
      taken[key] = true
      out[b + 1], out[b + 2], out[b + 3], out[b + 4] =
        1, math.floor((now + tolerance - tat) / interval) + 1, tat - now, 0
    end
    tats[key] = tat
  end
  if ARGV[a + 3] == '1' then out[b + 5], out[b + 6] = count(KEYS[3 * i + 2]), count(KEYS[3 * i + 3]) end
end
for _, key in ipairs(rate_keys) do
  if taken[key] then
    local tat = tats[key]
    redis.call('SET', key, string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
  end
end
return out
";

/// One request's admission: its rate key (namespaced), interval (µs) and burst, if it has a
/// rate; its key's and team's token counters of the day (namespaced), if it has a cap.
pub(super) struct Admission {
    pub rate: Option<(String, u64, u32)>,
    pub tokens: Option<[String; 2]>,
}

/// The rate decision (when asked) and the two counters (when asked).
pub(super) type Answer = Result<(Option<Decision>, Option<[u64; 2]>), SharedError>;

struct Queued {
    admission: Admission,
    reply: oneshot::Sender<Answer>,
}

/// The queue in front of the admitting task; the task ends when this is dropped.
pub(super) struct Admissions {
    tx: mpsc::UnboundedSender<Queued>,
    timeout: Duration,
}

impl Admissions {
    /// Starts the task on `conn`; `unused` fills the key slots of what an admission does not
    /// ask (the script never touches them); `timeout` bounds each call and each wait.
    pub(super) fn start(conn: ConnectionManager, unused: String, timeout: Duration) -> Admissions {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(rx, conn, unused, timeout));
        Admissions { tx, timeout }
    }

    /// Queues `admission` and waits for its batch's answer.
    pub(super) async fn admit(&self, admission: Admission) -> Answer {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Queued { admission, reply })
            .map_err(|_| SharedError("the admitting task has stopped".into()))?;
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(SharedError("the admitting task has stopped".into())),
            Err(_) => Err(SharedError(format!(
                "no answer in {} ms",
                self.timeout.as_millis()
            ))),
        }
    }
}

/// The admitting task: what is queued, sent a batch at a time (less what nobody waits for any
/// more), every admission of a failed call answered with its error.
async fn run(
    mut rx: mpsc::UnboundedReceiver<Queued>,
    mut conn: ConnectionManager,
    unused: String,
    timeout: Duration,
) {
    let script = redis::Script::new(ADMIT);
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // A request that stopped waiting (its deadline passed while Redis was slow or down, or
        // its client left) was already answered without Redis: it must not take from a rate.
        batch.retain(|q| !q.reply.is_closed());
        if batch.is_empty() {
            continue;
        }
        let mut inv = script.prepare_invoke();
        inv.arg(batch.len());
        for q in &batch {
            let a = &q.admission;
            match &a.rate {
                Some((key, interval, burst)) => {
                    inv.key(key).arg(1).arg(*interval).arg((*burst).max(1));
                }
                None => {
                    inv.key(&unused).arg(0).arg(0).arg(0);
                }
            }
            match &a.tokens {
                Some([key, team]) => {
                    inv.key(key).key(team).arg(1);
                }
                None => {
                    inv.key(&unused).key(&unused).arg(0);
                }
            }
        }
        let call = inv.invoke_async::<Vec<i64>>(&mut conn);
        let answer = match super::within(timeout, call).await {
            Ok(items) if items.len() != ANSWER_LEN * batch.len() => Err(SharedError(format!(
                "admit script answered {} integers for {} admissions",
                items.len(),
                batch.len()
            ))),
            answer => answer,
        };
        match answer {
            Ok(items) => {
                for (q, item) in batch.drain(..).zip(items.as_chunks::<ANSWER_LEN>().0) {
                    let _ = q.reply.send(Ok(parse(item)));
                }
            }
            Err(e) => {
                for q in batch.drain(..) {
                    let _ = q.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// One admission's six integers of the script's answer.
fn parse(item: &[i64; ANSWER_LEN]) -> (Option<Decision>, Option<[u64; 2]>) {
    let [admitted, remaining, reset_after, retry_after, key, team] = *item;
    let decision =
        (admitted >= 0).then(|| Decision::of_gcra(admitted, remaining, reset_after, retry_after));
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    let used = (key >= 0).then(|| [count(key), count(team)]);
    (decision, used)
}

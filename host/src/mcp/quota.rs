//! The per-team tool-call quota (`[mcp] tool_calls_per_minute`): a fixed one-minute window per
//! team, over all its keys, counted before the call goes upstream. The key's own request rate is
//! the admission layer's, as on every route.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_secs(60);

pub struct Quota {
    per_minute: u32,
    windows: Mutex<HashMap<String, (Instant, u32)>>,
}

impl Quota {
    pub fn new(per_minute: u32) -> Quota {
        Quota {
            per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one call from `team`'s window; `Err(seconds until it resets)` when it is spent.
    pub fn take(&self, team: &str) -> Result<(), u64> {
        self.take_at(team, Instant::now())
    }

    fn take_at(&self, team: &str, now: Instant) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let mut map = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        let w = map.entry(team.to_string()).or_insert((now, 0));
        if now.duration_since(w.0) >= WINDOW {
            *w = (now, 0);
        }
        if w.1 >= self.per_minute {
            let left = WINDOW.saturating_sub(now.duration_since(w.0));
            return Err(left.as_secs().max(1));
        }
        w.1 += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_gets_its_calls_per_minute_then_waits() {
        let q = Quota::new(2);
        let t0 = Instant::now();
        assert!(q.take_at("a", t0).is_ok());
        assert!(q.take_at("a", t0).is_ok());
        assert!(q.take_at("a", t0).is_err());
        assert!(q.take_at("b", t0).is_ok(), "another team's window");
        assert!(q.take_at("a", t0 + WINDOW).is_ok(), "a new minute");
        assert!(Quota::new(0).take_at("a", t0).is_ok(), "0: no quota");
    }
}

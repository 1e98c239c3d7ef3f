//! Downstream sessions of the 2025 era: `initialize` mints an `Mcp-Session-Id` bound to the key
//! that made it; a later request with it from another key, or after it expired or was deleted,
//! is answered 404 (the client opens a new one). The 2026-07-28 era has none. Bounded in count
//! and idle time.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Sessions kept at once; the least recently used goes first.
const MAX_SESSIONS: usize = 100_000;
/// A session unused this long is forgotten.
const IDLE: Duration = Duration::from_secs(3_600);

/// One session: whose it is and the revision it negotiated.
#[derive(Debug, Clone)]
pub struct Session {
    pub key_id: String,
    pub version: String,
    used: Instant,
}

#[derive(Default)]
pub struct Sessions(Mutex<HashMap<String, Session>>);

impl Sessions {
    /// A new session for `key_id` at `version`; returns its id.
    pub fn open(&self, key_id: &str, version: &str) -> String {
        let id = format!("{:032x}", rand::random::<u128>());
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_SESSIONS {
            map.retain(|_, s| s.used.elapsed() < IDLE);
            if map.len() >= MAX_SESSIONS
                && let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, s)| s.used)
                    .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.clone(),
            Session {
                key_id: key_id.to_string(),
                version: version.to_string(),
                used: Instant::now(),
            },
        );
        id
    }

    /// The session `id` of `key_id`, if it is alive (its use noted).
    pub fn find(&self, id: &str, key_id: &str) -> Option<Session> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let s = map.get_mut(id)?;
        if s.key_id != key_id {
            return None;
        }
        if s.used.elapsed() >= IDLE {
            map.remove(id);
            return None;
        }
        s.used = Instant::now();
        Some(s.clone())
    }

    /// Ends the session `id` of `key_id`; whether there was one.
    pub fn close(&self, id: &str, key_id: &str) -> bool {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.get(id).is_some_and(|s| s.key_id == key_id) {
            map.remove(id);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;

    #[test]
    fn a_session_belongs_to_its_key() {
        let s = Sessions::default();
        let id = s.open("key_a", "2025-11-25");
        assert_eq!(s.find(&id, "key_a").unwrap().version, "2025-11-25");
        assert!(s.find(&id, "key_b").is_none());
        assert!(!s.close(&id, "key_b"));
        assert!(s.close(&id, "key_a"));
        assert!(s.find(&id, "key_a").is_none());
    }
}

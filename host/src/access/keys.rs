//! The key cache in front of the store: hash → the resolved [`Principal`] and its rate limiter.
//! Only usable keys are cached; expiry and rotation grace are re-checked against the clock on
//! every hit, so a cached key stops at its deadline without an eviction.
//!
//! Invalidation is exact: [`KeyCache::invalidate`] bumps a generation and removes matching
//! entries under the write lock; a fill that read the store before the bump carries the older
//! generation and is refused. So once `revoke` has committed to the store and invalidated the
//! cache, no request can authenticate with the key again, not even through a lookup that was
//! already in flight.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::Principal;
use super::limits::KeyLimiter;

/// A cached key: who it is, and its own request-rate limiter (`None`: unlimited).
pub struct CachedKey {
    pub principal: Arc<Principal>,
    pub limiter: Option<KeyLimiter>,
    /// When `last_used_at` was last written to the store (Unix ms; 0: never).
    pub last_touch: std::sync::atomic::AtomicI64,
    /// When it was read from the store (the cache's time-to-live counts from here).
    pub filled: std::time::Instant,
}

impl CachedKey {
    /// Whether `last_used_at` is due to be written at `now` (at most once a minute per key), and
    /// if so marks it written.
    pub fn touch_due(&self, now: i64) -> bool {
        use std::sync::atomic::Ordering;
        let last = self.last_touch.load(Ordering::Relaxed);
        now - last >= 60_000
            && self
                .last_touch
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

#[derive(Default)]
pub struct KeyCache {
    inner: RwLock<Inner>,
    /// Entries older than this are read again from the store (`None`: kept until invalidated).
    /// Replicas set it: it bounds how long a lost revocation message can go unnoticed.
    ttl: Option<Duration>,
}

#[derive(Default)]
struct Inner {
    generation: u64,
    by_hash: HashMap<[u8; 32], Arc<CachedKey>>,
}

impl KeyCache {
    pub fn with_ttl(ttl: Option<Duration>) -> KeyCache {
        KeyCache {
            ttl,
            ..KeyCache::default()
        }
    }

    /// The cached entry, unless it outlived the time-to-live (the next fill replaces it).
    pub fn get(&self, hash: &[u8; 32]) -> Option<Arc<CachedKey>> {
        let hit = self.read().by_hash.get(hash).cloned()?;
        match self.ttl {
            Some(ttl) if hit.filled.elapsed() >= ttl => None,
            _ => Some(hit),
        }
    }

    /// Read before looking the key up in the store; pass to [`KeyCache::fill`].
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// Caches `entry` unless the cache was invalidated since `generation` was read, and returns
    /// the entry to use: the one already cached if a concurrent lookup of the same key filled
    /// first (so concurrent first requests share one rate limiter), else `entry`.
    pub fn fill(&self, generation: u64, hash: [u8; 32], entry: Arc<CachedKey>) -> Arc<CachedKey> {
        let mut inner = self.write();
        if inner.generation != generation {
            return entry;
        }
        let slot = inner.by_hash.entry(hash).or_insert_with(|| entry.clone());
        if let Some(ttl) = self.ttl
            && slot.filled.elapsed() >= ttl
        {
            *slot = entry;
        }
        slot.clone()
    }

    /// Removes every entry `matches` selects, and refuses fills that started before this call.
    pub fn invalidate(&self, matches: impl Fn(&Principal) -> bool) {
        let mut inner = self.write();
        inner.generation += 1;
        inner.by_hash.retain(|_, e| !matches(&e.principal));
    }

    pub fn len(&self) -> usize {
        self.read().by_hash.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Role;

    fn entry(key: &str) -> Arc<CachedKey> {
        Arc::new(CachedKey {
            principal: Arc::new(Principal::bare(key, "t", Role::Member)),
            limiter: None,
            last_touch: Default::default(),
            filled: std::time::Instant::now(),
        })
    }

    #[test]
    fn a_fill_that_raced_an_invalidation_is_refused() {
        let c = KeyCache::default();
        let g = c.generation();
        // The lookup read the store (key active); meanwhile the key is revoked and invalidated.
        c.invalidate(|p| p.key_id == "k1");
        c.fill(g, [1; 32], entry("k1"));
        assert!(c.get(&[1; 32]).is_none());
        // A lookup that starts after the invalidation fills normally; a concurrent second fill
        // gets the first one's entry.
        let first = c.fill(c.generation(), [2; 32], entry("k2"));
        let second = c.fill(c.generation(), [2; 32], entry("k2"));
        assert!(Arc::ptr_eq(&first, &second));
        assert!(c.get(&[2; 32]).is_some());
        c.invalidate(|p| p.team_id == "t");
        assert!(c.is_empty());
    }

    #[test]
    fn entries_past_the_ttl_are_read_again() {
        let c = KeyCache::with_ttl(Some(Duration::ZERO));
        c.fill(c.generation(), [1; 32], entry("k1"));
        assert!(c.get(&[1; 32]).is_none(), "expired at once");
        let again = entry("k1");
        let got = c.fill(c.generation(), [1; 32], again.clone());
        assert!(
            Arc::ptr_eq(&got, &again),
            "a stale entry is replaced by the fill"
        );
        let forever = KeyCache::with_ttl(None);
        forever.fill(forever.generation(), [2; 32], entry("k2"));
        assert!(forever.get(&[2; 32]).is_some());
    }
}

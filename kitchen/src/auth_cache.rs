//! Short-lived caches of authentication lookups: an API token's caller by
//! the token's hash, and an identity provider's subject's tenant.
//!
//! Every request authenticates, and a replay is otherwise one indexed read:
//! without the cache, the lookup would double a replay's database work. The
//! price is staleness: a token revoked (or a subject unmapped) on another
//! instance keeps working there for at most the TTL (on this instance a
//! revoke or an unmap clears the cache at once). A TTL of zero turns the
//! cache off.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries kept at most; past it the cache is cleared (a crude but bounded
/// policy: the working set of live tokens is small).
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
pub(crate) struct AuthCache<V> {
    ttl: Duration,
    entries: Mutex<HashMap<Vec<u8>, (V, Instant)>>,
}

impl<V: Clone> AuthCache<V> {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The cached value for a lookup key (a hash), if fresh.
    pub(crate) fn get(&self, key: &[u8]) -> Option<V> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(value, _)| value.clone())
    }

    /// Remembers a successful lookup. Failed lookups are not cached, so a
    /// newly issued token (or mapped subject) works at once.
    pub(crate) fn put(&self, key: Vec<u8>, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(key, (value, Instant::now()));
        }
    }

    /// Forgets everything (after a revoke or an unmap).
    pub(crate) fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
    }
}

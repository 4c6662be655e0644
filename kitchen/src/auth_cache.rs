//! A short-lived cache of token → caller lookups.
//!
//! Every request authenticates, and a replay is otherwise one indexed read:
//! without the cache, the token lookup would double a replay's database
//! work. The price is staleness: a token revoked on another instance keeps
//! working there for at most the TTL (on this instance a revoke clears the
//! cache at once). A TTL of zero turns the cache off.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::Caller;

/// Entries kept at most; past it the cache is cleared (a crude but bounded
/// policy: the working set of live tokens is small).
const MAX_ENTRIES: usize = 10_000;

#[derive(Debug)]
pub(crate) struct AuthCache {
    ttl: Duration,
    entries: Mutex<HashMap<Vec<u8>, (Caller, Instant)>>,
}

impl AuthCache {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The cached tenant for a token hash, if fresh.
    pub(crate) fn get(&self, hash: &[u8]) -> Option<Caller> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        entries
            .get(hash)
            .filter(|(_, at)| at.elapsed() < self.ttl)
            .map(|(tenant, _)| tenant.clone())
    }

    /// Remembers a successful lookup. Failed lookups are not cached, so a
    /// newly issued token works at once.
    pub(crate) fn put(&self, hash: Vec<u8>, caller: Caller) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(hash, (caller, Instant::now()));
        }
    }

    /// Forgets everything (after a revoke).
    pub(crate) fn clear(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.clear();
        }
    }
}

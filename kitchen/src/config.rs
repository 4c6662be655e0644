//! Kitchen settings.

use std::time::Duration;

use crate::provider::TicketBackend;

/// How long operation records are kept by default: 30 days.
pub const DEFAULT_RETENTION: time::Duration = time::Duration::days(30);

/// How long a create waits for a concurrent attempt by default: 5 seconds.
pub const DEFAULT_WAIT_BOUND: Duration = Duration::from_secs(5);

/// How long a token lookup is reused by default: 2 seconds.
pub const DEFAULT_AUTH_CACHE_TTL: Duration = Duration::from_secs(2);

/// Settings of a [`Kitchen`](crate::Kitchen).
#[derive(Debug, Clone)]
pub struct KitchenConfig {
    /// How long a create waits for another attempt that holds the same key
    /// (on SQLite: the database's write lock) before answering
    /// [`Outcome::InProgress`](crate::Outcome::InProgress).
    pub wait_bound: Duration,
    /// How long an operation record (and so its protection against
    /// duplicates) is kept; sets each record's `retained_until`.
    pub retention: time::Duration,
    /// Most database connections the pool opens.
    pub max_connections: u32,
    /// How long a successful token lookup is reused. A token revoked on
    /// another instance keeps working there this long; zero disables.
    pub auth_cache_ttl: Duration,
    /// Where tickets are made: locally (the default) or in a provider.
    pub backend: TicketBackend,
}

impl Default for KitchenConfig {
    fn default() -> Self {
        Self {
            wait_bound: DEFAULT_WAIT_BOUND,
            retention: DEFAULT_RETENTION,
            max_connections: 10,
            auth_cache_ttl: DEFAULT_AUTH_CACHE_TTL,
            backend: TicketBackend::Local,
        }
    }
}

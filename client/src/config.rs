//! The client's settings, with the defaults a careful caller would pick.

use std::sync::Arc;
use std::time::Duration;

use crate::journal::{Journal, MemoryJournal};
use crate::policy::Bounds;

/// How the client calls the service and how hard it tries.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// How long one HTTP request may take before its outcome counts as
    /// unknown (a write is then reconciled). Set it to the service's p95
    /// latency plus a buffer: much shorter, and writes that would have
    /// succeeded are reconciled for nothing; much longer, and a lost
    /// answer is noticed late. Default 10 s.
    pub call_timeout: Duration,
    /// Where intents are written down before their first attempt. Default:
    /// in memory ([`MemoryJournal`]); use `SqliteJournal` (feature
    /// `sqlite-journal`, on by default) to survive a crash.
    pub journal: Arc<dyn Journal>,
    /// Most re-sends after transient answers (no connection, 502, 503,
    /// 504, 409 in progress, …) for one call. Default 3.
    pub max_transient_retries: u32,
    /// Longest single wait, whatever `Retry-After` advises. Default 10 s.
    pub max_wait: Duration,
    /// The first wait when no `Retry-After` advises one (a refused
    /// connection, a lookup that failed); doubled on each try, up to
    /// `max_wait`. Default 250 ms.
    pub retry_delay: Duration,
    /// How long one reconciliation keeps looking a key up while the answer
    /// is unsettled (the remote backend's `unknown`) or the lookup itself
    /// fails (the server restarting), before the call answers
    /// `Unresolved`. Default 30 s.
    pub reconcile_within: Duration,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(10),
            journal: Arc::new(MemoryJournal::new()),
            max_transient_retries: 3,
            max_wait: Duration::from_secs(10),
            retry_delay: Duration::from_millis(250),
            reconcile_within: Duration::from_secs(30),
        }
    }
}

impl ClientConfig {
    /// The policy's bounds, or what is wrong with the settings.
    pub(crate) fn bounds(&self) -> Result<Bounds, String> {
        if self.call_timeout.is_zero() {
            return Err("call_timeout must be more than zero".into());
        }
        if self.retry_delay.is_zero() {
            return Err("retry_delay must be more than zero (it is the backoff's start)".into());
        }
        if self.max_wait < self.retry_delay {
            return Err(format!(
                "max_wait ({:?}) must be at least retry_delay ({:?})",
                self.max_wait, self.retry_delay
            ));
        }
        Ok(Bounds {
            max_transient_retries: self.max_transient_retries,
            max_wait: self.max_wait,
            retry_delay: self.retry_delay,
            reconcile_within: self.reconcile_within,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_nonsense_is_named() {
        assert!(ClientConfig::default().bounds().is_ok());
        let zero = ClientConfig {
            call_timeout: Duration::ZERO,
            ..ClientConfig::default()
        };
        assert!(zero.bounds().is_err_and(|e| e.contains("call_timeout")));
        let inverted = ClientConfig {
            max_wait: Duration::from_millis(1),
            ..ClientConfig::default()
        };
        assert!(inverted.bounds().is_err_and(|e| e.contains("max_wait")));
    }
}

//! How a wait is told to a caller: in whole seconds (`Retry-After`,
//! `retry_after_seconds`), never 0, so that "retry in 0 s" never invites a
//! tight loop. Both doors say every wait through this one rule.

use std::time::Duration;

/// `wait` in whole seconds, at least 1.
pub fn whole_seconds(wait: Duration) -> u64 {
    wait.as_secs().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_whole_seconds_and_never_zero() {
        assert_eq!(whole_seconds(Duration::ZERO), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1500)), 1);
        assert_eq!(whole_seconds(Duration::from_secs(5)), 5);
    }
}

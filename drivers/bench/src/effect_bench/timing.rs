//! Every duration the bench uses, in one place, and the seeded schedule of
//! each intent (when it starts, when its caller is interrupted).
//!
//! The durations are the production defaults shrunk so that a cell takes
//! seconds, keeping the orderings the faults depend on: a hang longer than
//! the caller's timeout but shorter than our server's provider timeout,
//! the provider's longest request time above every hang, an interruption
//! well inside a hang, a pause longer than the window it must outlast.
//! The seed moves each intent within ranges that keep those orderings, so
//! the same seed replays the same schedule.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Every caller's per-call timeout (each attempt of (a) to (c); the call
/// timeout of `tickets-client`).
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_millis(1500);

/// Most attempts per call for (a) to (c).
pub(crate) const ATTEMPTS: u32 = 5;

/// The first backoff; it doubles per attempt up to [`BACKOFF_CAP`].
pub(crate) const BACKOFF: Duration = Duration::from_millis(400);

/// The longest pause between attempts (a `Retry-After` is honoured up to it).
pub(crate) const BACKOFF_CAP: Duration = Duration::from_secs(3);

/// How long an outage lasts (row "before dispatch").
pub(crate) const OUTAGE: Duration = Duration::from_millis(1000);

/// How long the backend takes when a caller is interrupted mid-call
/// (cancellation, crash): it commits after this, whatever the caller did.
pub(crate) const SLOW: Duration = Duration::from_millis(1200);

/// How long the backend takes in row "caller timeout": above
/// [`CALL_TIMEOUT`], below [`PROVIDER_TIMEOUT`].
pub(crate) const SLOWER: Duration = Duration::from_millis(2000);

/// The earliest and latest interruption of a call on a slow backend.
pub(crate) const INTERRUPT: (Duration, Duration) =
    (Duration::from_millis(300), Duration::from_millis(500));

/// When a withheld answer's call is interrupted: the caller heard nothing
/// by then.
pub(crate) const WITHHELD_FOR: Duration = Duration::from_millis(300);

/// From an interruption to the caller's next call for the same intent.
pub(crate) const RESUME_AFTER: Duration = Duration::from_millis(200);

/// The provider's dedup window (honour mode), told to our server too.
pub(crate) const PROVIDER_WINDOW: Duration = Duration::from_millis(3000);

/// Our replay window on the server of row "after our replay window"
/// (`--replay-window-secs`; the horizon is rounded up to a whole second).
pub(crate) const REPLAY_WINDOW_SECS: u64 = 2;

/// From an intent's start to its retry after a window: past both windows.
pub(crate) const PAST_WINDOW: Duration = Duration::from_millis(3500);

/// Our server's timeout for one provider call (`PROVIDER_TIMEOUT_MS`).
pub(crate) const PROVIDER_TIMEOUT: Duration = Duration::from_millis(2500);

/// The provider's longest request time (`PROVIDER_MAX_INFLIGHT_MS`): above
/// every hang the simulator is given.
pub(crate) const PROVIDER_MAX_INFLIGHT: Duration = Duration::from_millis(3000);

/// Our server's timeout for one call to Redmine: Redmine serves one
/// request at a time (`tests/redmine/API_NOTES.md`), so a create the
/// fault proxy held for [`SLOWER`] may then wait behind the other
/// intents' (tens of milliseconds each); a second more than the hang.
pub(crate) const REDMINE_PROVIDER_TIMEOUT: Duration = Duration::from_millis(3000);

/// How long after it was sent a request may still land in Redmine
/// (`PROVIDER_MAX_INFLIGHT_MS`): the longest hang, then Redmine's queue.
/// Our server proves a create absent only this long after its dispatch.
pub(crate) const REDMINE_MAX_INFLIGHT: Duration = Duration::from_millis(5000);

/// Our server's background reconciliation interval (`RECONCILE_EVERY_MS`).
pub(crate) const RECONCILE_EVERY: Duration = Duration::from_millis(500);

/// The longest an intent's start is staggered after the cell's.
const STAGGER: Duration = Duration::from_millis(40);

/// The durations above, in milliseconds, by name (for the report).
pub(crate) fn table() -> BTreeMap<&'static str, u64> {
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    BTreeMap::from([
        ("call_timeout", ms(CALL_TIMEOUT)),
        ("backoff_first", ms(BACKOFF)),
        ("backoff_cap", ms(BACKOFF_CAP)),
        ("attempts_per_call_a_to_c", u64::from(ATTEMPTS)),
        ("outage", ms(OUTAGE)),
        ("slow_backend", ms(SLOW)),
        ("slower_than_call_timeout", ms(SLOWER)),
        ("interrupt_earliest", ms(INTERRUPT.0)),
        ("interrupt_latest", ms(INTERRUPT.1)),
        ("withheld_for", ms(WITHHELD_FOR)),
        ("resume_after", ms(RESUME_AFTER)),
        ("provider_dedup_window", ms(PROVIDER_WINDOW)),
        ("replay_window", REPLAY_WINDOW_SECS * 1000),
        ("retry_past_window_at", ms(PAST_WINDOW)),
        ("server_provider_timeout", ms(PROVIDER_TIMEOUT)),
        ("server_provider_max_inflight", ms(PROVIDER_MAX_INFLIGHT)),
        (
            "redmine_server_provider_timeout",
            ms(REDMINE_PROVIDER_TIMEOUT),
        ),
        (
            "redmine_server_provider_max_inflight",
            ms(REDMINE_MAX_INFLIGHT),
        ),
        ("server_reconcile_every", ms(RECONCILE_EVERY)),
    ])
}

/// The retry budget strategies (a) to (c) share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// One attempt's timeout.
    pub(crate) timeout: Duration,
    /// Most attempts per call.
    pub(crate) attempts: u32,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            timeout: CALL_TIMEOUT,
            attempts: ATTEMPTS,
        }
    }
}

impl Budget {
    /// The pause after attempt `attempt` (1-based): `Retry-After` when
    /// given, else the doubling backoff; capped either way.
    pub(crate) fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let doubled = BACKOFF.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        retry_after.unwrap_or(doubled).min(BACKOFF_CAP)
    }
}

/// When one intent starts and, if its row interrupts the caller, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moments {
    /// After the cell's start.
    pub(crate) start: Duration,
    /// After the intent's start, on a slow backend.
    pub(crate) interrupt: Duration,
}

/// The moments of a cell's `intents`, from the run's seed and the cell's
/// place in the matrix: the same cell gets the same schedule whichever
/// other cells run.
pub(crate) fn schedule(seed: u64, row: usize, column: usize, intents: usize) -> Vec<Moments> {
    let cell = u64::try_from(row * 64 + column).unwrap_or(0);
    let mut rng = StdRng::seed_from_u64(seed ^ cell.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let stagger = u64::try_from(STAGGER.as_micros()).unwrap_or(0);
    let (low, high) = (
        u64::try_from(INTERRUPT.0.as_micros()).unwrap_or(0),
        u64::try_from(INTERRUPT.1.as_micros()).unwrap_or(0),
    );
    (0..intents)
        .map(|_| Moments {
            start: Duration::from_micros(rng.random_range(0..=stagger)),
            interrupt: Duration::from_micros(rng.random_range(low..=high)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_orderings_the_faults_need_hold() {
        assert!(SLOWER > CALL_TIMEOUT, "the caller times out first");
        assert!(SLOWER < PROVIDER_TIMEOUT, "our server waits the hang out");
        assert!(PROVIDER_MAX_INFLIGHT > SLOWER && PROVIDER_MAX_INFLIGHT > SLOW);
        assert!(
            REDMINE_PROVIDER_TIMEOUT > SLOWER,
            "our server waits the hang out in front of Redmine too"
        );
        assert!(
            REDMINE_MAX_INFLIGHT > REDMINE_PROVIDER_TIMEOUT,
            "a request may land after our server stopped waiting for it"
        );
        assert!(
            INTERRUPT.1 + RESUME_AFTER < SLOW,
            "resumed while the backend works"
        );
        assert!(PAST_WINDOW > PROVIDER_WINDOW);
        assert!(PAST_WINDOW > Duration::from_secs(REPLAY_WINDOW_SECS + 1));
    }

    #[test]
    fn a_seed_replays_its_schedule_and_another_does_not() {
        let a = schedule(7, 3, 2, 8);
        assert_eq!(a, schedule(7, 3, 2, 8));
        assert_ne!(a, schedule(8, 3, 2, 8));
        assert_ne!(a, schedule(7, 4, 2, 8), "cells differ");
        assert!(
            a.iter()
                .all(|m| m.interrupt >= INTERRUPT.0 && m.interrupt <= INTERRUPT.1)
        );
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let budget = Budget::default();
        assert_eq!(budget.backoff(1, None), BACKOFF);
        assert_eq!(budget.backoff(2, None), BACKOFF * 2);
        assert_eq!(budget.backoff(9, None), BACKOFF_CAP);
        let long = Some(Duration::from_secs(5));
        assert_eq!(budget.backoff(1, long), BACKOFF_CAP);
    }
}

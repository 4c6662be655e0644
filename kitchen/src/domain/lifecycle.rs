//! The lifecycle of an operation key: replayable, then expired (a
//! tombstone), then forgotten.
//!
//! ```text
//! first use ── replay window ──▶ replayable_until ── tombstone ──▶ retained_until
//!   │  same request: the frozen   │  same request: `expired`, the      │  the key is
//!   │  answer, byte for byte      │  resource as it is now             │  free again
//!   │  other request: conflict    │  other request: conflict           │
//! ```
//!
//! The phase is decided from the record's own horizons and the clock, not
//! from whether the sweep has run yet: an answer never depends on when a
//! background job last woke up.

use time::OffsetDateTime;

use super::operation::{OperationRecord, OperationState};

/// Where a key is in its lifecycle at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPhase {
    /// Within the replay window (or not settled yet): a retry replays the
    /// frozen answer.
    Replayable,
    /// Past the replay window, within the tombstone horizon: the frozen
    /// answer is gone, the effect is not. A retry makes nothing new.
    Expired,
    /// Past the tombstone horizon (or a provider provably made nothing and
    /// the replay window is over): nothing is remembered, the key is free.
    Forgotten,
}

impl KeyPhase {
    /// The phase's stable name, as answers show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Replayable => "replayable",
            Self::Expired => "expired",
            Self::Forgotten => "forgotten",
        }
    }
}

/// The two horizons a record gets at its first use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Horizons {
    pub(crate) replay_window: time::Duration,
    pub(crate) tombstone_horizon: time::Duration,
}

impl Horizons {
    /// Builds horizons; a tombstone horizon shorter than the replay window
    /// is raised to it (a record cannot be forgotten while it replays).
    pub(crate) fn new(replay_window: time::Duration, tombstone_horizon: time::Duration) -> Self {
        Self {
            replay_window,
            tombstone_horizon: tombstone_horizon.max(replay_window),
        }
    }

    /// `(replayable_until, retained_until)` for a key first used at
    /// `first_use`, each rounded up to a whole second.
    ///
    /// Why whole seconds: SQLite stores times as RFC 3339 text and the sweep
    /// compares them as text, where "…05Z" sorts after "…05.5Z". With no
    /// fraction in a horizon, a text comparison can only err towards keeping
    /// a record (by under a second), never towards forgetting it early.
    pub(crate) fn for_first_use(
        self,
        first_use: OffsetDateTime,
    ) -> (OffsetDateTime, OffsetDateTime) {
        (
            ceil_to_second(first_use + self.replay_window),
            ceil_to_second(first_use + self.tombstone_horizon),
        )
    }
}

/// `t` rounded up to the next whole second (unchanged if it is one).
pub(crate) fn ceil_to_second(t: OffsetDateTime) -> OffsetDateTime {
    if t.nanosecond() == 0 {
        return t;
    }
    let floor = t.replace_nanosecond(0).unwrap_or(t);
    floor + time::Duration::SECOND
}

/// `t` rounded down to a whole second: the sweep's "now", so that it
/// compares exactly against whole-second horizons on SQLite too.
pub(crate) fn floor_to_second(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(0).unwrap_or(t)
}

impl OperationRecord {
    /// Where this record's key is at `now`.
    ///
    /// An effect still `in_progress` or `unknown` never expires: until it
    /// settles, only the effect ledger can say what a retry should get.
    pub fn phase(&self, now: OffsetDateTime) -> KeyPhase {
        let past_window = self.tombstoned_at.is_some() || now >= self.replayable_until;
        match self.state {
            OperationState::InProgress | OperationState::Unknown => KeyPhase::Replayable,
            // The provider made nothing: once the window is over there is
            // nothing left to protect.
            OperationState::FailedBeforeEffect if past_window => KeyPhase::Forgotten,
            OperationState::FailedBeforeEffect => KeyPhase::Replayable,
            OperationState::Succeeded if now >= self.retained_until => KeyPhase::Forgotten,
            OperationState::Succeeded if past_window => KeyPhase::Expired,
            OperationState::Succeeded => KeyPhase::Replayable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn horizons_round_up_to_whole_seconds() {
        let h = Horizons::new(time::Duration::days(30), time::Duration::days(400));
        let (replay, retain) = h.for_first_use(datetime!(2026-01-01 00:00:00.000_001 UTC));
        assert_eq!(replay, datetime!(2026-01-31 00:00:01 UTC));
        assert_eq!(retain, datetime!(2027-02-05 00:00:01 UTC));
        let (replay, _) = h.for_first_use(datetime!(2026-01-01 00:00:00 UTC));
        assert_eq!(replay, datetime!(2026-01-31 00:00:00 UTC));
    }

    #[test]
    fn a_tombstone_horizon_is_never_shorter_than_the_window() {
        let h = Horizons::new(time::Duration::days(30), time::Duration::days(1));
        let (replay, retain) = h.for_first_use(datetime!(2026-01-01 00:00:00 UTC));
        assert_eq!(replay, retain);
    }
}

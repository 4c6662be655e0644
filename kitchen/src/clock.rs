//! [`Clock`]: where the kitchen reads the time that decides a key's
//! lifecycle (when it was first used, when its replay window ends, when it
//! is forgotten). Tests hold a manual clock and move it on, so that "thirty
//! days later" takes no time at all.
//!
//! Why only the lifecycle reads it: leases and reconciler cadence measure
//! real elapsed time between processes, which a test clock must not stop.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use time::OffsetDateTime;

use crate::domain::ticket::truncate_to_micros;

/// The time source for operation records and the retention sweep.
///
/// [`Clock::system`] (the default) reads the system clock;
/// [`Clock::manual`] returns a clock that stands still until moved.
/// Cheap to clone; clones of a manual clock move together.
#[derive(Clone, Default)]
pub struct Clock(Option<Arc<Mutex<OffsetDateTime>>>);

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self(None)
    }

    /// A clock that shows `start` until [`Clock::advance`] or
    /// [`Clock::set`] moves it.
    pub fn manual(start: OffsetDateTime) -> Self {
        Self(Some(Arc::new(Mutex::new(truncate_to_micros(start)))))
    }

    /// Now, cut to microseconds (what both databases store).
    pub fn now(&self) -> OffsetDateTime {
        match &self.0 {
            None => truncate_to_micros(OffsetDateTime::now_utc()),
            Some(t) => *t.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Moves a manual clock on by `by`; the system clock ignores it.
    pub fn advance(&self, by: time::Duration) {
        if let Some(t) = &self.0 {
            let mut t = t.lock().unwrap_or_else(PoisonError::into_inner);
            *t = truncate_to_micros(*t + by);
        }
    }

    /// Sets a manual clock to `to`; the system clock ignores it.
    pub fn set(&self, to: OffsetDateTime) {
        if let Some(t) = &self.0 {
            *t.lock().unwrap_or_else(PoisonError::into_inner) = truncate_to_micros(to);
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("Clock::system"),
            Some(_) => write!(f, "Clock::manual({})", self.now()),
        }
    }
}

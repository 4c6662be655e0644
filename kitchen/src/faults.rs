//! Fault injection for the double-fire driver (feature `fault-injection`,
//! never in a default build).
//!
//! The hardest window for a retry-safe write is "committed, not yet
//! answered". With this feature, a write (any action) whose operation key
//! starts with
//! [`CRASH_AFTER_COMMIT`] aborts the whole process right after its commit
//! and before any reply: exactly what a crash or an OOM kill at that moment
//! does. The driver then restarts the server and checks that the retry
//! replays the committed ticket.

/// Keys with this prefix crash the process right after their commit.
pub const CRASH_AFTER_COMMIT: &str = "fault:crash-after-commit:";

/// Called right after a create's transaction committed.
pub(crate) fn after_commit(key: &crate::OperationKey) {
    if key.as_str().starts_with(CRASH_AFTER_COMMIT) {
        eprintln!("fault injection: aborting right after the commit of operation {key}");
        std::process::abort();
    }
}

/// Keys with this prefix crash the process right after the provider
/// answered a dispatch (remote backend), before the answer is recorded.
pub const CRASH_AFTER_DISPATCH: &str = "fault:crash-after-dispatch:";

/// Called right after the first dispatch of an effect returned.
pub(crate) fn after_dispatch(key: &crate::OperationKey) {
    if key.as_str().starts_with(CRASH_AFTER_DISPATCH) {
        eprintln!("fault injection: aborting right after dispatching operation {key}");
        std::process::abort();
    }
}

/// Keys with this prefix crash the process after the write-ahead record of
/// their first dispatch committed and before anything was sent (remote
/// backend): a failure before dispatch.
pub const CRASH_BEFORE_DISPATCH: &str = "fault:crash-before-dispatch:";

/// Called after the write-ahead record committed, before the first dispatch.
pub(crate) fn before_dispatch(key: &crate::OperationKey) {
    if key.as_str().starts_with(CRASH_BEFORE_DISPATCH) {
        eprintln!("fault injection: aborting before dispatching operation {key}");
        std::process::abort();
    }
}

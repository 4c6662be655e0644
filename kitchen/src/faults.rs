//! Fault injection for the double-fire driver: hooks that abort the whole
//! process at the moments a retry-safe write finds hardest, armed only by
//! the `tickets-fault-injection` binary (see [`arm`]).
//!
//! The hardest window for a retry-safe write is "committed, not yet
//! answered". Once armed, a write (any action) whose operation key starts
//! with [`CRASH_AFTER_COMMIT`] aborts the whole process right after its
//! commit and before any reply: exactly what a crash or an OOM kill at that
//! moment does. The driver then restarts the server and checks that the
//! retry replays the committed ticket.
//!
//! The hooks are compiled into every build and unarmed in all but that
//! binary, whose `main` arms them before anything else runs: no setting,
//! variable or request can arm them in `tickets`. (A cargo feature would
//! keep them out of the code entirely, at the price of compiling every
//! crate above the kitchen twice in each CI run.)

use std::sync::atomic::{AtomicBool, Ordering};

static ARMED: AtomicBool = AtomicBool::new(false);

/// Arms the hooks for the rest of the process. Only the
/// `tickets-fault-injection` binary calls this; never deploy it.
pub fn arm() {
    ARMED.store(true, Ordering::Relaxed);
}

/// Whether [`arm`] was called in this process.
pub fn armed() -> bool {
    ARMED.load(Ordering::Relaxed)
}

/// Whether the hook for keys starting with `prefix` fires for `key`.
fn fires(key: &crate::OperationKey, prefix: &str) -> bool {
    armed() && key.as_str().starts_with(prefix)
}

/// Keys with this prefix crash the process right after their commit.
pub const CRASH_AFTER_COMMIT: &str = "fault:crash-after-commit:";

/// Called right after a create's transaction committed.
pub(crate) fn after_commit(key: &crate::OperationKey) {
    if fires(key, CRASH_AFTER_COMMIT) {
        eprintln!("fault injection: aborting right after the commit of operation {key}");
        std::process::abort();
    }
}

/// Keys with this prefix crash the process right after the provider
/// answered a dispatch (remote backend), before the answer is recorded.
pub const CRASH_AFTER_DISPATCH: &str = "fault:crash-after-dispatch:";

/// Called right after the first dispatch of an effect returned.
pub(crate) fn after_dispatch(key: &crate::OperationKey) {
    if fires(key, CRASH_AFTER_DISPATCH) {
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
    if fires(key, CRASH_BEFORE_DISPATCH) {
        eprintln!("fault injection: aborting before dispatching operation {key}");
        std::process::abort();
    }
}

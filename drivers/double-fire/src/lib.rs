//! The double-fire checks: does a retry ever make a second effect?
//!
//! Every check fires real requests at a running server through both doors,
//! then reads the server's own state to count what really exists: for a
//! create, the list API filtered to a project made up for that check; for
//! the other actions, a ticket made for that check: its `version` and
//! history (`update_ticket`, `transition_ticket`) or its comments and
//! history (`add_comment`), which must agree. Answers alone prove nothing: a
//! lost answer is exactly the case under test.
//!
//! | # | check | what it proves |
//! |---|---|---|
//! | 1 | control | a "retry" with a fresh key duplicates (why keys matter); a keyless write is refused |
//! | 2 | retry-same-key | the retry replays: one ticket, identical result |
//! | 3 | same-key-changed-request | a conflict, still one ticket |
//! | 4 | concurrent-32 | 32 identical calls at once make one ticket |
//! | 5 | response-lost | the fault proxy eats the answer after the commit; the retry replays |
//! | 6 | other-tenant | the same key under another tenant is a separate ticket, no leak |
//! | 7 | cross-door | created on one door, retried on the other: replayed |
//! | 8 | crash-after-commit | the server aborts after commit; after a restart the retry replays |
//! | 9 | two-instances | lost on instance A, retried on B: replayed; 32 calls split over A and B: one ticket |
//!
//! Checks 2, 3, 4, 5, 7 and 8 are one policy each, run for every write
//! action: for `update_ticket` (a new title, with `If-Match` of the version
//! it saw), `transition_ticket` (open to in_progress) and `add_comment` they
//! are checks 18 to 23, named with the action (e.g. `retry-same-key
//! add_comment [mcp]`), on a ticket made for the check. One effect is one
//! new version with its history entry (update, transition) or one comment
//! with its history entry (comment). With a remote ticket backend they run
//! the same (there check 23 crashes right after the dispatch).
//!
//! | # | check | what it proves, for update_ticket, transition_ticket and add_comment |
//! |---|---|---|
//! | 18 | retry-same-key | the retry replays: one effect, identical answer (an update's stale `If-Match` included) |
//! | 19 | same-key-changed-request | a conflict, still one effect |
//! | 20 | concurrent-32 | 32 identical calls at once make one effect |
//! | 21 | response-lost | the fault proxy eats the answer after the commit; the retry replays |
//! | 22 | cross-door | done on one door, retried on the other with the same key: replayed |
//! | 23 | crash-after-commit | the server aborts after the commit; after a restart the retry replays |
//!
//! Check 24 waits out the key's replay window in real time, so it needs a
//! server started with a short one (`--replay-window-secs 3`); against a
//! window longer than a minute it is skipped, saying so. It reads the
//! horizon the first answer advertised (REST `Idempotency-Replayable-Until`,
//! MCP `replayable_until`) and retries just after it:
//!
//! | # | check | what it proves |
//! |---|---|---|
//! | 24 | retry-after-replay-window | past the window the same key and request answer `expired` with the original ticket (REST 200, `Idempotent-Replayed: expired`; MCP `status: "expired"`): still one ticket |
//!
//! With a remote ticket backend and the provider simulator (`--provider-url`),
//! checks 8 and 23 crash right after the dispatch instead of the commit,
//! and checks 10 to 17 inject the provider's faults, for every action
//! (named with the action, e.g. `commit-then-drop add_comment [mcp]`,
//! except a create's). Their ground truth is the simulator's own count: of
//! tickets per title for a create; of change records of the action's kind,
//! or of comments, on the ticket made for the check otherwise. The server's
//! local copy must show the same. Against a real Redmine (`--redmine-url`,
//! with `--provider-url` the fault proxy in front of it) the same faults
//! hit Redmine, and the count is Redmine's: issues by subject, journals by
//! their marker line. Without a simulator they are reported
//! as skipped, one line each, saying what they need.
//!
//! | # | check | what it proves |
//! |---|---|---|
//! | 10 | new-requests-not-deduplicated | two keys are two effects at the provider (two tickets with the same title, two equal comments, an edit or a move and one more) |
//! | 10 | refused-without-provider | for an action the provider has nothing like (`add_label`, `remove_label`): refused (REST `409 not-supported-by-provider`, MCP `not_supported_by_provider`), the same key refused again, the ticket untouched; checks 11 to 17 do not run for it, and 18 to 23 are reported as skipped |
//! | 11 | provider-5xx-before-commit | unknown, then (once absence is provable) made once |
//! | 12 | commit-then-drop / commit-then-500 | unknown, then found by reconciliation: one effect |
//! | 13 | timeout-provider-finishes-later | unknown while the provider works; found after: one effect |
//! | 14 | provider-unreachable | not created (key kept); after the outage the retry makes one |
//! | 15 | provider-rejects | not created (key kept); the next try makes one |
//! | 16 | past-dedup-window | lost, retried after the provider forgot the key: still one effect |
//! | 17 | crash-before-dispatch | the server dies between its write-ahead record and the dispatch; after a restart the retry makes the one effect |
//!
//! # Layout
//!
//! - `actions.rs`: all the driver knows of each write action, in its one
//!   `match` ([`plan`](actions::plan)): the requests a check sends, what it
//!   prepares, where the server shows the effects, how the provider
//!   simulator sees them. A new action is an arm there, and nothing else.
//! - `write.rs`: a request as each door takes it ([`Write`]), data of one
//!   shape for every action; `doors.rs`: sending one through either door
//!   and reading the answer ([`Caller`]).
//! - `checks.rs`: the ground each check makes and how what it saw is
//!   judged; `policies.rs`: checks 1 to 9 and 18 to 23, one function per
//!   policy for any action; `remote.rs` (with `remote_attempts.rs`): checks
//!   10 to 17; `window.rs`: check 24.
//! - `report.rs`: the report; `fault_proxy.rs`: the proxy that loses an
//!   answer after the server produced it.

mod actions;
mod checks;
mod doors;
pub mod fault_proxy;
mod policies;
mod redmine_truth;
mod remote;
mod remote_attempts;
mod report;
mod window;
mod write;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use doors::{Answer, Caller, Door, Reply};
pub use redmine_truth::RedmineTruth;
pub use report::{CheckResult, Report, Totals, Verdict};
pub use write::{Ticket, Write};

use checks::{Checks, Policy, lifecycle};
use kitchen::Action;
use remote::RemoteChecks;

/// The highest check number (`--only` takes 1 to this).
pub const LAST_CHECK: u8 = window::NUMBER;

/// Operation keys with this prefix make the `tickets-fault-injection`
/// server abort right after the commit of any write
/// action (see `kitchen::faults::CRASH_AFTER_COMMIT`; checks 8 and 23 fail
/// if they drift).
pub const CRASH_AFTER_COMMIT: &str = "fault:crash-after-commit:";

/// Operation keys with this prefix make such a server abort right after a
/// dispatch to the ticket provider returned, before its answer is recorded
/// (remote backend; `kitchen::faults::CRASH_AFTER_DISPATCH`).
pub const CRASH_AFTER_DISPATCH: &str = "fault:crash-after-dispatch:";

/// Operation keys with this prefix make such a server abort after the
/// write-ahead record committed and before anything was sent to the
/// provider (`kitchen::faults::CRASH_BEFORE_DISPATCH`; check 17).
pub const CRASH_BEFORE_DISPATCH: &str = "fault:crash-before-dispatch:";

/// The provider simulator behind a server with the remote ticket backend,
/// or a Redmine behind the fault proxy: enables checks 10 to 17.
#[derive(Debug, Clone)]
pub struct ProviderTarget {
    /// The simulator's base URL (its `/_sim` control API and ground truth),
    /// or the fault proxy's in front of a Redmine (`/_sim` control API).
    pub url: String,
    /// Where effects are counted: `None` for the simulator's own counts;
    /// a Redmine, read directly, when `url` is its fault proxy.
    pub redmine: Option<RedmineTruth>,
    /// The dedup window the simulator and the server were both given, when
    /// the simulator honours keys (check 16 waits it out); `None` skips 16.
    pub dedup_window: Option<std::time::Duration>,
    /// How long the hang fault keeps a request open; must exceed the
    /// server's `PROVIDER_TIMEOUT_MS` (check 13).
    pub hang: std::time::Duration,
    /// How long a retrying caller keeps retrying an unknown outcome before
    /// the check gives up on it settling (more than the server's
    /// `PROVIDER_MAX_INFLIGHT_MS`).
    pub settle_within: std::time::Duration,
}

/// Restarts the server under test (checks 8, 17 and 23). The driver calls
/// it after the server crashed, then waits for `/readyz`.
pub trait Restart: Send + Sync {
    /// Starts the server again at the same address.
    fn restart(&self) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send + '_>>;
}

/// The deployment under test.
#[derive(Clone)]
pub struct Target {
    /// Base URL of the server (instance A), e.g. `http://127.0.0.1:8080`.
    pub base_url: String,
    /// A bearer token.
    pub token: String,
    /// A token of another tenant, for check 6.
    pub other_token: Option<String>,
    /// Base URL of a second instance on the same database, for check 9.
    pub second_base_url: Option<String>,
    /// How to restart a crashed server, for checks 8, 17 and 23 (which also
    /// need the `tickets-fault-injection` server).
    pub restart: Option<Arc<dyn Restart>>,
    /// The provider simulator, when the server makes tickets remotely.
    pub provider: Option<ProviderTarget>,
}

/// How to run the checks.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// How many times to run the whole set, with fresh keys each time.
    pub repeat: u32,
    /// Sabotage: retries in checks 5, 8, 9, 21, 23 and 24 use a fresh key,
    /// as a client without idempotency would. Those checks must then FAIL:
    /// with a duplicate where the write repeats (a create, a comment), with
    /// a wrong answer where the ticket's state stops the repeat (an edit
    /// answers as new; an update's `If-Match` or the status machine
    /// refuses). The proof that the faults bite and the checks can fail.
    pub fresh_key_retries: bool,
    /// Run only the check with this number (every door and action it has);
    /// `None` runs them all.
    pub only: Option<u8>,
    /// Run only the checks of this write action (for create_ticket also
    /// the checks only a create has: 1, 6, 9, 24); `None` runs every
    /// action's.
    pub action: Option<Action>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            repeat: 1,
            fresh_key_retries: false,
            only: None,
            action: None,
        }
    }
}

/// Runs every check `options.repeat` times against `target`, reporting each
/// result to `observe` as it completes.
pub async fn run(
    target: &Target,
    options: Options,
    mut observe: impl FnMut(&CheckResult),
) -> Report {
    let mut results = Vec::new();
    for round in 0..options.repeat.max(1) {
        let checks = Checks::new(target, options, round);
        for result in checks.all().await {
            observe(&result);
            results.push(result);
        }
    }
    Report::new(results, options.repeat.max(1))
}

impl Checks<'_> {
    /// One round: checks 1 to 9 on both doors, checks 10 to 17 (for every
    /// action) when the server keeps its tickets at a provider, then checks
    /// 18 to 23 (the
    /// policies of 2 to 8 for the other write actions), then check 24 (or
    /// only the check `--only` names).
    async fn all(&self) -> Vec<CheckResult> {
        let mut results = Vec::new();
        let creates = self.wants_action(Action::CreateTicket);
        if creates && self.wants(1) {
            for door in Door::BOTH {
                results.push(self.control(door).await);
            }
        }
        let create = |policy: Policy| creates && self.wants(policy.number(Action::CreateTicket));
        for policy in [
            Policy::RetrySameKey,
            Policy::ChangedRequest,
            Policy::Concurrent,
            Policy::ResponseLost,
        ] {
            if create(policy) {
                results.extend(self.policy(policy, Action::CreateTicket).await);
            }
        }
        if creates && self.wants(6) {
            for door in Door::BOTH {
                results.push(self.other_tenant(door).await);
            }
        }
        for policy in [Policy::CrossDoor, Policy::CrashAfterCommit] {
            if create(policy) {
                results.extend(self.policy(policy, Action::CreateTicket).await);
            }
        }
        if creates && self.wants(9) {
            results.push(self.two_instances().await);
        }
        match &self.target().provider {
            Some(provider) => results.extend(RemoteChecks::new(self, provider).all().await),
            None => results.extend(remote::not_run(self)),
        }
        // Against a provider, an action it has nothing like is refused
        // (check 10 proves it), so it has no effect for these to count:
        // they say so rather than vanish from the report.
        let remote = self.target().provider.is_some();
        for policy in Policy::ALL {
            for action in lifecycle() {
                if !(self.wants_action(action) && self.wants(policy.number(action))) {
                    continue;
                }
                if remote && !kitchen::reaches_provider(action) {
                    results.push(Checks::skip(
                        policy.check(action, "rest+mcp"),
                        "the provider has nothing like this action, so the server refuses it (check 10)",
                    ));
                } else {
                    results.extend(self.policy(policy, action).await);
                }
            }
        }
        if creates && self.wants(window::NUMBER) {
            results.extend(self.after_replay_window().await);
        }
        results
    }
}

//! Strategies (a) to (c): what a caller does after each attempt, and what
//! it remembers about an intent between calls.
//!
//! All three share one retry budget (attempts, backoff, the caller's
//! timeout), so that they differ only in the policy under comparison:
//!
//! - (a) blind: any attempt without a definite answer is retried, every
//!   attempt under a fresh key.
//! - (b) the simple adapter: with a provider that honours keys, one key
//!   per intent, retried like (a); with one that ignores them, a request
//!   that may have left is never sent again (only a failed connection,
//!   which provably sent nothing, is retried), and an intent that may have
//!   been sent is not sent again by a later call either. This is the
//!   strongest simple policy, not a straw man: it never duplicates by its
//!   own doing.
//! - (c) naive: this service with one key per intent, retried as is on
//!   anything not definite (`202`, `409` in progress, `5xx`, a cut, a
//!   timeout), `Retry-After` honoured up to the backoff cap; it never
//!   looks up an operation's status and keeps no journal.
//!
//! What a caller remembers ([`Memory`]) survives a cancelled call and a
//! pause; a crash loses it (there is nowhere it was written down), so the
//! restarted caller begins the intent afresh, under a new key.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::timing::Budget;
use super::wire::{self, Ask, Door, Heard};

/// How a call ended, as its caller understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallEnd {
    /// It happened. `dedup`: the answer said an earlier attempt made it
    /// (replayed, expired).
    Done {
        /// Answered as a duplicate of an earlier attempt.
        dedup: bool,
    },
    /// Refused; nothing made by this call. `dedup`: refused as a reuse of
    /// the key (a conflict).
    Refused {
        /// Refused as a reuse of the key.
        dedup: bool,
    },
    /// Provably nothing was sent (no connection could be made), and the
    /// caller stopped.
    NotSent,
    /// The caller stopped without knowing whether it happened.
    Unresolved,
}

impl CallEnd {
    /// Whether the caller knows whether the effect exists.
    pub(crate) fn resolved(self) -> bool {
        self != CallEnd::Unresolved
    }

    /// Whether the answer claimed the effect already existed.
    pub(crate) fn dedup(self) -> bool {
        matches!(
            self,
            CallEnd::Done { dedup: true } | CallEnd::Refused { dedup: true }
        )
    }
}

/// What a caller of strategies (a) to (c) keeps about one intent.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    /// The intent's key, once chosen ((b) with keys, and (c)).
    key: Option<String>,
    /// (b) without keys: a request for the intent may have left.
    maybe_sent: bool,
}

/// A [`Memory`] shared between an intent's calls.
pub(crate) type Remembered = Arc<Mutex<Memory>>;

fn lock(memory: &Remembered) -> MutexGuard<'_, Memory> {
    memory.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What our likely-duplicate guard told an intent's callers, counted over
/// all of them (the control's second caller and a restarted one
/// included): instrumentation, not something a caller remembers.
#[derive(Debug, Default)]
pub(crate) struct GuardHeard {
    flagged: AtomicU64,
    refused: AtomicU64,
}

impl GuardHeard {
    /// Answers received with `Possible-Duplicate-Of` (`warn`).
    pub(crate) fn flagged(&self) -> u64 {
        self.flagged.load(Ordering::SeqCst)
    }

    /// `409 possible-duplicate` answers received (`confirm`).
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    fn count(&self, heard: &Heard) {
        match heard {
            Heard::Made { flagged: true } => self.flagged.fetch_add(1, Ordering::SeqCst),
            Heard::PossibleDuplicate => self.refused.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
    }
}

/// Strategy (a), (b) or (c), ready to call.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// Which policy.
    pub(crate) policy: Policy,
    /// Where attempts go.
    pub(crate) door: Door,
    /// The shared budget.
    pub(crate) budget: Budget,
    /// The HTTP client (a crash makes a new one).
    pub(crate) http: reqwest::Client,
    /// Where what the guard said to it is counted (the intent's tally).
    pub(crate) heard: Arc<GuardHeard>,
}

/// The policies of strategies (a) to (c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// (a)
    Blind,
    /// (b) with a provider that honours keys.
    NativeKey,
    /// (b) with a provider that ignores them.
    NoRetry,
    /// (c)
    Naive,
}

impl Caller {
    /// One call for `ask`: attempts until a definite answer, the policy
    /// stops, or the budget is spent. It may be dropped at any await (a
    /// cancellation): what it remembers is updated before each send.
    pub(crate) async fn call(&self, memory: &Remembered, ask: &Ask) -> CallEnd {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let key = match self.policy {
                Policy::Blind => Some(uuid::Uuid::now_v7().to_string()),
                Policy::NativeKey | Policy::Naive => Some(
                    lock(memory)
                        .key
                        .get_or_insert_with(|| uuid::Uuid::now_v7().to_string())
                        .clone(),
                ),
                Policy::NoRetry => {
                    let mut memory = lock(memory);
                    if memory.maybe_sent {
                        // It may have been made already, and nothing could
                        // tell a retry from a second ticket.
                        return CallEnd::Unresolved;
                    }
                    memory.maybe_sent = true;
                    None
                }
            };
            let answer = wire::create(
                &self.http,
                &self.door,
                key.as_deref(),
                ask,
                self.budget.timeout,
            )
            .await;
            self.heard.count(&answer);
            let retry_after = match answer {
                Heard::Made { .. } => return CallEnd::Done { dedup: false },
                Heard::Replayed => return CallEnd::Done { dedup: true },
                // "It was made already, under another key": a definite
                // answer that the effect exists (if it is wrong, the
                // caller's intent is lost: a false deduplication).
                Heard::PossibleDuplicate => return CallEnd::Refused { dedup: true },
                Heard::Refused { dedup, .. } => {
                    // A refusal made nothing: the intent may be sent again.
                    lock(memory).maybe_sent = false;
                    return CallEnd::Refused { dedup };
                }
                Heard::NotConnected => {
                    lock(memory).maybe_sent = false;
                    None
                }
                Heard::Pending { retry_after } | Heard::ServerError { retry_after, .. } => {
                    retry_after
                }
                Heard::Cut | Heard::TimedOut => None,
            };
            let retries = match self.policy {
                Policy::Blind | Policy::NativeKey | Policy::Naive => true,
                Policy::NoRetry => answer == Heard::NotConnected,
            };
            if !retries || attempt >= self.budget.attempts {
                return if answer == Heard::NotConnected {
                    CallEnd::NotSent
                } else {
                    CallEnd::Unresolved
                };
            }
            let retry_after = match self.policy {
                // Only (c) reads this service's Retry-After; the provider
                // sends none.
                Policy::Naive => retry_after,
                _ => None,
            };
            tokio::time::sleep(self.budget.backoff(attempt, retry_after)).await;
        }
    }
}

/// A memory for a new intent (or for one a restarted caller begins again).
pub(crate) fn forget() -> Remembered {
    Arc::new(Mutex::new(Memory::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use provider_sim::{self, Fault, FaultRule, KeyPolicy, RunningSim, SimConfig};

    async fn provider(keys: KeyPolicy) -> RunningSim {
        let config = SimConfig {
            keys,
            dedup_window: std::time::Duration::from_secs(60),
        };
        provider_sim::spawn("127.0.0.1:0".parse().expect("an address"), config)
            .await
            .expect("the simulator starts")
    }

    /// Calls `policy` once for a ticket titled `title` whose first create
    /// the provider makes and then drops the connection on; what the
    /// caller concluded, and how many tickets the provider holds.
    async fn lost_answer(sim: &RunningSim, policy: Policy, title: &str) -> (CallEnd, usize) {
        let rule = FaultRule::create(Fault::CommitThenDrop).title_contains(title);
        sim.client().add_fault(&rule).await.expect("a fault");
        let caller = Caller {
            policy,
            door: Door::Provider {
                base: sim.base_url(),
            },
            budget: Budget::default(),
            http: reqwest::Client::new(),
            heard: Arc::default(),
        };
        let ask = Ask {
            project_id: "p".into(),
            title: title.into(),
            description: "d".into(),
            confirm_new: false,
        };
        let end = caller.call(&forget(), &ask).await;
        let counts = sim.client().counts().await.expect("counts");
        (end, counts.tickets_titled(title))
    }

    #[tokio::test]
    async fn a_lost_answer_duplicates_under_blind_retry_only() {
        let weak = provider(KeyPolicy::Ignore).await;
        assert_eq!(
            lost_answer(&weak, Policy::Blind, "blind").await,
            (CallEnd::Done { dedup: false }, 2),
            "blind retry makes it again and believes it made it once"
        );
        assert_eq!(
            lost_answer(&weak, Policy::NoRetry, "adapter").await,
            (CallEnd::Unresolved, 1),
            "the adapter does not retry what may have been made"
        );
        let keyed = provider(KeyPolicy::Honour).await;
        assert_eq!(
            lost_answer(&keyed, Policy::NativeKey, "native").await,
            (CallEnd::Done { dedup: true }, 1),
            "the native key replays"
        );
    }

    #[tokio::test]
    async fn an_intent_that_may_have_been_sent_is_not_sent_again_by_the_adapter() {
        let weak = provider(KeyPolicy::Ignore).await;
        let memory = forget();
        lock(&memory).maybe_sent = true;
        let caller = Caller {
            policy: Policy::NoRetry,
            door: Door::Provider {
                base: weak.base_url(),
            },
            budget: Budget::default(),
            http: reqwest::Client::new(),
            heard: Arc::default(),
        };
        let ask = Ask {
            project_id: "p".into(),
            title: "resumed".into(),
            description: "d".into(),
            confirm_new: false,
        };
        assert_eq!(caller.call(&memory, &ask).await, CallEnd::Unresolved);
        let counts = weak.client().counts().await.expect("counts");
        assert_eq!(counts.creates_received, 0, "nothing sent");
    }
}

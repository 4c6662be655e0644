//! The retry policy, as a state machine with no I/O: given what the last
//! send or status lookup meant, what to do next. The driver runs it; tests
//! walk every path of it without a network.
//!
//! | what came back | what the policy does |
//! |---|---|
//! | done, replayed | finish: `Done` |
//! | expired (`Idempotent-Replayed: expired`) | finish: `Expired` |
//! | permanent (400, 401, 403, 404, 412, 422, a 409 other than in-progress, …) | finish: `Refused`, never sent again |
//! | transient (no connection, 408, 429, 502, 503, 504, 409 in progress) | send again, same key, after `Retry-After` (or the backoff), capped by `max_wait`, at most `max_transient_retries` times; then `Unresolved` |
//! | ambiguous (timeout, reset after sending, empty or malformed body, 500, 202 unknown) | look the key up (after a 202's `Retry-After`) |
//! | lookup: it happened | send again with the same key to fetch its first answer (a replay, which writes nothing) |
//! | lookup: nothing recorded (404), or the provider made nothing | send again, same key, once; a second time: `Unresolved` |
//! | lookup: unsettled, or no usable answer | look again after the backoff, for at most `reconcile_within`; then `Unresolved` |
//! | lookup: refused (401, …) | `Unresolved` |

use std::time::Duration;

use crate::classify::{LookupAnswer, WriteAnswer};
use crate::operation::OperationState;
use crate::problem::Problem;
use crate::settled::LastSeen;

/// The policy's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Most re-sends after transient answers.
    pub(crate) max_transient_retries: u32,
    /// Longest single wait, whatever `Retry-After` says.
    pub(crate) max_wait: Duration,
    /// The first wait when no `Retry-After` advises one; doubled each time.
    pub(crate) retry_delay: Duration,
    /// How long one reconciliation keeps looking.
    pub(crate) reconcile_within: Duration,
}

/// Where a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// A new intent: nothing was sent yet.
    Send,
    /// An intent an earlier run may have sent (resumed from the journal):
    /// look first.
    Look,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Send the write (with the entry's key) after a pause.
    Send { after: Duration },
    /// Look the key up after a pause.
    Look { after: Duration },
    /// Stop.
    Finish(Finish),
}

/// How a run ends (the key is added by the driver).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Finish {
    Done {
        body: serde_json::Value,
        replayed: bool,
    },
    Expired {
        body: serde_json::Value,
    },
    Refused(Problem),
    Unresolved(LastSeen),
}

/// One run of the policy for one intent.
#[derive(Debug)]
pub(crate) struct Policy {
    bounds: Bounds,
    /// Re-sends after transient answers so far.
    transient_retries: u32,
    /// Re-sends that fetched the answer of an effect the lookup found.
    fetches: u32,
    /// Whether the one send after "nothing recorded" was made.
    sent_unrecorded: bool,
    /// When the current reconciliation started.
    looking_since: Option<Duration>,
    /// Lookups in the current reconciliation, for the backoff.
    looks: u32,
}

impl Policy {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            transient_retries: 0,
            fetches: 0,
            sent_unrecorded: false,
            looking_since: None,
            looks: 0,
        }
    }

    /// The first step.
    pub(crate) fn first(&self, start: Start) -> Step {
        match start {
            Start::Send => Step::Send {
                after: Duration::ZERO,
            },
            Start::Look => Step::Look {
                after: Duration::ZERO,
            },
        }
    }

    /// The step after a send answered `answer`, at `now`.
    pub(crate) fn after_send(&mut self, answer: WriteAnswer, now: Duration) -> Step {
        match answer {
            WriteAnswer::Done { body, replayed } => Step::Finish(Finish::Done { body, replayed }),
            WriteAnswer::Expired { body } => Step::Finish(Finish::Expired { body }),
            WriteAnswer::Permanent(problem) => Step::Finish(Finish::Refused(problem)),
            WriteAnswer::Transient { retry_after, seen } => {
                if self.transient_retries >= self.bounds.max_transient_retries {
                    return Step::Finish(Finish::Unresolved(seen));
                }
                self.transient_retries += 1;
                Step::Send {
                    after: self.wait(retry_after, self.transient_retries),
                }
            }
            WriteAnswer::Ambiguous { retry_after, .. } => {
                // A new reconciliation, with its own time bound.
                self.looking_since = Some(now);
                self.looks = 0;
                Step::Look {
                    after: retry_after.map_or(Duration::ZERO, |advised| self.cap(advised)),
                }
            }
        }
    }

    /// The step after a status lookup answered `answer`, at `now`.
    pub(crate) fn after_lookup(&mut self, answer: LookupAnswer, now: Duration) -> Step {
        match answer {
            LookupAnswer::Recorded(status) => {
                // It happened: the same request with the same key answers
                // its first answer and writes nothing. A fetch whose answer
                // is lost again is tried as often as a transient answer.
                if self.fetches > self.bounds.max_transient_retries {
                    return Step::Finish(Finish::Unresolved(LastSeen::Recorded { status }));
                }
                self.fetches += 1;
                self.looking_since = None;
                Step::Send {
                    after: Duration::ZERO,
                }
            }
            LookupAnswer::NotRecorded => self.send_once_more(LastSeen::NotRecorded),
            LookupAnswer::NothingMade { detail } => self.send_once_more(LastSeen::Unsettled {
                state: OperationState::FailedBeforeEffect,
                detail,
            }),
            LookupAnswer::Unsettled { state, detail } => {
                self.look_again(LastSeen::Unsettled { state, detail }, now)
            }
            LookupAnswer::Failed(seen) => self.look_again(seen, now),
            LookupAnswer::Refused(problem) => {
                Step::Finish(Finish::Unresolved(LastSeen::LookupRefused { problem }))
            }
        }
    }

    /// Nothing was made: one more send with the same key, never two (a
    /// second "nothing" after it means something is wrong that retrying
    /// blind will not fix).
    fn send_once_more(&mut self, seen: LastSeen) -> Step {
        if self.sent_unrecorded {
            return Step::Finish(Finish::Unresolved(seen));
        }
        self.sent_unrecorded = true;
        self.looking_since = None;
        Step::Send {
            after: Duration::ZERO,
        }
    }

    /// Not settled yet: look again after the backoff, while the
    /// reconciliation's time lasts (the last look lands on its end).
    fn look_again(&mut self, seen: LastSeen, now: Duration) -> Step {
        let since = *self.looking_since.get_or_insert(now);
        let spent = now.saturating_sub(since);
        if spent >= self.bounds.reconcile_within {
            return Step::Finish(Finish::Unresolved(seen));
        }
        self.looks += 1;
        let left = self.bounds.reconcile_within - spent;
        Step::Look {
            after: self.wait(None, self.looks).min(left),
        }
    }

    /// The wait before try `n` (1, 2, …): the advice if any, else the
    /// doubling backoff, never more than `max_wait`.
    fn wait(&self, advised: Option<Duration>, n: u32) -> Duration {
        let backoff = || {
            let doublings = n.saturating_sub(1).min(16);
            self.bounds.retry_delay.saturating_mul(1 << doublings)
        };
        self.cap(advised.unwrap_or_else(backoff))
    }

    fn cap(&self, wait: Duration) -> Duration {
        wait.min(self.bounds.max_wait)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::operation::OperationStatus;

    const MS: Duration = Duration::from_millis(1);

    fn bounds() -> Bounds {
        Bounds {
            max_transient_retries: 2,
            max_wait: 1000 * MS,
            retry_delay: 100 * MS,
            reconcile_within: 2000 * MS,
        }
    }

    fn problem(status: u16, kind: &str) -> Problem {
        Problem {
            status,
            problem_type: format!("/problems/{kind}"),
            title: String::new(),
            detail: None,
            extensions: serde_json::Map::new(),
        }
    }

    fn done() -> WriteAnswer {
        WriteAnswer::Done {
            body: json!({"id": "t"}),
            replayed: true,
        }
    }

    fn lost() -> WriteAnswer {
        WriteAnswer::Ambiguous {
            retry_after: None,
            seen: LastSeen::NoAnswer {
                may_have_been_sent: true,
                error: "reset".into(),
            },
        }
    }

    fn busy(secs: u64) -> WriteAnswer {
        WriteAnswer::Transient {
            retry_after: Some(Duration::from_secs(secs)),
            seen: LastSeen::Answer {
                status: 409,
                problem: problem(409, "operation-in-progress"),
            },
        }
    }

    fn succeeded() -> LookupAnswer {
        let status: OperationStatus = serde_json::from_value(json!({
            "action": "create_ticket", "key": "k-0000001", "state": "succeeded",
            "phase": "replayable", "fingerprint": "v1:x", "created_at": "2026-11-30T12:00:00Z",
            "replayable_until": "2026-12-30T12:00:00Z", "retained_until": "2028-01-04T12:00:00Z",
            "retry_safe": true, "next_step": "exists"
        }))
        .expect("a status");
        LookupAnswer::Recorded(Box::new(status))
    }

    fn unknown() -> LookupAnswer {
        LookupAnswer::Unsettled {
            state: OperationState::Unknown,
            detail: Some("lost".into()),
        }
    }

    /// Something that happens to a run: an answer, at a time.
    enum Event {
        Sent(WriteAnswer, u64),
        Looked(LookupAnswer, u64),
    }
    use Event::{Looked, Sent};

    fn send(ms: u64) -> Step {
        Step::Send {
            after: Duration::from_millis(ms),
        }
    }

    fn look(ms: u64) -> Step {
        Step::Look {
            after: Duration::from_millis(ms),
        }
    }

    /// Runs `events` from `start`; each step the policy takes must be the
    /// one expected (the first step included).
    fn walk(start: Start, events: Vec<Event>, expected: &[Step]) {
        let mut policy = Policy::new(bounds());
        let mut steps = vec![policy.first(start)];
        for event in events {
            steps.push(match event {
                Sent(answer, at) => policy.after_send(answer, Duration::from_millis(at)),
                Looked(answer, at) => policy.after_lookup(answer, Duration::from_millis(at)),
            });
        }
        assert_eq!(steps, expected);
    }

    #[test]
    fn a_first_answer_that_settles_finishes_at_once() {
        walk(
            Start::Send,
            vec![Sent(done(), 0)],
            &[
                send(0),
                Step::Finish(Finish::Done {
                    body: json!({"id": "t"}),
                    replayed: true,
                }),
            ],
        );
        let refused = problem(422, "idempotency-key-reused");
        walk(
            Start::Send,
            vec![Sent(WriteAnswer::Permanent(refused.clone()), 0)],
            &[send(0), Step::Finish(Finish::Refused(refused))],
        );
        walk(
            Start::Send,
            vec![Sent(WriteAnswer::Expired { body: json!(1) }, 0)],
            &[send(0), Step::Finish(Finish::Expired { body: json!(1) })],
        );
    }

    #[test]
    fn transient_answers_wait_as_advised_capped_and_stop_at_the_bound() {
        let last = match busy(30) {
            WriteAnswer::Transient { seen, .. } => seen,
            _ => unreachable!("a transient answer"),
        };
        walk(
            Start::Send,
            vec![Sent(busy(1), 0), Sent(busy(30), 1000), Sent(busy(30), 2000)],
            &[
                send(0),
                send(1000), // Retry-After: 1
                send(1000), // Retry-After: 30, capped by max_wait
                Step::Finish(Finish::Unresolved(last)),
            ],
        );
        let refused = WriteAnswer::Transient {
            retry_after: None,
            seen: LastSeen::NoAnswer {
                may_have_been_sent: false,
                error: "refused".into(),
            },
        };
        walk(
            Start::Send,
            vec![
                Sent(refused.clone(), 0),
                Sent(refused, 100),
                Sent(done(), 300),
            ],
            &[
                send(0),
                send(100), // no advice: the backoff
                send(200), // doubled
                Step::Finish(Finish::Done {
                    body: json!({"id": "t"}),
                    replayed: true,
                }),
            ],
        );
    }

    #[test]
    fn an_ambiguous_answer_is_looked_up_and_a_found_effect_fetched() {
        walk(
            Start::Send,
            vec![Sent(lost(), 0), Looked(succeeded(), 5), Sent(done(), 6)],
            &[
                send(0),
                look(0),
                send(0),
                Step::Finish(Finish::Done {
                    body: json!({"id": "t"}),
                    replayed: true,
                }),
            ],
        );
    }

    #[test]
    fn nothing_recorded_allows_one_more_send_never_two() {
        walk(
            Start::Send,
            vec![
                Sent(lost(), 0),
                Looked(LookupAnswer::NotRecorded, 1),
                Sent(lost(), 2),
                Looked(LookupAnswer::NotRecorded, 3),
            ],
            &[
                send(0),
                look(0),
                send(0),
                look(0),
                Step::Finish(Finish::Unresolved(LastSeen::NotRecorded)),
            ],
        );
        // The provider made nothing: the same budget.
        walk(
            Start::Look,
            vec![
                Looked(LookupAnswer::NothingMade { detail: None }, 0),
                Sent(lost(), 1),
                Looked(LookupAnswer::NothingMade { detail: None }, 2),
            ],
            &[
                look(0),
                send(0),
                look(0),
                Step::Finish(Finish::Unresolved(LastSeen::Unsettled {
                    state: OperationState::FailedBeforeEffect,
                    detail: None,
                })),
            ],
        );
    }

    #[test]
    fn a_202_waits_as_advised_then_polls_within_the_bound() {
        let unknown_202 = WriteAnswer::Ambiguous {
            retry_after: Some(Duration::from_secs(2)),
            seen: LastSeen::Unsettled {
                state: OperationState::Unknown,
                detail: None,
            },
        };
        walk(
            Start::Send,
            vec![
                Sent(unknown_202, 0),
                Looked(unknown(), 1000),
                Looked(unknown(), 1100),
                Looked(unknown(), 1300),
                Looked(unknown(), 1700),
                Looked(unknown(), 2000),
            ],
            &[
                send(0),
                look(1000), // Retry-After: 2, capped
                look(100),  // then the backoff, doubling
                look(200),
                look(400),
                look(300), // what is left of the 2 s bound, not the 800 ms backoff
                Step::Finish(Finish::Unresolved(LastSeen::Unsettled {
                    state: OperationState::Unknown,
                    detail: Some("lost".into()),
                })),
            ],
        );
    }

    #[test]
    fn a_resumed_intent_looks_first() {
        walk(
            Start::Look,
            vec![Looked(LookupAnswer::NotRecorded, 0), Sent(done(), 1)],
            &[
                look(0),
                send(0),
                Step::Finish(Finish::Done {
                    body: json!({"id": "t"}),
                    replayed: true,
                }),
            ],
        );
    }

    #[test]
    fn a_refused_lookup_is_unresolved() {
        let refused = problem(401, "unauthorized");
        walk(
            Start::Look,
            vec![Looked(LookupAnswer::Refused(refused.clone()), 0)],
            &[
                look(0),
                Step::Finish(Finish::Unresolved(LastSeen::LookupRefused {
                    problem: refused,
                })),
            ],
        );
    }

    #[test]
    fn a_found_effect_whose_answer_keeps_getting_lost_is_unresolved_not_resent_forever() {
        let mut policy = Policy::new(bounds());
        let mut step = policy.first(Start::Send);
        let mut sends = 0;
        for at in 0..100 {
            step = match step {
                Step::Send { .. } => {
                    sends += 1;
                    policy.after_send(lost(), Duration::from_millis(at))
                }
                Step::Look { .. } => policy.after_lookup(succeeded(), Duration::from_millis(at)),
                Step::Finish(_) => break,
            };
        }
        assert!(
            matches!(
                step,
                Step::Finish(Finish::Unresolved(LastSeen::Recorded { .. }))
            ),
            "{step:?}"
        );
        // The first send and one fetch per allowed retry, plus one.
        assert_eq!(sends, 1 + bounds().max_transient_retries + 1);
    }
}

//! What one reply means: the one place that sorts answers (and their
//! absence) into what the policy does next. It errs one way only: an
//! answer that does not prove what happened is ambiguous, and reconciled;
//! only a connection never made, or a status that says nothing was done,
//! is safe to send again without looking first.

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::action::{Action, Made};
use crate::network::{Answer, NoAnswer, Reach, Reply};
use crate::operation::{OperationState, OperationStatus};
use crate::problem::Problem;
use crate::resources::{Comment, Ticket};
use crate::settled::LastSeen;

/// What an answer to a write means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum WriteAnswer {
    /// It happened; `body` is the answer (checked to be the action's
    /// result).
    Done {
        body: serde_json::Value,
        replayed: bool,
    },
    /// It happened past the key's replay window; `body` is the resource now.
    Expired { body: serde_json::Value },
    /// Refused on its merits: sending it again would be refused again.
    Permanent(Problem),
    /// Nothing was done by this attempt, and trying again may work: the
    /// same key again after the advised wait.
    Transient {
        retry_after: Option<Duration>,
        seen: LastSeen,
    },
    /// It may or may not have happened: look it up before anything else.
    Ambiguous {
        retry_after: Option<Duration>,
        seen: LastSeen,
    },
}

/// What the status lookup says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LookupAnswer {
    /// It happened.
    Recorded(Box<OperationStatus>),
    /// Recorded, and provably nothing was made (a provider's refusal or
    /// outage): the key is not used up.
    NothingMade { detail: Option<String> },
    /// Nothing recorded for the key (`operation-not-found`).
    NotRecorded,
    /// Recorded but not settled (remote backend): look again later.
    Unsettled {
        state: OperationState,
        detail: Option<String>,
    },
    /// No usable answer: look again later.
    Failed(LastSeen),
    /// The lookup was refused; looking again will not help.
    Refused(Problem),
}

/// What an answer to a read means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadAnswer<T> {
    Found(T),
    NotFound(Problem),
    Refused(Problem),
    Retry {
        retry_after: Option<Duration>,
        seen: LastSeen,
    },
}

/// The body of a `202`: the remote backend's "unknown".
#[derive(Deserialize)]
struct UnknownBody {
    state: OperationState,
    detail: Option<String>,
}

/// Statuses after which nothing was done and a later try may work: a
/// timeout before the request was read, a rate limit, a gateway or a
/// server that could not take it (`503 provider-unavailable` included).
fn is_transient(status: u16) -> bool {
    matches!(status, 408 | 429 | 502 | 503 | 504)
}

/// `body`, when it is the result `action` answers with (a ticket, or a
/// comment): an empty or malformed success proves nothing.
fn result_body(action: Action, body: &[u8]) -> Option<serde_json::Value> {
    let shaped = match action.made() {
        Made::Ticket => serde_json::from_slice::<Ticket>(body).is_ok(),
        Made::Comment => serde_json::from_slice::<Comment>(body).is_ok(),
    };
    shaped.then(|| serde_json::from_slice(body).ok()).flatten()
}

/// What was seen, for an answer that settles nothing.
fn seen_answer(answer: &Answer) -> LastSeen {
    LastSeen::Answer {
        status: answer.status,
        problem: Problem::from_answer(answer.status, &answer.body),
    }
}

/// What was seen, for a request without an answer.
fn seen_nothing(no_answer: &NoAnswer) -> LastSeen {
    LastSeen::NoAnswer {
        may_have_been_sent: no_answer.reach != Reach::NotSent,
        error: no_answer.error.clone(),
    }
}

/// What `reply` to a write of `action` means.
pub(crate) fn write_answer(action: Action, reply: &Reply) -> WriteAnswer {
    let answer = match reply {
        Reply::Answer(answer) => answer,
        Reply::NoAnswer(no_answer) => {
            let seen = seen_nothing(no_answer);
            return match no_answer.reach {
                // No connection: nothing left the client.
                Reach::NotSent => WriteAnswer::Transient {
                    retry_after: None,
                    seen,
                },
                Reach::MaybeSent | Reach::TimedOut => WriteAnswer::Ambiguous {
                    retry_after: None,
                    seen,
                },
            };
        }
    };
    let (status, retry_after) = (answer.status, answer.retry_after);
    match status {
        200 | 201 => match result_body(action, &answer.body) {
            Some(body) => match answer.replayed.as_deref() {
                Some("expired") => WriteAnswer::Expired { body },
                None => WriteAnswer::Done {
                    body,
                    replayed: false,
                },
                Some(_) => WriteAnswer::Done {
                    body,
                    replayed: true,
                },
            },
            None => WriteAnswer::Ambiguous {
                retry_after,
                seen: seen_answer(answer),
            },
        },
        // The remote backend lost the provider's answer: unknown, being
        // reconciled there.
        202 => WriteAnswer::Ambiguous {
            retry_after,
            seen: match serde_json::from_slice::<UnknownBody>(&answer.body) {
                Ok(unknown) => LastSeen::Unsettled {
                    state: unknown.state,
                    detail: unknown.detail,
                },
                Err(_) => seen_answer(answer),
            },
        },
        // Two 409s: another attempt holds the key (wait, same key), or the
        // ticket forbids the move (final). Only the document tells them
        // apart; without one, nothing is proved.
        409 if Problem::document_is(&answer.body, "operation-in-progress") => {
            WriteAnswer::Transient {
                retry_after,
                seen: seen_answer(answer),
            }
        }
        409 => {
            let problem = Problem::from_answer(status, &answer.body);
            if problem.kind().is_some() {
                WriteAnswer::Permanent(problem)
            } else {
                WriteAnswer::Ambiguous {
                    retry_after,
                    seen: seen_answer(answer),
                }
            }
        }
        s if is_transient(s) => WriteAnswer::Transient {
            retry_after,
            seen: seen_answer(answer),
        },
        // 400, 401, 403, 404, 412, 413, 415, 422, …: refused, nothing made.
        400..=499 => WriteAnswer::Permanent(Problem::from_answer(status, &answer.body)),
        // 500 and the rest: it may have happened (the contract says so of
        // its own 500), as may an answer HTTP gives no meaning here.
        _ => WriteAnswer::Ambiguous {
            retry_after,
            seen: seen_answer(answer),
        },
    }
}

/// What `reply` to a status lookup means.
pub(crate) fn lookup_answer(reply: &Reply) -> LookupAnswer {
    let answer = match reply {
        Reply::Answer(answer) => answer,
        Reply::NoAnswer(no_answer) => return LookupAnswer::Failed(seen_nothing(no_answer)),
    };
    match answer.status {
        200 => match serde_json::from_slice::<OperationStatus>(&answer.body) {
            Ok(status) => match status.state {
                OperationState::Succeeded => LookupAnswer::Recorded(Box::new(status)),
                OperationState::FailedBeforeEffect => LookupAnswer::NothingMade {
                    detail: status.detail,
                },
                state @ (OperationState::InProgress | OperationState::Unknown) => {
                    LookupAnswer::Unsettled {
                        state,
                        detail: status.detail,
                    }
                }
            },
            Err(_) => LookupAnswer::Failed(seen_answer(answer)),
        },
        // Only the service's own "nothing recorded" proves it: a bare 404
        // (a proxy's, a wrong base URL) proves nothing about the key.
        404 if Problem::document_is(&answer.body, "operation-not-found") => {
            LookupAnswer::NotRecorded
        }
        s if is_transient(s) || s >= 500 => LookupAnswer::Failed(seen_answer(answer)),
        400..=499 => LookupAnswer::Refused(Problem::from_answer(answer.status, &answer.body)),
        _ => LookupAnswer::Failed(seen_answer(answer)),
    }
}

/// What `reply` to a read of a `T` means.
pub(crate) fn read_answer<T: DeserializeOwned>(reply: &Reply) -> ReadAnswer<T> {
    let answer = match reply {
        Reply::Answer(answer) => answer,
        Reply::NoAnswer(no_answer) => {
            return ReadAnswer::Retry {
                retry_after: None,
                seen: seen_nothing(no_answer),
            };
        }
    };
    let retry = || ReadAnswer::Retry {
        retry_after: answer.retry_after,
        seen: seen_answer(answer),
    };
    match answer.status {
        200 => serde_json::from_slice(&answer.body).map_or_else(|_| retry(), ReadAnswer::Found),
        404 => ReadAnswer::NotFound(Problem::from_answer(404, &answer.body)),
        s if is_transient(s) || s >= 500 => retry(),
        s @ 400..=499 => ReadAnswer::Refused(Problem::from_answer(s, &answer.body)),
        _ => retry(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{
        COMMENT, TICKET, advised, answer, no_answer, problem, replayed, status_body,
    };

    /// The class of a write answer, without its payload.
    fn class(answer: &WriteAnswer) -> String {
        let after = |wait: &Option<Duration>| wait.map_or(String::new(), |w| format!(" {w:?}"));
        match answer {
            WriteAnswer::Done {
                replayed: false, ..
            } => "done".into(),
            WriteAnswer::Done { replayed: true, .. } => "replayed".into(),
            WriteAnswer::Expired { .. } => "expired".into(),
            WriteAnswer::Permanent(p) => {
                format!("permanent {} {}", p.status, p.kind().unwrap_or("-"))
            }
            WriteAnswer::Transient { retry_after, .. } => {
                format!("transient{}", after(retry_after))
            }
            WriteAnswer::Ambiguous { retry_after, .. } => {
                format!("ambiguous{}", after(retry_after))
            }
        }
    }

    /// Every case the issue lists, and the neighbours a careful client
    /// must not confuse with them.
    #[test]
    fn write_answers_are_sorted_as_the_policy_says() {
        use Action::{AddComment, CreateTicket, TransitionTicket, UpdateTicket};
        let p = |status, slug| problem(status, slug);
        let unknown = r#"{"state":"unknown","detail":"lost"}"#;
        let cases = [
            ("created", CreateTicket, answer(201, TICKET), "done"),
            (
                "replayed",
                CreateTicket,
                replayed(201, "true", TICKET),
                "replayed",
            ),
            ("changed", UpdateTicket, answer(200, TICKET), "done"),
            ("comment added", AddComment, answer(201, COMMENT), "done"),
            (
                "expired",
                CreateTicket,
                replayed(200, "expired", TICKET),
                "expired",
            ),
            // Transient and safe: nothing was done by this attempt.
            (
                "refused connection",
                CreateTicket,
                no_answer(Reach::NotSent),
                "transient",
            ),
            ("502", CreateTicket, answer(502, "bad gateway"), "transient"),
            (
                "503 timeout",
                CreateTicket,
                answer(503, &p(503, "timeout")),
                "transient",
            ),
            (
                "503 provider down",
                CreateTicket,
                advised(503, 5, &p(503, "provider-unavailable")),
                "transient 5s",
            ),
            ("504", CreateTicket, answer(504, ""), "transient"),
            (
                "409 in progress",
                CreateTicket,
                advised(409, 1, &p(409, "operation-in-progress")),
                "transient 1s",
            ),
            ("429", CreateTicket, advised(429, 3, ""), "transient 3s"),
            // Permanent: returned, never retried.
            (
                "400",
                CreateTicket,
                answer(400, &p(400, "validation-failed")),
                "permanent 400 validation-failed",
            ),
            (
                "401",
                CreateTicket,
                answer(401, &p(401, "unauthorized")),
                "permanent 401 unauthorized",
            ),
            (
                "403 of a proxy",
                CreateTicket,
                answer(403, "forbidden"),
                "permanent 403 -",
            ),
            (
                "404",
                UpdateTicket,
                answer(404, &p(404, "not-found")),
                "permanent 404 not-found",
            ),
            (
                "412",
                UpdateTicket,
                answer(412, &p(412, "version-mismatch")),
                "permanent 412 version-mismatch",
            ),
            (
                "422 reused",
                CreateTicket,
                answer(422, &p(422, "idempotency-key-reused")),
                "permanent 422 idempotency-key-reused",
            ),
            (
                "422 provider",
                AddComment,
                answer(422, &p(422, "provider-rejected")),
                "permanent 422 provider-rejected",
            ),
            (
                "409 move",
                TransitionTicket,
                answer(409, &p(409, "transition-not-allowed")),
                "permanent 409 transition-not-allowed",
            ),
            (
                "409 not there",
                UpdateTicket,
                answer(409, &p(409, "ticket-not-at-provider")),
                "permanent 409 ticket-not-at-provider",
            ),
            // The likely-duplicate guard refused it (`confirm`): the same
            // content was made under another key. Sending it again under
            // this key would be refused again; the caller decides.
            (
                "409 likely duplicate",
                CreateTicket,
                answer(409, &p(409, "possible-duplicate")),
                "permanent 409 possible-duplicate",
            ),
            // Ambiguous: reconcile before anything else.
            (
                "timeout",
                CreateTicket,
                no_answer(Reach::TimedOut),
                "ambiguous",
            ),
            (
                "reset after sending",
                CreateTicket,
                no_answer(Reach::MaybeSent),
                "ambiguous",
            ),
            ("empty 201", CreateTicket, answer(201, ""), "ambiguous"),
            (
                "malformed 201",
                CreateTicket,
                answer(201, "{\"id\":"),
                "ambiguous",
            ),
            (
                "a comment for a ticket",
                CreateTicket,
                answer(201, COMMENT),
                "ambiguous",
            ),
            (
                "500",
                CreateTicket,
                answer(500, &p(500, "internal")),
                "ambiguous",
            ),
            (
                "202 unknown",
                CreateTicket,
                advised(202, 2, unknown),
                "ambiguous 2s",
            ),
            (
                "409 without a document",
                CreateTicket,
                answer(409, "conflict"),
                "ambiguous",
            ),
            ("204", CreateTicket, answer(204, ""), "ambiguous"),
            ("302", CreateTicket, answer(302, ""), "ambiguous"),
        ];
        for (name, action, reply, expected) in cases {
            assert_eq!(class(&write_answer(action, &reply)), expected, "{name}");
        }
    }

    #[test]
    fn a_202_says_what_the_service_knows() {
        let reply = advised(
            202,
            2,
            r#"{"state":"unknown","detail":"the provider's answer was lost"}"#,
        );
        let WriteAnswer::Ambiguous { seen, .. } = write_answer(Action::CreateTicket, &reply) else {
            panic!("a 202 is ambiguous");
        };
        assert_eq!(
            seen,
            LastSeen::Unsettled {
                state: OperationState::Unknown,
                detail: Some("the provider's answer was lost".into())
            }
        );
    }

    #[test]
    fn lookup_answers_are_sorted_as_the_policy_says() {
        let name = |answer: LookupAnswer| match answer {
            LookupAnswer::Recorded(_) => "recorded",
            LookupAnswer::NothingMade { .. } => "nothing made",
            LookupAnswer::NotRecorded => "not recorded",
            LookupAnswer::Unsettled { .. } => "unsettled",
            LookupAnswer::Failed(_) => "failed",
            LookupAnswer::Refused(_) => "refused",
        };
        let cases = [
            (answer(200, &status_body("succeeded")), "recorded"),
            (
                answer(200, &status_body("failed_before_effect")),
                "nothing made",
            ),
            (answer(200, &status_body("unknown")), "unsettled"),
            (answer(200, &status_body("in_progress")), "unsettled"),
            (answer(200, "{}"), "failed"),
            (
                answer(404, &problem(404, "operation-not-found")),
                "not recorded",
            ),
            // A 404 that is not the service's "nothing recorded" proves nothing.
            (answer(404, "no route"), "refused"),
            (answer(404, &problem(404, "not-found")), "refused"),
            (answer(401, &problem(401, "unauthorized")), "refused"),
            (answer(503, &problem(503, "timeout")), "failed"),
            (answer(500, ""), "failed"),
            (no_answer(Reach::NotSent), "failed"),
            (no_answer(Reach::TimedOut), "failed"),
        ];
        for (reply, expected) in cases {
            assert_eq!(name(lookup_answer(&reply)), expected, "{reply:?}");
        }
    }

    #[test]
    fn read_answers_retry_only_what_may_pass() {
        let name = |answer: ReadAnswer<crate::resources::Ticket>| match answer {
            ReadAnswer::Found(_) => "found",
            ReadAnswer::NotFound(_) => "not found",
            ReadAnswer::Refused(_) => "refused",
            ReadAnswer::Retry { .. } => "retry",
        };
        let cases = [
            (answer(200, TICKET), "found"),
            (answer(200, "[]"), "retry"),
            (answer(404, &problem(404, "not-found")), "not found"),
            (answer(400, &problem(400, "bad-request")), "refused"),
            (answer(503, ""), "retry"),
            (no_answer(Reach::MaybeSent), "retry"),
        ];
        for (reply, expected) in cases {
            assert_eq!(name(read_answer(&reply)), expected, "{reply:?}");
        }
    }
}

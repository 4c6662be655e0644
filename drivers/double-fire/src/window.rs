//! Check 24: a retry after the key's replay window.
//!
//! Past the window the server no longer keeps the first answer, only a
//! tombstone of the key: the same request with the same key must answer
//! `expired` with the original ticket (as it is now) and make nothing new.
//! This is the pause an agent session takes when it resumes days later; the
//! driver reproduces it in real time against a server started with a short
//! window (`--replay-window-secs 3`), reading the horizon the server
//! advertised on the first answer and sleeping past it.

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::checks::{CheckId, Checks, Seen, short};
use super::doors::{Answer, Door, Reply};
use super::report::CheckResult;
use super::write::Ticket;

/// The check's number.
pub(crate) const NUMBER: u8 = 24;

/// The check's name, before the door.
const SLUG: &str = "retry-after-replay-window";

/// The longest the driver waits for a window to end. A deployment with a
/// real window (30 days by default) is not a target for this check: it is
/// skipped, saying how to start a server it can run against.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// Waited past the advertised horizon. The horizon is a whole second and
/// the server compares it with its own clock; the margin absorbs the
/// request's own latency and clock reading, not clock skew between hosts.
const MARGIN: Duration = Duration::from_millis(100);

/// Why a door's check cannot go on to its retry.
enum Stop {
    /// It failed already (the first attempt did not create, or said no
    /// horizon).
    Failed(Box<CheckResult>),
    /// The window ends this far away: too long to wait.
    TooFar(time::Duration),
}

/// One door's first attempt, waiting for its window to end.
struct First {
    door: Door,
    ticket: Ticket,
    key: String,
    reply: Reply,
    horizon: OffsetDateTime,
}

impl Checks<'_> {
    /// Check 24 through each door: created, then retried with the same key
    /// once the advertised replay window is over: `expired`, the same
    /// ticket, still one ticket. The first attempts of both doors go out
    /// together so the run waits for one window, not two.
    pub(super) async fn after_replay_window(&self) -> Vec<CheckResult> {
        // Per door, in door order: its first attempt waiting for the
        // window to end, or its result already.
        let mut doors: Vec<Result<First, CheckResult>> = Vec::new();
        // Said once, from the first door that saw it, so both skips read
        // the same and the summary groups them on one line.
        let mut too_far: Option<String> = None;
        for door in Door::BOTH {
            let ticket = self.ticket("after-window");
            let key = self.key();
            let reply = self.create_reply(door, &key, &ticket).await;
            match self.horizon_of(door, &ticket, &reply).await {
                Ok(horizon) => doors.push(Ok(First {
                    door,
                    ticket,
                    key,
                    reply,
                    horizon,
                })),
                Err(Stop::Failed(result)) => doors.push(Err(*result)),
                Err(Stop::TooFar(away)) => {
                    let why = too_far.get_or_insert_with(|| {
                        format!(
                            "server's replay window is {} s (> {} s); start it with --replay-window-secs 3",
                            away.whole_seconds(),
                            LONGEST_WAIT.as_secs()
                        )
                    });
                    doors.push(Err(Self::skip(check(door), why)));
                }
            }
        }
        let last = doors.iter().flatten().map(|first| first.horizon).max();
        if let Some(last) = last {
            let remaining = last - OffsetDateTime::now_utc();
            let wait = Duration::try_from(remaining).unwrap_or(Duration::ZERO) + MARGIN;
            tokio::time::sleep(wait).await;
        }
        let mut results = Vec::new();
        for door in doors {
            results.push(match door {
                Ok(first) => self.retry_after_window(first).await,
                Err(result) => result,
            });
        }
        results
    }

    /// The horizon the first answer advertised, or why the check cannot go
    /// on: the window is too long to wait out, or the first attempt did not
    /// create or said no horizon.
    async fn horizon_of(
        &self,
        door: Door,
        ticket: &Ticket,
        reply: &Reply,
    ) -> Result<OffsetDateTime, Stop> {
        let fail = async |why: String| Stop::Failed(self.failed(door, ticket, why).await);
        if !matches!(reply.answer, Answer::Created { .. }) {
            return Err(fail(format!("first: {}", short(&reply.answer))).await);
        }
        let Some(advertised) = &reply.replayable_until else {
            return Err(fail(format!(
                "first: {}, but it advertised no replay horizon ({})",
                short(&reply.answer),
                horizon_field(door)
            ))
            .await);
        };
        let horizon = match OffsetDateTime::parse(advertised, &Rfc3339) {
            Ok(t) => t,
            Err(e) => {
                return Err(fail(format!(
                    "{} {advertised:?} is not RFC 3339: {e}",
                    horizon_field(door)
                ))
                .await);
            }
        };
        let away = horizon - OffsetDateTime::now_utc();
        if away > LONGEST_WAIT {
            return Err(Stop::TooFar(away));
        }
        Ok(horizon)
    }

    /// The retry of `first`, its window over: the same key (unless
    /// sabotaging) must answer `expired` with the same ticket and horizon
    /// (and on REST the same `Location`), and one ticket must exist.
    async fn retry_after_window(&self, first: First) -> CheckResult {
        let First {
            door,
            ticket,
            key,
            reply,
            horizon,
        } = first;
        let retry = self
            .create_reply(door, &self.retry_key(&key), &ticket)
            .await;
        let retry_horizon = retry
            .replayable_until
            .as_deref()
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok());
        let expired = matches!(retry.answer, Answer::Expired { .. });
        let same_id = retry.answer.id().is_some() && retry.answer.id() == reply.answer.id();
        let same_horizon = retry_horizon == Some(horizon);
        let same_location = retry.location == reply.location;
        let ok = expired && same_id && same_horizon && same_location;
        let mut detail = format!(
            "first: {} (replayable until {}), retry after it: {}",
            short(&reply.answer),
            kitchen::rfc3339(horizon),
            short(&retry.answer)
        );
        if !same_horizon {
            detail.push_str(&format!(
                "; the retry advertised {} {:?}, not the first answer's",
                horizon_field(door),
                retry.replayable_until
            ));
        }
        if !same_location {
            detail.push_str(&format!(
                "; Location {:?}, first {:?}",
                retry.location, reply.location
            ));
        }
        Self::judge(check(door), self.window_seen(&ticket).await, ok, detail)
    }

    /// The check through `door` failed before its retry, saying `why`.
    async fn failed(&self, door: Door, ticket: &Ticket, why: String) -> Box<CheckResult> {
        Box::new(Self::judge(
            check(door),
            self.window_seen(ticket).await,
            false,
            why,
        ))
    }

    /// The tickets the check's project holds: it intended one.
    async fn window_seen(&self, ticket: &Ticket) -> Result<Seen, String> {
        self.count(ticket).await.map(|effects| Seen {
            effects,
            intended: 1,
        })
    }
}

fn check(door: Door) -> CheckId {
    CheckId::create(NUMBER, format!("{SLUG} [{door}]"))
}

/// Where `door` advertises the horizon, for messages.
fn horizon_field(door: Door) -> &'static str {
    match door {
        Door::Rest => "Idempotency-Replayable-Until",
        Door::Mcp => "replayable_until",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in the module docs is how people read a report: check 24
    /// is listed there under its number and name.
    #[test]
    fn the_check_is_in_the_table() {
        let docs = include_str!("lib.rs");
        let row = format!("//! | {NUMBER} | {SLUG} |");
        assert!(docs.contains(&row), "missing row: {row}");
        assert_eq!(super::super::LAST_CHECK, NUMBER);
    }
}

//! Checks 10 to 17: a server whose tickets are made in a provider (the
//! remote backend), with the provider simulator misbehaving on purpose.
//!
//! The ground truth is the simulator's own count of tickets per title (each
//! check's title is unique), never the server's answers or records. For
//! every intended effect a check asserts: no extra ticket at the provider,
//! none missing once reconciled, and every answer given while the outcome
//! was ambiguous said "unknown" (never success, never a clean failure).

use std::time::{Duration, Instant};

use super::checks::{CheckId, Checks, Seen, short};
use super::doors::{Answer, Door, Ticket};
use super::report::CheckResult;
use super::{CRASH_BEFORE_DISPATCH, ProviderTarget};
use crate::provider_sim::{Fault, FaultRule, SimClient};

/// Pause between a caller's retries of an unknown outcome.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

pub(crate) struct RemoteChecks<'a> {
    checks: &'a Checks<'a>,
    provider: &'a ProviderTarget,
    sim: SimClient,
}

/// The answers of one intended effect: the first, then every retry.
struct Attempts {
    first: Answer,
    retries: Vec<Answer>,
}

impl Attempts {
    fn last(&self) -> &Answer {
        self.retries.last().unwrap_or(&self.first)
    }

    fn settled(&self) -> bool {
        matches!(
            self.last(),
            Answer::Created { .. } | Answer::Replayed { .. }
        )
    }

    /// While not settled, only "unknown" or "in progress" may be said.
    fn honest_meanwhile(&self) -> bool {
        let n = self.retries.len();
        self.retries
            .iter()
            .take(n.saturating_sub(1))
            .all(|a| matches!(a, Answer::Unknown | Answer::InProgress))
    }

    fn describe(&self) -> String {
        let retries: Vec<_> = self.retries.iter().map(short).collect();
        let mut compact: Vec<String> = Vec::new();
        for r in retries {
            match compact.last_mut() {
                Some(last) if last.starts_with(&r) => {
                    let times = last
                        .rsplit_once(" ×")
                        .and_then(|(_, n)| n.parse::<u32>().ok())
                        .unwrap_or(1);
                    *last = format!("{r} ×{}", times + 1);
                }
                _ => compact.push(r),
            }
        }
        format!(
            "first: {}, retries: [{}]",
            short(&self.first),
            compact.join(", ")
        )
    }
}

impl<'a> RemoteChecks<'a> {
    pub(crate) fn new(checks: &'a Checks<'a>, provider: &'a ProviderTarget) -> Self {
        Self {
            checks,
            provider,
            sim: SimClient::new(provider.url.clone()),
        }
    }

    /// Checks 10 to 17 through both doors (those `--only` leaves in).
    pub(crate) async fn all(&self) -> Vec<CheckResult> {
        let wants = |number: u8| self.checks.wants(number);
        let mut results = Vec::new();
        if wants(10) {
            for door in Door::BOTH {
                results.push(self.new_requests(door).await);
            }
        }
        let hang = Fault::Hang {
            ms: u64::try_from(self.provider.hang.as_millis()).unwrap_or(u64::MAX),
        };
        let faults = [
            (11, "provider-5xx-before-commit", Fault::FailBeforeCommit),
            (12, "commit-then-drop", Fault::CommitThenDrop),
            (12, "commit-then-500", Fault::CommitThen500),
            (13, "timeout-provider-finishes-later", hang),
        ];
        for (number, name, fault) in faults {
            if !wants(number) {
                continue;
            }
            for door in Door::BOTH {
                results.push(
                    self.unknown_then_settled(number, name, fault.clone(), door)
                        .await,
                );
            }
        }
        if wants(14) {
            for door in Door::BOTH {
                results.push(self.unreachable(door).await);
            }
        }
        if wants(15) {
            for door in Door::BOTH {
                results.push(self.rejected(door).await);
            }
        }
        if wants(16) {
            for door in Door::BOTH {
                results.push(self.past_dedup_window(door).await);
            }
        }
        if wants(17) {
            for door in Door::BOTH {
                results.push(self.crash_before_dispatch(door).await);
            }
        }
        results
    }

    /// A ticket whose title is unique, so the simulator's faults and counts
    /// can pick it out.
    fn ticket(&self, label: &str) -> Ticket {
        let ticket = self.checks.ticket(label);
        Ticket {
            title: format!("{} {}", ticket.title, ticket.project_id),
            ..ticket
        }
    }

    async fn create(&self, door: Door, key: &str, ticket: &Ticket) -> Answer {
        self.checks.create(door, Some(key), ticket).await
    }

    /// Retries `key` as a patient caller would until the outcome is known
    /// (a ticket) or `settle_within` has passed.
    async fn retry_until_settled(
        &self,
        door: Door,
        key: &str,
        ticket: &Ticket,
        first: Answer,
    ) -> Attempts {
        let mut attempts = Attempts {
            first,
            retries: Vec::new(),
        };
        let deadline = Instant::now() + self.provider.settle_within;
        while !attempts.settled() && Instant::now() < deadline {
            tokio::time::sleep(RETRY_PAUSE).await;
            attempts.retries.push(self.create(door, key, ticket).await);
        }
        attempts
    }

    /// The provider's tickets with this title, and the server's own.
    async fn seen(&self, ticket: &Ticket, intended: usize) -> Result<(Seen, usize), String> {
        let counts = self
            .sim
            .counts()
            .await
            .map_err(|e| format!("cannot read the simulator's counts: {e}"))?;
        let at_provider = counts.tickets_titled(&ticket.title);
        let local = self.checks.count(ticket).await?;
        // The judged tickets are the provider's: the ground truth.
        let effects = (0..at_provider)
            .map(|i| format!("provider ticket {}", i + 1))
            .collect();
        Ok((Seen { effects, intended }, local.len()))
    }

    async fn judge(
        &self,
        number: u8,
        name: String,
        ticket: &Ticket,
        intended: usize,
        ok: bool,
        detail: String,
    ) -> CheckResult {
        let check = CheckId::create(number, name);
        match self.seen(ticket, intended).await {
            Err(e) => Checks::judge(check, Err(e), false, detail),
            Ok((seen, local)) => {
                let mirrored = local == seen.effects.len();
                let detail = if mirrored {
                    detail
                } else {
                    format!(
                        "{detail}; the server lists {local} ticket(s), the provider holds {}",
                        seen.effects.len()
                    )
                };
                Checks::judge(check, Ok(seen), ok && mirrored, detail)
            }
        }
    }

    /// Schedules `fault` for the next create of `ticket` (matched by its
    /// unique project id in the title).
    async fn fault_on(&self, ticket: &Ticket, fault: Fault) -> Result<(), String> {
        self.sim
            .add_fault(&FaultRule::create(fault).title_contains(&ticket.project_id))
            .await
            .map_err(|e| format!("cannot set the fault: {e}"))
    }

    /// Check 10: two keys with the same content are two intended tickets.
    async fn new_requests(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("twice on purpose");
        let first = self.create(door, &self.checks.key(), &ticket).await;
        let second = self.create(door, &self.checks.key(), &ticket).await;
        let ok =
            matches!(first, Answer::Created { .. }) && matches!(second, Answer::Created { .. });
        let detail = format!(
            "first key: {}, second key: {}",
            short(&first),
            short(&second)
        );
        self.judge(
            10,
            format!("new-requests-not-deduplicated [{door}]"),
            &ticket,
            2,
            ok,
            detail,
        )
        .await
    }

    /// Checks 11 to 13: the fault hits the first dispatch; the first answer
    /// must be "unknown", and retries with the same key settle on exactly
    /// one ticket.
    async fn unknown_then_settled(
        &self,
        number: u8,
        name: &str,
        fault: Fault,
        door: Door,
    ) -> CheckResult {
        let name = format!("{name} [{door}]");
        let ticket = self.ticket(&name);
        if let Err(why) = self.fault_on(&ticket, fault).await {
            return broken(number, name, why);
        }
        let key = self.checks.key();
        let first = self.create(door, &key, &ticket).await;
        let retry_key = self.checks.retry_key(&key);
        let attempts = self
            .retry_until_settled(door, &retry_key, &ticket, first)
            .await;
        let ok =
            attempts.first == Answer::Unknown && attempts.settled() && attempts.honest_meanwhile();
        self.judge(number, name, &ticket, 1, ok, attempts.describe())
            .await
    }

    /// Check 14: the provider is down: nothing was made, the key is kept,
    /// and a retry once it is back makes the one ticket.
    async fn unreachable(&self, door: Door) -> CheckResult {
        let name = format!("provider-unreachable [{door}]");
        let ticket = self.ticket(&name);
        let outage = Duration::from_millis(800);
        if let Err(e) = self.sim.outage(outage).await {
            return broken(14, name, format!("cannot start an outage: {e}"));
        }
        let key = self.checks.key();
        let first = self.create(door, &key, &ticket).await;
        tokio::time::sleep(outage + Duration::from_millis(200)).await;
        let attempts = self.retry_until_settled(door, &key, &ticket, first).await;
        let ok = matches!(attempts.first, Answer::NotCreated(_))
            && matches!(attempts.last(), Answer::Created { .. });
        self.judge(14, name, &ticket, 1, ok, attempts.describe())
            .await
    }

    /// Check 15: the provider refuses once: not created, key kept; the next
    /// try with the same key makes the ticket.
    async fn rejected(&self, door: Door) -> CheckResult {
        let name = format!("provider-rejects [{door}]");
        let ticket = self.ticket(&name);
        if let Err(why) = self.fault_on(&ticket, Fault::Reject).await {
            return broken(15, name, why);
        }
        let key = self.checks.key();
        let first = self.create(door, &key, &ticket).await;
        let second = self.create(door, &key, &ticket).await;
        let ok = matches!(first, Answer::NotCreated(_)) && matches!(second, Answer::Created { .. });
        let detail = format!("first: {}, retry: {}", short(&first), short(&second));
        self.judge(15, name, &ticket, 1, ok, detail).await
    }

    /// Check 16: the answer is lost, and the retry comes after the
    /// provider's dedup window: a re-send would duplicate, so only
    /// reconciliation may decide.
    async fn past_dedup_window(&self, door: Door) -> CheckResult {
        let name = format!("past-dedup-window [{door}]");
        let Some(window) = self.provider.dedup_window else {
            return Checks::skip(
                CheckId::create(16, name),
                "needs a simulator that honours keys, and its window (--provider-dedup-window-ms)",
            );
        };
        let ticket = self.ticket(&name);
        if let Err(why) = self.fault_on(&ticket, Fault::CommitThenDrop).await {
            return broken(16, name, why);
        }
        let key = self.checks.key();
        let first = self.create(door, &key, &ticket).await;
        tokio::time::sleep(window + Duration::from_millis(100)).await;
        let retry_key = self.checks.retry_key(&key);
        let attempts = self
            .retry_until_settled(door, &retry_key, &ticket, first)
            .await;
        let ok =
            attempts.first == Answer::Unknown && attempts.settled() && attempts.honest_meanwhile();
        self.judge(16, name, &ticket, 1, ok, attempts.describe())
            .await
    }

    /// Check 17: the server dies after recording the intent and before
    /// sending it; after a restart, retries with the same key make the one
    /// ticket (once the dead worker's lease has run out and the provider
    /// shows nothing).
    async fn crash_before_dispatch(&self, door: Door) -> CheckResult {
        let name = format!("crash-before-dispatch [{door}]");
        let Some(restart) = &self.checks.target().restart else {
            return Checks::skip(
                CheckId::create(17, name),
                "needs a way to restart the server (--restart-cmd) and a fault-injection build",
            );
        };
        let ticket = self.ticket(&name);
        let key = format!("{CRASH_BEFORE_DISPATCH}{}", self.checks.key());
        let crashed = self.create(door, &key, &ticket).await;
        if let Err(e) = restart.restart().await {
            return broken(17, name, format!("restart failed: {e}"));
        }
        if !self.checks.wait_ready().await {
            return broken(17, name, "the server did not come back".into());
        }
        let attempts = self.retry_until_settled(door, &key, &ticket, crashed).await;
        let ok = matches!(attempts.first, Answer::Lost(_))
            && attempts.settled()
            && attempts.honest_meanwhile();
        self.judge(17, name, &ticket, 1, ok, attempts.describe())
            .await
    }
}

/// A check that could not run as designed: it fails, saying why.
fn broken(number: u8, name: String, why: String) -> CheckResult {
    Checks::broken(CheckId::create(number, name), why)
}

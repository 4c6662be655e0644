//! Checks 10 to 17: a server whose tickets are kept in a provider (the
//! remote backend), with the provider simulator misbehaving on purpose,
//! for every write action: a create makes a ticket there, an update or a
//! move a change record, a comment a comment.
//!
//! The ground truth is the simulator's own count (tickets per title, each
//! check's title being unique; for the other actions the change records of
//! that kind, or the comments, on the ticket made for the check), never the
//! server's answers or records; the server's local copy must then show the
//! same. For every intended effect a check asserts: no extra effect at the
//! provider, none missing once reconciled, and every answer given while
//! the outcome was ambiguous said "unknown" (never success, never a clean
//! failure).

use std::time::{Duration, Instant};

use kitchen::Action;

use super::actions::{AtProvider, Counted, Intent, Plan};
use super::checks::{CheckId, Checks, Seen, short};
use super::doors::{Answer, Door};
use super::remote_attempts::Attempts;
use super::report::CheckResult;
use super::write::{Ticket, Write};
use super::{CRASH_BEFORE_DISPATCH, ProviderTarget};
use provider_sim::{Counts, Fault, FaultRule, SimClient};

/// Pause between a caller's retries of an unknown outcome.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

pub(crate) struct RemoteChecks<'a> {
    checks: &'a Checks<'a>,
    provider: &'a ProviderTarget,
    sim: SimClient,
    redmine_http: reqwest::Client,
}

/// One intended effect of one action at the provider: the write, the
/// check's ticket (whose unique project id, in its title, aims the
/// simulator's faults), and for the actions on a ticket its id at the
/// provider (where the ground truth is counted).
struct Aim {
    action: Action,
    name: String,
    intent: Intent,
    ticket: Ticket,
    provider_ticket: Option<String>,
    at_provider: Option<AtProvider>,
}

impl Aim {
    /// Effects of this action the provider holds for the check: tickets
    /// with its title, or change records of its kind (comments) on its
    /// ticket.
    fn at_provider(&self, counts: &Counts) -> usize {
        let on_ticket =
            |count: &dyn Fn(&str) -> usize| self.provider_ticket.as_deref().map_or(0, count);
        match self.at_provider.map(|at| at.counted) {
            None => 0,
            Some(Counted::Tickets) => counts.tickets_titled(&self.ticket.title),
            Some(Counted::Changes(kind)) => on_ticket(&|id| counts.changes_on_ticket(kind, id)),
            Some(Counted::Comments) => on_ticket(&|id| counts.comments_on_ticket(id)),
        }
    }
}

/// Checks 10 to 17 by number and name, for the lines that say they were
/// not run.
const CHECKS: [(u8, &str); 8] = [
    (10, "new-requests-not-deduplicated"),
    (11, "provider-5xx-before-commit"),
    (12, "commit-then-drop, commit-then-500"),
    (13, "timeout-provider-finishes-later"),
    (14, "provider-unreachable"),
    (15, "provider-rejects"),
    (16, "past-dedup-window"),
    (17, "crash-before-dispatch"),
];

/// Without a provider simulator checks 10 to 17 cannot run: one skipped
/// line each (those `--only` leaves in), saying what they need, rather
/// than nothing.
pub(crate) fn not_run(checks: &Checks<'_>) -> Vec<CheckResult> {
    CHECKS
        .into_iter()
        .filter(|(number, _)| checks.wants(*number))
        .map(|(number, name)| {
            Checks::skip(
                CheckId::create(number, format!("{name} (every action)")),
                "needs a server with the remote ticket backend and the provider simulator \
                 (--provider-url)",
            )
        })
        .collect()
}

impl<'a> RemoteChecks<'a> {
    pub(crate) fn new(checks: &'a Checks<'a>, provider: &'a ProviderTarget) -> Self {
        Self {
            checks,
            provider,
            sim: SimClient::new(provider.url.clone()),
            redmine_http: reqwest::Client::new(),
        }
    }

    /// Checks 10 to 17 for every action, through both doors (those
    /// `--only` leaves in).
    pub(crate) async fn all(&self) -> Vec<CheckResult> {
        let mut results = Vec::new();
        for action in Action::ALL {
            if self.checks.wants_action(action) {
                results.extend(self.for_action(action).await);
            }
        }
        results
    }

    async fn for_action(&self, action: Action) -> Vec<CheckResult> {
        let wants = |number: u8| self.checks.wants(number);
        let mut results = Vec::new();
        if !kitchen::reaches_provider(action) {
            if wants(10) {
                for door in Door::BOTH {
                    results.push(self.refused_without_provider(action, door).await);
                }
            }
            return results;
        }
        if wants(10) {
            for door in Door::BOTH {
                results.push(self.new_requests(action, door).await);
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
                    self.unknown_then_settled(action, number, name, fault.clone(), door)
                        .await,
                );
            }
        }
        let checks: [(u8, Check); 4] = [
            (14, Check::Unreachable),
            (15, Check::Rejected),
            (16, Check::PastDedupWindow),
            (17, Check::CrashBeforeDispatch),
        ];
        for (number, check) in checks {
            if !wants(number) {
                continue;
            }
            for door in Door::BOTH {
                results.push(match check {
                    Check::Unreachable => self.unreachable(action, door).await,
                    Check::Rejected => self.rejected(action, door).await,
                    Check::PastDedupWindow => self.past_dedup_window(action, door).await,
                    Check::CrashBeforeDispatch => self.crash_before_dispatch(action, door).await,
                });
            }
        }
        results
    }

    /// The check's name: a create's is the one it has always had; the
    /// other actions' name the action.
    fn name(action: Action, slug: &str, door: Door) -> String {
        match action {
            Action::CreateTicket => format!("{slug} [{door}]"),
            _ => format!("{slug} {action} [{door}]"),
        }
    }

    /// The intended effect of `action` for a check: a ticket whose title is
    /// unique (so the simulator's faults and counts can pick it out), made
    /// by the write for a create, made now for the other actions to act on.
    async fn aim(&self, action: Action, slug: &str, door: Door) -> Result<Aim, String> {
        let name = Self::name(action, slug, door);
        let ticket = self.checks.ticket(&name);
        let ticket = Ticket {
            title: format!("{} {}", ticket.title, ticket.project_id),
            ..ticket
        };
        let Plan {
            intent,
            at_provider,
            ..
        } = self.checks.prepared(action, ticket.clone()).await?;
        let provider_ticket = match intent.subject() {
            None => None,
            Some(subject) => Some(
                self.checks
                    .provider_ticket_id(subject)
                    .await?
                    .ok_or_else(|| format!("ticket {subject} has no id at the provider"))?,
            ),
        };
        Ok(Aim {
            action,
            name,
            intent,
            ticket,
            provider_ticket,
            at_provider,
        })
    }

    async fn write(&self, door: Door, key: &str, write: &Write) -> Answer {
        self.checks.write_on(door, key, write).await
    }

    /// Retries `key` as a patient caller would until the outcome is known
    /// (the effect) or `settle_within` has passed.
    async fn retry_until_settled(
        &self,
        door: Door,
        key: &str,
        write: &Write,
        first: Answer,
    ) -> Attempts {
        let mut attempts = Attempts {
            first,
            retries: Vec::new(),
        };
        let deadline = Instant::now() + self.provider.settle_within;
        while !attempts.settled() && Instant::now() < deadline {
            tokio::time::sleep(RETRY_PAUSE).await;
            attempts.retries.push(self.write(door, key, write).await);
        }
        attempts
    }

    /// What the provider holds for the check, and what the server shows.
    async fn seen(&self, aim: &Aim, intended: usize) -> Result<(Seen, usize), String> {
        let at_provider = match (&self.provider.redmine, aim.at_provider) {
            (_, None) => 0,
            (None, Some(_)) => {
                let counts = self
                    .sim
                    .counts()
                    .await
                    .map_err(|e| format!("cannot read the simulator's counts: {e}"))?;
                aim.at_provider(&counts)
            }
            (Some(redmine), Some(at)) => redmine
                .count(
                    &self.redmine_http,
                    at.counted,
                    &aim.ticket.title,
                    aim.provider_ticket.as_deref(),
                )
                .await
                .map_err(|e| format!("cannot count in Redmine: {e:#}"))?,
        };
        let local = match aim.action {
            Action::CreateTicket => self.checks.count(&aim.ticket).await?.len(),
            _ => self.checks.effects(&aim.intent).await?.len(),
        };
        // The judged effects are the provider's: the ground truth.
        let effects = (0..at_provider)
            .map(|i| format!("provider {} {}", aim.action, i + 1))
            .collect();
        Ok((Seen { effects, intended }, local))
    }

    async fn judge(
        &self,
        number: u8,
        aim: &Aim,
        intended: usize,
        ok: bool,
        detail: String,
    ) -> CheckResult {
        let check = CheckId::of(number, aim.name.clone(), aim.action);
        match self.seen(aim, intended).await {
            Err(e) => Checks::judge(check, Err(e), false, detail),
            Ok((seen, local)) => {
                let mirrored = local == seen.effects.len();
                let detail = if mirrored {
                    detail
                } else {
                    format!(
                        "{detail}; the server shows {local} {} effect(s), the provider holds {}",
                        aim.action,
                        seen.effects.len()
                    )
                };
                Checks::judge(check, Ok(seen), ok && mirrored, detail)
            }
        }
    }

    /// Schedules `fault` for the next request of the aim's kind on its
    /// ticket (matched by the unique project id in the ticket's title).
    async fn fault_on(&self, aim: &Aim, fault: Fault) -> Result<(), String> {
        let Some(on) = aim.at_provider.map(|at| at.request) else {
            return Err(format!("{} never reaches the provider", aim.action));
        };
        self.sim
            .add_fault(&FaultRule::on(on, fault).title_contains(&aim.ticket.project_id))
            .await
            .map_err(|e| format!("cannot set the fault: {e}"))
    }

    /// Check 10: two keys are two intended effects (for a create, even with
    /// the same content).
    async fn new_requests(&self, action: Action, door: Door) -> CheckResult {
        let aim = match self
            .aim(action, "new-requests-not-deduplicated", door)
            .await
        {
            Ok(aim) => aim,
            Err(why) => return broken(10, action, door, "new-requests-not-deduplicated", why),
        };
        let first = self
            .write(door, &self.checks.key(), &aim.intent.write)
            .await;
        let second = self
            .write(door, &self.checks.key(), &aim.intent.another)
            .await;
        let ok =
            matches!(first, Answer::Created { .. }) && matches!(second, Answer::Created { .. });
        let detail = format!(
            "first key: {}, second key: {}",
            short(&first),
            short(&second)
        );
        self.judge(10, &aim, 2, ok, detail).await
    }

    /// Check 10 for an action the provider has nothing like: it is refused
    /// before anything is written, the key is not used up (the same key is
    /// refused the same way again), and the ticket is left as it was.
    async fn refused_without_provider(&self, action: Action, door: Door) -> CheckResult {
        let slug = "refused-without-provider";
        let name = Self::name(action, slug, door);
        let ticket = self.checks.ticket(&name);
        // Nothing is prepared: what the plan prepares would be refused too.
        let intent = match self.checks.plan(action, &ticket).await {
            Ok(plan) => plan.intent,
            Err(why) => return broken(10, action, door, slug, why),
        };
        let Some(ticket_id) = intent.subject() else {
            let why = format!("{action} acts on no ticket, so its refusal leaves nothing to read");
            return broken(10, action, door, slug, why);
        };
        let write = &intent.write;
        let key = self.checks.key();
        let first = self.write(door, &key, write).await;
        let again = self.write(door, &key, write).await;
        let refusal = match door {
            Door::Rest => "409 not-supported-by-provider",
            Door::Mcp => "not_supported_by_provider",
        };
        let refused = |answer: &Answer| *answer == Answer::Refused(refusal.into());
        let version = self.checks.version_of(ticket_id).await;
        let untouched = version == Ok(kitchen::Version::FIRST.get());
        let detail = format!(
            "first: {}, same key again: {}, the ticket's version after: {version:?}",
            short(&first),
            short(&again)
        );
        let seen = Seen {
            effects: Vec::new(),
            intended: 0,
        };
        Checks::judge(
            CheckId::of(10, name, action),
            Ok(seen),
            refused(&first) && refused(&again) && untouched,
            detail,
        )
    }

    /// Checks 11 to 13: the fault hits the first dispatch; the first answer
    /// must be "unknown", and retries with the same key settle on exactly
    /// one effect.
    async fn unknown_then_settled(
        &self,
        action: Action,
        number: u8,
        slug: &str,
        fault: Fault,
        door: Door,
    ) -> CheckResult {
        let aim = match self.aim(action, slug, door).await {
            Ok(aim) => aim,
            Err(why) => return broken(number, action, door, slug, why),
        };
        if let Err(why) = self.fault_on(&aim, fault).await {
            return broken(number, action, door, slug, why);
        }
        let key = self.checks.key();
        let first = self.write(door, &key, &aim.intent.write).await;
        let retry_key = self.checks.retry_key(&key);
        let attempts = self
            .retry_until_settled(door, &retry_key, &aim.intent.write, first)
            .await;
        let ok =
            attempts.first == Answer::Unknown && attempts.settled() && attempts.honest_meanwhile();
        self.judge(number, &aim, 1, ok, attempts.describe()).await
    }

    /// Check 14: the provider is down: nothing was made, the key is kept,
    /// and a retry once it is back makes the one effect.
    async fn unreachable(&self, action: Action, door: Door) -> CheckResult {
        let slug = "provider-unreachable";
        let aim = match self.aim(action, slug, door).await {
            Ok(aim) => aim,
            Err(why) => return broken(14, action, door, slug, why),
        };
        let outage = Duration::from_millis(800);
        if let Err(e) = self.sim.outage(outage).await {
            let why = format!("cannot start an outage: {e}");
            return broken(14, action, door, slug, why);
        }
        let key = self.checks.key();
        let first = self.write(door, &key, &aim.intent.write).await;
        tokio::time::sleep(outage + Duration::from_millis(200)).await;
        let attempts = self
            .retry_until_settled(door, &key, &aim.intent.write, first)
            .await;
        let ok = matches!(attempts.first, Answer::NotCreated(_))
            && matches!(attempts.last(), Answer::Created { .. });
        self.judge(14, &aim, 1, ok, attempts.describe()).await
    }

    /// Check 15: the provider refuses once: not created, key kept; the next
    /// try with the same key makes the effect.
    async fn rejected(&self, action: Action, door: Door) -> CheckResult {
        let slug = "provider-rejects";
        let aim = match self.aim(action, slug, door).await {
            Ok(aim) => aim,
            Err(why) => return broken(15, action, door, slug, why),
        };
        if let Err(why) = self.fault_on(&aim, Fault::Reject).await {
            return broken(15, action, door, slug, why);
        }
        let key = self.checks.key();
        let first = self.write(door, &key, &aim.intent.write).await;
        let second = self.write(door, &key, &aim.intent.write).await;
        let ok = matches!(first, Answer::NotCreated(_)) && matches!(second, Answer::Created { .. });
        let detail = format!("first: {}, retry: {}", short(&first), short(&second));
        self.judge(15, &aim, 1, ok, detail).await
    }

    /// Check 16: the answer is lost, and the retry comes after the
    /// provider's dedup window: a re-send would duplicate, so only
    /// reconciliation may decide.
    async fn past_dedup_window(&self, action: Action, door: Door) -> CheckResult {
        let slug = "past-dedup-window";
        let Some(window) = self.provider.dedup_window else {
            return Checks::skip(
                CheckId::of(16, Self::name(action, slug, door), action),
                "needs a simulator that honours keys, and its window (--provider-dedup-window-ms)",
            );
        };
        let aim = match self.aim(action, slug, door).await {
            Ok(aim) => aim,
            Err(why) => return broken(16, action, door, slug, why),
        };
        if let Err(why) = self.fault_on(&aim, Fault::CommitThenDrop).await {
            return broken(16, action, door, slug, why);
        }
        let key = self.checks.key();
        let first = self.write(door, &key, &aim.intent.write).await;
        tokio::time::sleep(window + Duration::from_millis(100)).await;
        let retry_key = self.checks.retry_key(&key);
        let attempts = self
            .retry_until_settled(door, &retry_key, &aim.intent.write, first)
            .await;
        let ok =
            attempts.first == Answer::Unknown && attempts.settled() && attempts.honest_meanwhile();
        self.judge(16, &aim, 1, ok, attempts.describe()).await
    }

    /// Check 17: the server dies after recording the intent and before
    /// sending it; after a restart, retries with the same key make the one
    /// effect (once the dead worker's lease has run out and the provider
    /// shows nothing).
    async fn crash_before_dispatch(&self, action: Action, door: Door) -> CheckResult {
        let slug = "crash-before-dispatch";
        let Some(restart) = &self.checks.target().restart else {
            return Checks::skip(
                CheckId::of(17, Self::name(action, slug, door), action),
                "needs a way to restart the server (--restart-cmd) and a fault-injection build",
            );
        };
        let aim = match self.aim(action, slug, door).await {
            Ok(aim) => aim,
            Err(why) => return broken(17, action, door, slug, why),
        };
        let key = format!("{CRASH_BEFORE_DISPATCH}{}", self.checks.key());
        let crashed = self.write(door, &key, &aim.intent.write).await;
        if let Err(e) = restart.restart().await {
            return broken(17, action, door, slug, format!("restart failed: {e}"));
        }
        if !self.checks.wait_ready().await {
            let why = "the server did not come back".to_owned();
            return broken(17, action, door, slug, why);
        }
        let attempts = self
            .retry_until_settled(door, &key, &aim.intent.write, crashed)
            .await;
        let ok = matches!(attempts.first, Answer::Lost(_))
            && attempts.settled()
            && attempts.honest_meanwhile();
        self.judge(17, &aim, 1, ok, attempts.describe()).await
    }
}

/// Checks 14 to 17, one function each.
#[derive(Debug, Clone, Copy)]
enum Check {
    Unreachable,
    Rejected,
    PastDedupWindow,
    CrashBeforeDispatch,
}

/// A check that could not run as designed: it fails, saying why.
fn broken(number: u8, action: Action, door: Door, slug: &str, why: String) -> CheckResult {
    let name = RemoteChecks::name(action, slug, door);
    Checks::broken(CheckId::of(number, name, action), why)
}

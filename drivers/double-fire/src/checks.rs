//! The ground checks 1 to 9 and 18 to 23 stand on (check 24 is in
//! `window.rs`): each makes up its own (a project for a create, a fresh
//! ticket for the other actions), so what it reads back from the server
//! holds exactly its own effects; and how what it saw is judged.
//!
//! The policies every write action keeps ([`Policy`]) are each written once,
//! for any action, in `policies.rs`: create_ticket runs them as checks 2, 3,
//! 4, 5, 7 and 8, the lifecycle actions as checks 18 to 23.

use std::sync::atomic::{AtomicU32, Ordering};

use kitchen::Action;

use super::actions::{self, Ground, Intent, Plan, acts_on_a_ticket};
use super::doors::{Answer, Caller, Door, Reply};
use super::report::{CheckResult, Verdict};
use super::write::{Ticket, Write};
use super::{Options, Target};

pub(crate) const RACERS: usize = 32;

/// The actions that change a ticket after its creation (checks 18 to 23):
/// every action but create_ticket, so a new one is checked as soon as
/// its plan is written (`actions.rs`; the compiler points there).
pub(crate) fn lifecycle() -> impl Iterator<Item = Action> {
    Action::ALL
        .into_iter()
        .filter(|action| *action != Action::CreateTicket)
}

/// A promise every write action keeps, checked by one function for any
/// action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// The same key and request twice: one effect, identical answer.
    RetrySameKey,
    /// The same key with another request: a conflict, still one effect.
    ChangedRequest,
    /// 32 identical calls at once: one effect.
    Concurrent,
    /// The answer is lost after the commit; the retry replays.
    ResponseLost,
    /// Done through one door, retried through the other: replayed.
    CrossDoor,
    /// The server dies right after the commit; after a restart the retry
    /// replays.
    CrashAfterCommit,
}

impl Policy {
    /// Every policy, in the order of their numbers.
    pub(crate) const ALL: [Policy; 6] = [
        Policy::RetrySameKey,
        Policy::ChangedRequest,
        Policy::Concurrent,
        Policy::ResponseLost,
        Policy::CrossDoor,
        Policy::CrashAfterCommit,
    ];

    /// The check's number: create_ticket keeps the number its check has
    /// always had; the lifecycle actions share one number per policy.
    pub(crate) fn number(self, action: Action) -> u8 {
        let (create, lifecycle) = match self {
            Policy::RetrySameKey => (2, 18),
            Policy::ChangedRequest => (3, 19),
            Policy::Concurrent => (4, 20),
            Policy::ResponseLost => (5, 21),
            Policy::CrossDoor => (7, 22),
            Policy::CrashAfterCommit => (8, 23),
        };
        // Every action but the create acts on a ticket made for its check.
        if action == Action::CreateTicket {
            create
        } else {
            lifecycle
        }
    }

    fn slug(self) -> String {
        match self {
            Policy::RetrySameKey => "retry-same-key".into(),
            Policy::ChangedRequest => "same-key-changed-request".into(),
            Policy::Concurrent => format!("concurrent-{RACERS}"),
            Policy::ResponseLost => "response-lost".into(),
            Policy::CrossDoor => "cross-door".into(),
            Policy::CrashAfterCommit => "crash-after-commit".into(),
        }
    }

    /// The check of this policy for `action` through `doors` (`rest`,
    /// `rest->mcp`, …). A create's name is the one it has always had.
    pub(crate) fn check(self, action: Action, doors: &str) -> CheckId {
        let name = if action == Action::CreateTicket {
            format!("{} [{doors}]", self.slug())
        } else {
            format!("{} {action} [{doors}]", self.slug())
        };
        CheckId {
            number: self.number(action),
            name,
            action,
        }
    }
}

/// Which check a result belongs to.
pub(crate) struct CheckId {
    number: u8,
    name: String,
    action: Action,
}

impl CheckId {
    /// A check only create_ticket has (1, 6, 9).
    pub(crate) fn create(number: u8, name: String) -> Self {
        Self::of(number, name, Action::CreateTicket)
    }

    /// Check `number` of `action`.
    pub(crate) fn of(number: u8, name: String, action: Action) -> Self {
        Self {
            number,
            name,
            action,
        }
    }
}

/// The harness every check runs in: the deployment, the options, one
/// caller, and the run's unique names.
pub(crate) struct Checks<'a> {
    target: &'a Target,
    options: Options,
    pub(crate) caller: Caller,
    run: String,
    next: AtomicU32,
}

/// What a check saw, before it is judged.
pub(crate) struct Seen {
    pub(crate) effects: Vec<String>,
    pub(crate) intended: usize,
}

impl<'a> Checks<'a> {
    pub(crate) fn new(target: &'a Target, options: Options, round: u32) -> Self {
        // The random tail of a v7 UUID: distinct per run, short enough for a slug.
        let run = format!(
            "{}{round}",
            &uuid::Uuid::now_v7().simple().to_string()[24..]
        );
        Self {
            target,
            options,
            caller: Caller::default(),
            run,
            next: AtomicU32::new(0),
        }
    }

    /// The deployment under test.
    pub(crate) fn target(&self) -> &Target {
        self.target
    }

    /// Waits for the server (instance A) to answer `/readyz` again.
    pub(crate) async fn wait_ready(&self) -> bool {
        self.caller.wait_ready(&self.target.base_url, 100).await
    }

    /// A ticket in a project of its own.
    pub(crate) fn ticket(&self, title: &str) -> Ticket {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Ticket {
            project_id: format!("df-{}-{n}", self.run),
            title: format!("double-fire: {title}"),
        }
    }

    pub(crate) fn key(&self) -> String {
        uuid::Uuid::now_v7().to_string()
    }

    /// Whether this run includes check `number` (all of them unless
    /// `--only` picked one).
    pub(crate) fn wants(&self, number: u8) -> bool {
        self.options.only.is_none_or(|only| only == number)
    }

    /// Whether this run includes the checks of `action` (all of them unless
    /// `--action` picked one).
    pub(crate) fn wants_action(&self, action: Action) -> bool {
        self.options.action.is_none_or(|only| only == action)
    }

    /// The key a retry sends: the same, unless sabotaging.
    pub(crate) fn retry_key(&self, key: &str) -> String {
        if self.options.fresh_key_retries {
            self.key()
        } else {
            key.to_owned()
        }
    }

    pub(crate) async fn create(&self, door: Door, key: Option<&str>, ticket: &Ticket) -> Answer {
        self.caller
            .create(&self.target.base_url, door, &self.target.token, key, ticket)
            .await
    }

    /// Creates `ticket` with `key`, keeping the replay horizon and
    /// `Location` the answer carried.
    pub(crate) async fn create_reply(&self, door: Door, key: &str, ticket: &Ticket) -> Reply {
        self.caller
            .write_reply(
                &self.target.base_url,
                door,
                &self.target.token,
                Some(key),
                &Write::create(ticket),
            )
            .await
    }

    pub(crate) async fn write(&self, door: Door, key: &str, write: &Write) -> Answer {
        self.write_at(&self.target.base_url, door, key, write).await
    }

    /// `write` through `door` with `key`, on instance A.
    pub(crate) async fn write_on(&self, door: Door, key: &str, write: &Write) -> Answer {
        self.write(door, key, write).await
    }

    /// The version of `ticket`, as the server shows it.
    pub(crate) async fn version_of(&self, ticket: &str) -> Result<i64, String> {
        self.caller
            .version(&self.target.base_url, &self.target.token, ticket)
            .await
            .map_err(|e| format!("cannot read the ticket's version: {e}"))
    }

    /// The provider's id of `ticket` (remote backend), as the server shows it.
    pub(crate) async fn provider_ticket_id(&self, ticket: &str) -> Result<Option<String>, String> {
        self.caller
            .provider_ticket_id(&self.target.base_url, &self.target.token, ticket)
            .await
            .map_err(|e| format!("cannot read ticket {ticket}: {e}"))
    }

    pub(crate) async fn write_at(
        &self,
        base: &str,
        door: Door,
        key: &str,
        write: &Write,
    ) -> Answer {
        self.caller
            .write(base, door, &self.target.token, Some(key), write)
            .await
    }

    pub(crate) async fn count(&self, ticket: &Ticket) -> Result<Vec<String>, String> {
        self.caller
            .count(
                &self.target.base_url,
                &self.target.token,
                &ticket.project_id,
            )
            .await
            .map_err(|e| format!("cannot read the server's tickets: {e}"))
    }

    /// A write of `action` on ground of its own: a new project for a
    /// create; for the other actions a ticket made for it now (open, at
    /// version 1), which is not one of the check's effects. Each changed
    /// request, had the key not stopped it, would make a second effect the
    /// ground truth shows.
    pub(crate) async fn intent(&self, action: Action, label: &str) -> Result<Intent, String> {
        self.intent_on(action, self.ticket(label)).await
    }

    /// As [`Checks::intent`], on `ticket`: the ticket a create makes, or the
    /// one made for the other actions to act on, prepared as the action's
    /// plan says.
    pub(crate) async fn intent_on(&self, action: Action, ticket: Ticket) -> Result<Intent, String> {
        self.prepared(action, ticket).await.map(|plan| plan.intent)
    }

    /// The plan of a check of `action` on `ticket`, with the ticket made
    /// for it (for every action but the create) and nothing prepared.
    pub(crate) async fn plan(&self, action: Action, ticket: &Ticket) -> Result<Plan, String> {
        let subject = if acts_on_a_ticket(action) {
            Some(self.subject(action, ticket).await?)
        } else {
            None
        };
        actions::plan(action, ticket, subject.as_deref())
    }

    /// [`Checks::plan`], with what it prepares done (over REST, each with a
    /// key of its own).
    pub(crate) async fn prepared(&self, action: Action, ticket: Ticket) -> Result<Plan, String> {
        let plan = self.plan(action, &ticket).await?;
        for write in &plan.prepare {
            match self.write_on(Door::Rest, &self.key(), write).await {
                Answer::Created { .. } => {}
                other => {
                    return Err(format!(
                        "could not prepare the ticket to {action} on: {}",
                        short(&other)
                    ));
                }
            }
        }
        Ok(plan)
    }

    /// Makes `ticket` (over REST, with a key of its own) for a check of
    /// `action` to work on; its id.
    pub(crate) async fn subject(&self, action: Action, ticket: &Ticket) -> Result<String, String> {
        match self.create(Door::Rest, Some(&self.key()), ticket).await {
            Answer::Created { id, .. } => Ok(id),
            other => Err(format!(
                "could not create the ticket to {action} on: {}",
                short(&other)
            )),
        }
    }

    /// The intent's effects that exist, read from the server.
    pub(crate) async fn effects(&self, intent: &Intent) -> Result<Vec<String>, String> {
        let (base, token) = (&self.target.base_url, &self.target.token);
        let action = intent.write.action();
        let unreadable = |what: &str, e: anyhow::Error| format!("cannot read the {what}: {e}");
        // The history is read for both ticket grounds: each effect is one
        // entry, and the entries must agree with what else the ticket shows.
        let (ticket, other) = match &intent.ground {
            Ground::Project(project) => {
                return self
                    .caller
                    .count(base, token, project)
                    .await
                    .map_err(|e| unreadable("server's tickets", e));
            }
            Ground::Versions { ticket, from } => {
                let version = self
                    .caller
                    .version(base, token, ticket)
                    .await
                    .map_err(|e| unreadable("ticket's version", e))?;
                // Only this action wrote to the ticket since `from`.
                let edits = usize::try_from(version - from).unwrap_or(usize::MAX);
                (ticket, (edits, format!("version {version}")))
            }
            Ground::Comments(ticket) => {
                let comments = self
                    .caller
                    .comments(base, token, ticket)
                    .await
                    .map_err(|e| unreadable("ticket's comments", e))?;
                let n = comments.len();
                (ticket, (n, format!("{n} comment(s)")))
            }
        };
        let entries = self
            .caller
            .history(base, token, ticket, action)
            .await
            .map_err(|e| unreadable("ticket's history", e))?;
        let (expected, shown) = other;
        if entries.len() == expected {
            Ok(entries)
        } else {
            Err(format!(
                "the ticket's history holds {} {action} entries but the ticket shows {shown}",
                entries.len()
            ))
        }
    }

    pub(crate) async fn seen(&self, intent: &Intent, intended: usize) -> Result<Seen, String> {
        self.effects(intent)
            .await
            .map(|effects| Seen { effects, intended })
    }

    /// Judges a check: it passes when `ok` holds and exactly the intended
    /// effects exist.
    pub(crate) fn judge(
        check: CheckId,
        seen: Result<Seen, String>,
        ok: bool,
        detail: String,
    ) -> CheckResult {
        let CheckId {
            number,
            name,
            action,
        } = check;
        match seen {
            Err(e) => CheckResult {
                number,
                name,
                action,
                verdict: Verdict::Fail,
                effects: Vec::new(),
                intended: 0,
                detail: if detail.is_empty() {
                    e
                } else {
                    format!("{detail}; {e}")
                },
            },
            Ok(seen) => {
                let exact = seen.effects.len() == seen.intended;
                let verdict = if ok && exact {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                let detail = if exact {
                    detail
                } else {
                    format!(
                        "{detail}; expected {} effect(s), found {}",
                        seen.intended,
                        seen.effects.len()
                    )
                };
                CheckResult {
                    number,
                    name,
                    action,
                    verdict,
                    effects: seen.effects,
                    intended: seen.intended,
                    detail,
                }
            }
        }
    }

    /// A check that could not run as designed: it fails, saying why.
    pub(crate) fn broken(check: CheckId, why: String) -> CheckResult {
        Self::judge(check, Err(why), false, String::new())
    }

    pub(crate) fn skip(check: CheckId, why: &str) -> CheckResult {
        CheckResult {
            number: check.number,
            name: check.name,
            action: check.action,
            verdict: Verdict::Skip,
            effects: Vec::new(),
            intended: 0,
            detail: why.to_owned(),
        }
    }
}

pub(crate) fn short(answer: &Answer) -> String {
    match answer {
        Answer::Created { id, .. } => format!("created {id}"),
        Answer::Replayed { id, .. } => format!("replayed {id}"),
        Answer::Expired { id, .. } => format!("expired {id}"),
        Answer::Conflict => "conflict".into(),
        Answer::InProgress => "in progress".into(),
        Answer::Unknown => "unknown".into(),
        Answer::NotCreated(why) => format!("not created ({why})"),
        Answer::Refused(why) => format!("refused ({why})"),
        Answer::Lost(_) => "no answer".into(),
    }
}

#[cfg(test)]
mod tests;

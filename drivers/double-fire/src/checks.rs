//! Checks 1 to 9 and 18 to 23 (check 24 is in `window.rs`). Each makes up its own ground (a project for
//! a create, a fresh ticket for the other actions), so what it reads back
//! from the server holds exactly its own effects.
//!
//! The policies every write action keeps ([`Policy`]) are each written once,
//! for any action: create_ticket runs them as checks 2, 3, 4, 5, 7 and 8,
//! the lifecycle actions as checks 18 to 23.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::future::join_all;
use kitchen::{Action, TicketStatus, Version};

use super::doors::{Answer, Caller, Door, Reply, Ticket, Write};
use super::report::{CheckResult, Verdict};
use super::{CRASH_AFTER_COMMIT, CRASH_AFTER_DISPATCH, Options, Target};
use crate::fault_proxy::FaultProxy;

const RACERS: usize = 32;

/// The actions that change a ticket after its creation (checks 18 to 23):
/// every action but create_ticket, so a new one is checked as soon as
/// [`Checks::intent`] knows how to ask for it (the compiler points there).
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

/// One intended effect: the write, another request for the same key, and
/// where the server's state for it is read.
pub(crate) struct Intent {
    pub(crate) write: Write,
    changed: Write,
    ground: Ground,
}

impl Intent {
    /// The ticket made for the check to act on (`None` for a create).
    pub(crate) fn subject(&self) -> Option<&str> {
        match &self.ground {
            Ground::Project(_) => None,
            Ground::Versions { ticket, .. } | Ground::Comments(ticket) => Some(ticket),
        }
    }
}

/// Where a check reads what exists.
enum Ground {
    /// The tickets of a project made up for the check.
    Project(String),
    /// A ticket made for the check: its history entries of the action, one
    /// per version past `from` (the version the check found it at).
    Versions {
        /// The ticket.
        ticket: String,
        /// Its version before the check's first write.
        from: i64,
    },
    /// A ticket made for the check: its comments, one history entry each.
    Comments(String),
}

pub(crate) struct Checks<'a> {
    target: &'a Target,
    options: Options,
    caller: Caller,
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
                &Write::Create(ticket.clone()),
            )
            .await
    }

    async fn write(&self, door: Door, key: &str, write: &Write) -> Answer {
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

    async fn write_at(&self, base: &str, door: Door, key: &str, write: &Write) -> Answer {
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
    async fn intent(&self, action: Action, label: &str) -> Result<Intent, String> {
        self.intent_on(action, self.ticket(label)).await
    }

    /// As [`Checks::intent`], on `ticket`: the ticket a create makes, or the
    /// one made for the other actions to act on.
    pub(crate) async fn intent_on(&self, action: Action, ticket: Ticket) -> Result<Intent, String> {
        let intent = match action {
            Action::CreateTicket => {
                let changed = Ticket {
                    title: format!("{} (changed)", ticket.title),
                    ..ticket.clone()
                };
                Intent {
                    ground: Ground::Project(ticket.project_id.clone()),
                    write: Write::Create(ticket),
                    changed: Write::Create(changed),
                }
            }
            Action::UpdateTicket => {
                let ticket_id = self.subject(action, &ticket).await?;
                let edit = |title: String| Write::Update {
                    ticket_id: ticket_id.clone(),
                    title,
                    // What a careful client sends; its retries must still
                    // replay, though the ticket has moved past that version.
                    expected_version: Some(Version::FIRST.get()),
                };
                Intent {
                    write: edit(format!("{} (edited)", ticket.title)),
                    changed: edit(format!("{} (edited otherwise)", ticket.title)),
                    ground: Ground::Versions {
                        ticket: ticket_id,
                        from: Version::FIRST.get(),
                    },
                }
            }
            Action::TransitionTicket => {
                let ticket_id = self.subject(action, &ticket).await?;
                let to = |status: TicketStatus| Write::Transition {
                    ticket_id: ticket_id.clone(),
                    to: status.as_str().into(),
                    reason: Some(ticket.title.clone()),
                };
                Intent {
                    write: to(TicketStatus::InProgress),
                    changed: to(TicketStatus::Resolved),
                    ground: Ground::Versions {
                        ticket: ticket_id,
                        from: Version::FIRST.get(),
                    },
                }
            }
            Action::AddComment => {
                let ticket_id = self.subject(action, &ticket).await?;
                let comment = |body: String| Write::Comment {
                    ticket_id: ticket_id.clone(),
                    body,
                };
                Intent {
                    write: comment(ticket.title.clone()),
                    changed: comment(format!("{} (changed)", ticket.title)),
                    ground: Ground::Comments(ticket_id),
                }
            }
            Action::AddLabel => {
                let ticket_id = self.subject(action, &ticket).await?;
                let label = |label: &str| Write::AddLabel {
                    ticket_id: ticket_id.clone(),
                    label: label.into(),
                };
                Intent {
                    write: label("double-fire"),
                    changed: label("double-fire-changed"),
                    ground: Ground::Versions {
                        ticket: ticket_id.clone(),
                        from: Version::FIRST.get(),
                    },
                }
            }
            Action::RemoveLabel => {
                // Both labels are on the ticket first (two versions, made
                // with keys of their own), so that either request, had the
                // key not stopped it, would change the ticket once more.
                let ticket_id = self.subject(action, &ticket).await?;
                for label in ["double-fire", "double-fire-changed"] {
                    let add = Write::AddLabel {
                        ticket_id: ticket_id.clone(),
                        label: label.into(),
                    };
                    match self.write_on(Door::Rest, &self.key(), &add).await {
                        Answer::Created { .. } => {}
                        other => {
                            return Err(format!(
                                "could not label the ticket to {action} on: {}",
                                short(&other)
                            ));
                        }
                    }
                }
                let unlabel = |label: &str| Write::RemoveLabel {
                    ticket_id: ticket_id.clone(),
                    label: label.into(),
                };
                Intent {
                    write: unlabel("double-fire"),
                    changed: unlabel("double-fire-changed"),
                    ground: Ground::Versions {
                        ticket: ticket_id.clone(),
                        from: Version::FIRST.get() + 2,
                    },
                }
            }
        };
        Ok(intent)
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

    async fn seen(&self, intent: &Intent, intended: usize) -> Result<Seen, String> {
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

    /// `policy` for `action`, through each door (for cross-door: first
    /// through it, then retried through the other).
    pub(super) async fn policy(&self, policy: Policy, action: Action) -> Vec<CheckResult> {
        let mut results = Vec::new();
        for door in Door::BOTH {
            results.push(match policy {
                Policy::RetrySameKey => self.retry_same_key(action, door).await,
                Policy::ChangedRequest => self.changed_request(action, door).await,
                Policy::Concurrent => self.concurrent(action, door).await,
                Policy::ResponseLost => self.response_lost(action, door).await,
                Policy::CrossDoor => self.cross_door(action, door, door.other()).await,
                Policy::CrashAfterCommit => self.crash_after_commit(action, door).await,
            });
        }
        results
    }

    /// Check 1: Without a stable key, a retry duplicates; without any key, the
    /// write is refused.
    pub(super) async fn control(&self, door: Door) -> CheckResult {
        let ticket = self.ticket("control");
        let first = self.create(door, Some(&self.key()), &ticket).await;
        let retry = self.create(door, Some(&self.key()), &ticket).await;
        let keyless = self.create(door, None, &ticket).await;
        let refused = match (door, &keyless) {
            (Door::Rest, Answer::Refused(status)) => status == "400 idempotency-key-missing",
            (Door::Mcp, Answer::Refused(status)) => status == "invalid",
            _ => false,
        };
        let tickets = self.count(&ticket).await;
        let duplicated = tickets.as_ref().is_ok_and(|t| t.len() == 2);
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Created { .. })
            && refused
            && duplicated;
        let detail = format!(
            "expected failure mode: a retry with a fresh key made a second ticket ({}); a keyless write was refused ({keyless:?})",
            if duplicated { "yes" } else { "no" }
        );
        // The duplicate is the point: judge against the two tickets it makes.
        let seen = tickets.map(|effects| Seen {
            effects,
            intended: 2,
        });
        let mut result = Self::judge(
            CheckId::create(1, format!("control [{door}]")),
            seen,
            ok,
            detail,
        );
        result.intended = 0; // not an intended effect: kept out of the totals
        result
    }

    /// Checks 2 and 18: The same key and request twice: one effect,
    /// identical answer.
    async fn retry_same_key(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::RetrySameKey.check(action, &door.to_string());
        let intent = match self.intent(action, "retry").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let first = self.write(door, &key, &intent.write).await;
        let retry = self.write(door, &key, &intent.write).await;
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Replayed { .. })
            && first.id() == retry.id()
            && first.body() == retry.body();
        let detail = format!("first: {}, retry: {}", short(&first), short(&retry));
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 3 and 19: The same key with another request: a conflict,
    /// still one effect.
    async fn changed_request(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::ChangedRequest.check(action, &door.to_string());
        let intent = match self.intent(action, "changed").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let first = self.write(door, &key, &intent.write).await;
        let second = self.write(door, &key, &intent.changed).await;
        let ok = matches!(first, Answer::Created { .. }) && second == Answer::Conflict;
        let detail = format!(
            "first: {}, changed request: {}",
            short(&first),
            short(&second)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 4 and 20: 32 identical calls at once: one effect.
    async fn concurrent(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::Concurrent.check(action, &door.to_string());
        let intent = match self.intent(action, "concurrent").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let answers = join_all((0..RACERS).map(|_| self.write(door, &key, &intent.write))).await;
        let (ok, detail) = judge_race(&answers);
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 5 and 21: The answer is lost after the commit; the retry
    /// returns the original.
    async fn response_lost(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::ResponseLost.check(action, &door.to_string());
        let proxy = match self.proxy(&self.target.base_url).await {
            Ok(p) => p,
            Err(e) => return Self::skip(check, &e),
        };
        let intent = match self.intent(action, "lost").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let lost = self
            .write_at(&proxy.base_url(), door, &key, &intent.write)
            .await;
        let retry = self.write(door, &self.retry_key(&key), &intent.write).await;
        let ok = matches!(lost, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let detail = format!(
            "through the fault proxy: {}, retry: {}",
            short(&lost),
            short(&retry)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Check 6: The same key under another tenant: its own ticket, nothing leaked.
    pub(super) async fn other_tenant(&self, door: Door) -> CheckResult {
        let check = CheckId::create(6, format!("other-tenant [{door}]"));
        let Some(other) = &self.target.other_token else {
            return Self::skip(check, "needs a second tenant's token (--other-token)");
        };
        let ticket = self.ticket("tenant");
        let key = self.key();
        let mine = self.create(door, Some(&key), &ticket).await;
        let theirs = self
            .caller
            .create(&self.target.base_url, door, other, Some(&key), &ticket)
            .await;
        let theirs_count = self
            .caller
            .count(&self.target.base_url, other, &ticket.project_id)
            .await
            .map(|t| t.len())
            .unwrap_or(usize::MAX);
        let ok = matches!(mine, Answer::Created { .. })
            && matches!(theirs, Answer::Created { .. })
            && mine.id() != theirs.id()
            && theirs_count == 1;
        let detail = format!(
            "this tenant: {}, other tenant with the same key: {} (it sees {theirs_count} ticket(s))",
            short(&mine),
            short(&theirs)
        );
        let seen = self.count(&ticket).await.map(|effects| Seen {
            effects,
            intended: 1,
        });
        Self::judge(check, seen, ok, detail)
    }

    /// Checks 7 and 22: Done through one door, retried through the other:
    /// replayed.
    async fn cross_door(&self, action: Action, first_door: Door, retry_door: Door) -> CheckResult {
        let check = Policy::CrossDoor.check(action, &format!("{first_door}->{retry_door}"));
        let intent = match self.intent(action, "cross").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        let key = self.key();
        let first = self.write(first_door, &key, &intent.write).await;
        let retry = self.write(retry_door, &key, &intent.write).await;
        let ok = matches!(first, Answer::Created { .. })
            && matches!(retry, Answer::Replayed { .. })
            && first.id() == retry.id();
        let detail = format!(
            "{first_door}: {}, then {retry_door}: {}",
            short(&first),
            short(&retry)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Checks 8 and 23: The server dies right after the commit; after a
    /// restart the retry returns the original.
    async fn crash_after_commit(&self, action: Action, door: Door) -> CheckResult {
        let check = Policy::CrashAfterCommit.check(action, &door.to_string());
        let Some(restart) = &self.target.restart else {
            return Self::skip(
                check,
                "needs a way to restart the server (--restart-cmd) and a fault-injection build",
            );
        };
        let intent = match self.intent(action, "crash").await {
            Ok(intent) => intent,
            Err(why) => return Self::broken(check, why),
        };
        // With a ticket provider there is no local commit: the crash comes
        // right after the dispatch, before its answer is recorded.
        let prefix = if self.target.provider.is_some() {
            CRASH_AFTER_DISPATCH
        } else {
            CRASH_AFTER_COMMIT
        };
        let key = format!("{prefix}{}", self.key());
        let crashed = self.write(door, &key, &intent.write).await;
        if let Err(e) = restart.restart().await {
            return Self::broken(check, format!("restart failed: {e}"));
        }
        if !self.wait_ready().await {
            return Self::broken(check, "the server did not come back".into());
        }
        let retry = self.write(door, &self.retry_key(&key), &intent.write).await;
        let ok = matches!(crashed, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let detail = format!(
            "crashing call: {}, retry after restart: {}",
            short(&crashed),
            short(&retry)
        );
        Self::judge(check, self.seen(&intent, 1).await, ok, detail)
    }

    /// Check 9: Two instances on one database: lost on A, retried on B; and 32
    /// identical calls split over A and B.
    pub(super) async fn two_instances(&self) -> CheckResult {
        let check = CheckId::create(9, "two-instances [rest+mcp]".to_owned());
        let Some(b) = &self.target.second_base_url else {
            return Self::skip(
                check,
                "needs a second instance on the same database (--second-url)",
            );
        };
        let a = &self.target.base_url;
        let proxy = match self.proxy(a).await {
            Ok(p) => p,
            Err(e) => return Self::skip(check, &e),
        };
        let lost_ticket = self.ticket("instances-lost");
        let key = self.key();
        let token = &self.target.token;
        let lost = self
            .caller
            .create(
                &proxy.base_url(),
                Door::Rest,
                token,
                Some(&key),
                &lost_ticket,
            )
            .await;
        let retry = self
            .caller
            .create(
                b,
                Door::Mcp,
                token,
                Some(&self.retry_key(&key)),
                &lost_ticket,
            )
            .await;
        let first_ok = matches!(lost, Answer::Lost(_)) && matches!(retry, Answer::Replayed { .. });
        let first_seen = self.count(&lost_ticket).await;

        let race_ticket = self.ticket("instances-race");
        let race_key = self.key();
        let calls = (0..RACERS).map(|i| {
            let (base, door) = match i % 4 {
                0 => (a.as_str(), Door::Rest),
                1 => (b.as_str(), Door::Rest),
                2 => (a.as_str(), Door::Mcp),
                _ => (b.as_str(), Door::Mcp),
            };
            self.caller
                .create(base, door, token, Some(&race_key), &race_ticket)
        });
        let answers = join_all(calls).await;
        let (race_ok, race_detail) = judge_race(&answers);
        let race_seen = self.count(&race_ticket).await;

        let seen = match (first_seen, race_seen) {
            (Ok(mut x), Ok(y)) => {
                x.extend(y);
                Ok(Seen {
                    effects: x,
                    intended: 2,
                })
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        let detail = format!(
            "lost on A: {}, retried on B: {}; {RACERS} calls split over A and B: {race_detail}",
            short(&lost),
            short(&retry)
        );
        Self::judge(check, seen, first_ok && race_ok, detail)
    }

    async fn proxy(&self, base: &str) -> Result<FaultProxy, String> {
        let upstream = upstream_addr(base).await?;
        FaultProxy::losing_responses(upstream)
            .await
            .map_err(|e| format!("cannot start the fault proxy: {e}"))
    }
}

/// Every racer must get the one effect (or be told to wait), none an error.
fn judge_race(answers: &[Answer]) -> (bool, String) {
    let ids: BTreeSet<_> = answers.iter().filter_map(Answer::id).collect();
    let created = answers
        .iter()
        .filter(|a| matches!(a, Answer::Created { .. }))
        .count();
    let waiting = answers.iter().filter(|a| **a == Answer::InProgress).count();
    let other: Vec<_> = answers
        .iter()
        .filter(|a| {
            !matches!(
                a,
                Answer::Created { .. } | Answer::Replayed { .. } | Answer::InProgress
            )
        })
        .map(short)
        .collect();
    let ok = ids.len() == 1 && created == 1 && other.is_empty();
    let detail = format!(
        "{} created, {} replayed, {waiting} told to retry later, {} other {other:?}; {} distinct id(s) answered",
        created,
        answers.len() - created - waiting - other.len(),
        other.len(),
        ids.len()
    );
    (ok, detail)
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

async fn upstream_addr(base: &str) -> Result<SocketAddr, String> {
    let url = reqwest::Url::parse(base).map_err(|e| format!("bad base URL {base}: {e}"))?;
    let host = url
        .host_str()
        .ok_or_else(|| format!("no host in {base}"))?
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} resolves to nothing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table in the module docs (and the README) is how people read a
    /// report: every check the code numbers must be listed there under
    /// its number and name.
    #[test]
    fn every_policy_check_is_in_the_table() {
        let docs = include_str!("lib.rs");
        for policy in Policy::ALL {
            for action in [Action::CreateTicket, Action::UpdateTicket] {
                let row = format!("//! | {} | {} |", policy.number(action), policy.slug());
                assert!(docs.contains(&row), "missing row: {row}");
            }
        }
    }

    #[test]
    fn each_policy_has_its_own_numbers() {
        let mut numbers = BTreeSet::new();
        for policy in Policy::ALL {
            for action in Action::ALL {
                numbers.insert((policy.number(action), action == Action::CreateTicket));
            }
        }
        // Two per policy: create_ticket's and the lifecycle actions'.
        assert_eq!(numbers.len(), 2 * Policy::ALL.len(), "{numbers:?}");
        for action in lifecycle() {
            let check = Policy::CrossDoor.check(action, "rest->mcp");
            assert_eq!(check.name, format!("cross-door {action} [rest->mcp]"));
        }
        assert_eq!(
            Policy::CrossDoor
                .check(Action::CreateTicket, "rest->mcp")
                .name,
            "cross-door [rest->mcp]",
            "a create's check keeps its name"
        );
    }
}

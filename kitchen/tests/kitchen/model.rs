//! A model test: random sequences of all four writes (create, update,
//! transition, comment), with keys reused across actions, tickets and
//! tenants, against a real kitchen, must agree with a few lines of
//! in-memory rules:
//!
//! - a (tenant, action, key) is free until a valid request uses it and is
//!   applied; the first use freezes its answer;
//! - the same command with a used key replays that answer byte for byte;
//!   another command conflicts, naming the key;
//! - invalid input and refusals (no such ticket for this tenant, a stale
//!   expected version, a move the status machine does not allow) write
//!   nothing and leave the key free;
//! - a ticket's version goes up by one per real change (never for a
//!   comment or a patch that changes nothing), and its history gains one
//!   entry per write that was applied and changed something or commented.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use kitchen::testing::{Backend, TestDatabase, tenant_with_token};
use kitchen::{
    Action, CommentDraft, Kitchen, KitchenError, OperationKey, Outcome, Receipt, Refusal, TenantId,
    Ticket, TicketDraft, TicketId, TicketStatus, TicketUpdate, TransitionDraft, Version,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::support::{comments, history, patch, ticket_count};

use TicketStatus::{Closed, InProgress, Open, Resolved};

const TENANTS: usize = 2;
const KEYS: usize = 3;

/// Create requests by meaning: 0 and 1 mean the same (1 spells the
/// defaults out), 2 differs in priority, 3 is invalid.
fn create_request(payload: usize) -> (TicketDraft, Option<usize>) {
    let base = TicketDraft {
        project_id: Some("ops".into()),
        title: Some("Disk full".into()),
        ..TicketDraft::default()
    };
    match payload {
        0 => (base, Some(0)),
        1 => (
            TicketDraft {
                priority: Some("normal".into()),
                description: Some(String::new()),
                ..base
            },
            Some(0),
        ),
        2 => (
            TicketDraft {
                priority: Some("high".into()),
                ..base
            },
            Some(2),
        ),
        _ => (
            TicketDraft {
                project_id: Some("Not a slug".into()),
                ..base
            },
            None,
        ),
    }
}

/// Merge patches and their meaning (`None`: invalid). 2 and 3 mean the
/// same: an empty description is no description.
const PATCHES: [(&str, Option<usize>); 9] = [
    (r#"{"title": "Alpha"}"#, Some(0)),
    (r#"{"title": "Beta", "priority": "high"}"#, Some(1)),
    (r#"{"description": null}"#, Some(2)),
    (r#"{"description": ""}"#, Some(2)),
    (r#"{"description": "Details"}"#, Some(4)),
    (r#"{"assignee": "Ada"}"#, Some(5)),
    (r#"{"assignee": null}"#, Some(6)),
    (r#"{}"#, Some(7)),
    (r#"{"priority": null}"#, None),
];

/// Transition targets: the four statuses, then one that is not a status.
const TO: [&str; 5] = ["open", "in_progress", "resolved", "closed", "done"];
/// A transition step's `to` meaning "a move the model allows from where
/// the ticket is now".
const LEGAL: usize = TO.len();
/// Reasons: none, one, and an empty one (which means none).
const REASONS: [Option<&str>; 3] = [None, Some("because"), Some("")];
/// Comment bodies; the last is blank, so invalid.
const BODIES: [&str; 3] = ["First", "Second", "  "];

/// The status machine, written out independently of the kitchen's.
const ALLOWED: [(TicketStatus, TicketStatus); 5] = [
    (Open, InProgress),
    (InProgress, Resolved),
    (Resolved, Closed),
    (Resolved, InProgress),
    (Closed, Open),
];

#[derive(Debug, Clone)]
enum Step {
    Create {
        tenant: usize,
        key: usize,
        payload: usize,
    },
    Update {
        tenant: usize,
        key: usize,
        target: usize,
        patch: usize,
        /// 0: no expected version; 1: the version the model has now; 2:
        /// one before it (stale once the ticket changed); 3: version 1.
        expect: usize,
    },
    Transition {
        tenant: usize,
        key: usize,
        target: usize,
        to: usize,
        reason: usize,
    },
    Comment {
        tenant: usize,
        key: usize,
        target: usize,
        body: usize,
    },
    /// Sends an earlier write again, unchanged: a caller's retry.
    Retry(prop::sample::Index),
    Lookup {
        tenant: usize,
        action: usize,
        key: usize,
    },
}

/// A write as sent, every choice resolved (an expected version is a number
/// by now), so that a retry sends exactly the same.
#[derive(Debug, Clone)]
enum Request {
    Create {
        tenant: usize,
        key: usize,
        payload: usize,
    },
    Update {
        tenant: usize,
        key: usize,
        ticket: TicketId,
        patch: usize,
        expected: Option<i64>,
    },
    Transition {
        tenant: usize,
        key: usize,
        ticket: TicketId,
        to: usize,
        reason: usize,
    },
    Comment {
        tenant: usize,
        key: usize,
        ticket: TicketId,
        body: usize,
    },
}

fn step() -> impl Strategy<Value = Step> {
    let who = (0..TENANTS, 0..KEYS);
    // Mostly the writer's own tickets; sometimes the other tenant's.
    let target = || prop_oneof![4 => 0..2usize, 1 => Just(2usize)];
    prop_oneof![
        2 => (who.clone(), 0..4usize)
            .prop_map(|((tenant, key), payload)| Step::Create { tenant, key, payload }),
        4 => (who.clone(), target(), 0..PATCHES.len(), 0..4usize).prop_map(
            |((tenant, key), target, patch, expect)| Step::Update { tenant, key, target, patch, expect }
        ),
        // Half the moves are legal ones (`LEGAL`), so tickets get around.
        3 => (who.clone(), target(), prop_oneof![Just(LEGAL), 0..TO.len()], 0..REASONS.len())
            .prop_map(|((tenant, key), target, to, reason)| Step::Transition {
                tenant,
                key,
                target,
                to,
                reason
            }),
        2 => (who.clone(), target(), prop_oneof![3 => 0..2usize, 1 => Just(2usize)]).prop_map(
            |((tenant, key), target, body)| Step::Comment { tenant, key, target, body }
        ),
        3 => any::<prop::sample::Index>().prop_map(Step::Retry),
        1 => (who, 0..Action::ALL.len())
            .prop_map(|((tenant, key), action)| Step::Lookup { tenant, action, key }),
    ]
}

/// A ticket as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Modelled {
    owner: usize,
    title: String,
    description: Option<String>,
    priority: String,
    assignee: Option<String>,
    status: TicketStatus,
    version: i64,
    history: usize,
    comments: usize,
}

impl Modelled {
    fn fresh(owner: usize) -> Self {
        Self {
            owner,
            title: "Disk full".into(),
            description: None,
            priority: "normal".into(),
            assignee: None,
            status: Open,
            version: 1,
            history: 1,
            comments: 0,
        }
    }

    /// Whether `ticket` shows what the model has (history and comment
    /// counts are checked separately).
    fn agrees_with(&self, ticket: &Ticket) -> bool {
        self.title == ticket.title.as_str()
            && self.description.as_deref() == ticket.description.as_ref().map(|d| d.as_str())
            && self.priority == ticket.priority.as_str()
            && self.assignee.as_deref() == ticket.assignee.as_ref().map(|a| a.as_str())
            && self.status == ticket.status
            && self.version == ticket.version.get()
    }

    /// The ticket after a patch of meaning `meaning`, and whether anything
    /// changed.
    fn patched(&self, meaning: usize) -> (Self, bool) {
        let mut next = self.clone();
        match meaning {
            0 => next.title = "Alpha".into(),
            1 => {
                next.title = "Beta".into();
                next.priority = "high".into();
            }
            2 => next.description = None,
            4 => next.description = Some("Details".into()),
            5 => next.assignee = Some("Ada".into()),
            6 => next.assignee = None,
            _ => {}
        }
        let changed = next != *self;
        (next, changed)
    }
}

/// What a request means once normalized: equal meanings are the same
/// command, so the same key replays.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Meaning {
    Create(usize),
    Update {
        ticket: TicketId,
        patch: usize,
        expected: Option<i64>,
    },
    Transition {
        ticket: TicketId,
        to: TicketStatus,
        reason: Option<&'static str>,
    },
    Comment {
        ticket: TicketId,
        body: &'static str,
    },
}

/// An outcome with its result type forgotten: what the model judges.
#[derive(Debug)]
enum Seen {
    Created {
        snapshot: String,
        ticket: Option<Ticket>,
    },
    Replayed {
        snapshot: String,
    },
    Conflict {
        action: Action,
        key: OperationKey,
    },
    Invalid,
    Refused(Refusal),
    Other(String),
}

impl Seen {
    fn of<T: std::fmt::Debug>(
        outcome: Result<Outcome<T>, KitchenError>,
        ticket: impl FnOnce(&Receipt<T>) -> Option<Ticket>,
    ) -> Result<Self, TestCaseError> {
        let outcome =
            outcome.map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
        Ok(match outcome {
            Outcome::Created(r) => Seen::Created {
                ticket: ticket(&r),
                snapshot: r.snapshot.as_str().to_owned(),
            },
            Outcome::Replayed(r) => Seen::Replayed {
                snapshot: r.snapshot.as_str().to_owned(),
            },
            Outcome::Conflict { original } => Seen::Conflict {
                action: original.action,
                key: original.key,
            },
            Outcome::Invalid { .. } => Seen::Invalid,
            Outcome::Refused(refusal) => Seen::Refused(refusal),
            other @ (Outcome::InProgress { .. }
            | Outcome::NotCreated { .. }
            | Outcome::Unknown { .. }) => Seen::Other(format!("{other:?}")),
        })
    }
}

/// What the model says an attempt on a free key does.
enum Rule {
    /// Applied: the ticket acted on (with its state after) if any.
    Apply(Option<(TicketId, Modelled)>),
    /// Refused: nothing written, the key stays free.
    Refuse(Refusal),
}

struct Case<'k> {
    kitchen: &'k Kitchen,
    case: usize,
    tenants: Vec<TenantId>,
    /// Each tenant's own tickets, in target order.
    own: Vec<Vec<TicketId>>,
    tickets: HashMap<TicketId, Modelled>,
    /// (tenant, action, key) -> the first use's meaning and frozen answer.
    used: HashMap<(usize, Action, usize), (Meaning, String)>,
    /// Tickets made by the sequence's creates, per tenant.
    made: Vec<usize>,
    /// Every write sent so far, for retries.
    sent: Vec<Request>,
}

impl<'k> Case<'k> {
    async fn new(kitchen: &'k Kitchen, case: usize) -> Self {
        let mut this = Self {
            kitchen,
            case,
            tenants: Vec::new(),
            own: Vec::new(),
            tickets: HashMap::new(),
            used: HashMap::new(),
            made: vec![0; TENANTS],
            sent: Vec::new(),
        };
        for t in 0..TENANTS {
            let (tenant, _) = tenant_with_token(kitchen, &format!("case-{case}-tenant-{t}")).await;
            this.tenants.push(tenant.id);
            let mut own = Vec::new();
            for i in 0..2 {
                let key = OperationKey::parse(format!("case-{case}-setup-{t}-{i}")).expect("key");
                let outcome = kitchen
                    .create_ticket(tenant.id, &key, &create_request(0).0)
                    .await
                    .expect("setup create");
                let Outcome::Created(receipt) = outcome else {
                    panic!("setup create: {outcome:?}");
                };
                this.tickets.insert(receipt.result.id, Modelled::fresh(t));
                own.push(receipt.result.id);
            }
            this.own.push(own);
        }
        this
    }

    fn key(&self, k: usize) -> OperationKey {
        OperationKey::parse(format!("case-{}-key-{k}", self.case)).expect("valid key")
    }

    /// The ticket a target names for `tenant`: 0 and 1 are its own, 2 is
    /// the other tenant's first ticket, which it must not find.
    fn target(&self, tenant: usize, target: usize) -> TicketId {
        match target {
            0 | 1 => self.own[tenant][target],
            _ => self.own[(tenant + 1) % TENANTS][0],
        }
    }

    /// The ticket if `tenant` may see it.
    fn visible(&self, tenant: usize, id: TicketId) -> Option<&Modelled> {
        self.tickets.get(&id).filter(|m| m.owner == tenant)
    }

    /// The write a step sends, if it is one.
    fn resolve(&self, step: &Step) -> Option<Request> {
        Some(match *step {
            Step::Create {
                tenant,
                key,
                payload,
            } => Request::Create {
                tenant,
                key,
                payload,
            },
            Step::Update {
                tenant,
                key,
                target,
                patch,
                expect,
            } => {
                let ticket = self.target(tenant, target);
                let now = self.tickets[&ticket].version;
                Request::Update {
                    tenant,
                    key,
                    ticket,
                    patch,
                    expected: match expect {
                        0 => None,
                        1 => Some(now),
                        2 => Some((now - 1).max(1)),
                        _ => Some(1),
                    },
                }
            }
            Step::Transition {
                tenant,
                key,
                target,
                to,
                reason,
            } => {
                let ticket = self.target(tenant, target);
                let to = if to == LEGAL {
                    let from = self.tickets[&ticket].status;
                    let (_, next) = ALLOWED
                        .into_iter()
                        .find(|(f, _)| *f == from)
                        .expect("every status has a way out");
                    TicketStatus::ALL
                        .iter()
                        .position(|s| *s == next)
                        .expect("a status")
                } else {
                    to
                };
                Request::Transition {
                    tenant,
                    key,
                    ticket,
                    to,
                    reason,
                }
            }
            Step::Comment {
                tenant,
                key,
                target,
                body,
            } => Request::Comment {
                tenant,
                key,
                ticket: self.target(tenant, target),
                body,
            },
            Step::Retry(which) => {
                if self.sent.is_empty() {
                    return None;
                }
                self.sent[which.index(self.sent.len())].clone()
            }
            Step::Lookup { .. } => return None,
        })
    }

    async fn run(&mut self, step: &Step) -> Result<(), TestCaseError> {
        if let Step::Lookup {
            tenant,
            action,
            key,
        } = *step
        {
            return self.check_record(tenant, Action::ALL[action], key).await;
        }
        let Some(request) = self.resolve(step) else {
            return Ok(());
        };
        self.sent.push(request.clone());
        self.send(&request).await
    }

    /// Sends one write and judges its outcome.
    async fn send(&mut self, request: &Request) -> Result<(), TestCaseError> {
        let k = self.kitchen;
        match *request {
            Request::Create {
                tenant,
                key,
                payload,
            } => {
                let (draft, meaning) = create_request(payload);
                let seen = Seen::of(
                    k.create_ticket(self.tenants[tenant], &self.key(key), &draft)
                        .await,
                    |r| Some(r.result.clone()),
                )?;
                let meaning = meaning.map(Meaning::Create);
                self.judge(
                    request,
                    (tenant, Action::CreateTicket, key),
                    meaning,
                    seen,
                    |_| Rule::Apply(None),
                )?;
            }
            Request::Update {
                tenant,
                key,
                ticket: id,
                patch: p,
                expected,
            } => {
                let update = TicketUpdate {
                    ticket_id: id,
                    expected_version: expected
                        .map(|v| Version::parse(v, "expected_version").expect("a version")),
                    patch: patch(PATCHES[p].0),
                };
                let seen = Seen::of(
                    k.update_ticket(self.tenants[tenant], &self.key(key), &update)
                        .await,
                    |r| Some(r.result.clone()),
                )?;
                let meaning = PATCHES[p].1.map(|patch| Meaning::Update {
                    ticket: id,
                    patch,
                    expected,
                });
                self.judge(
                    request,
                    (tenant, Action::UpdateTicket, key),
                    meaning,
                    seen,
                    |case| {
                        let Some(now) = case.visible(tenant, id) else {
                            return Rule::Refuse(Refusal::TicketNotFound { ticket_id: id });
                        };
                        if let Some(v) = expected
                            && v != now.version
                        {
                            return Rule::Refuse(Refusal::VersionMismatch {
                                expected: Version::parse(v, "v").expect("a version"),
                                current: Version::parse(now.version, "v").expect("a version"),
                            });
                        }
                        let (mut next, changed) = now.patched(PATCHES[p].1.expect("a valid patch"));
                        if changed {
                            next.version += 1;
                            next.history += 1;
                        }
                        Rule::Apply(Some((id, next)))
                    },
                )?;
                self.check_ticket(tenant, id).await?;
            }
            Request::Transition {
                tenant,
                key,
                ticket: id,
                to,
                reason,
            } => {
                let draft = TransitionDraft {
                    to: Some(TO[to].into()),
                    reason: REASONS[reason].map(Into::into),
                };
                let seen = Seen::of(
                    k.transition_ticket(self.tenants[tenant], &self.key(key), id, &draft)
                        .await,
                    |r| Some(r.result.clone()),
                )?;
                let to = TicketStatus::ALL.get(to).copied();
                let meaning = to.map(|to| Meaning::Transition {
                    ticket: id,
                    to,
                    reason: REASONS[reason].filter(|r| !r.is_empty()),
                });
                self.judge(
                    request,
                    (tenant, Action::TransitionTicket, key),
                    meaning,
                    seen,
                    |case| {
                        let Some(now) = case.visible(tenant, id) else {
                            return Rule::Refuse(Refusal::TicketNotFound { ticket_id: id });
                        };
                        let to = to.expect("a valid status");
                        if !ALLOWED.contains(&(now.status, to)) {
                            return Rule::Refuse(Refusal::TransitionNotAllowed {
                                from: now.status,
                                to,
                                allowed: now.status.allowed_moves(),
                            });
                        }
                        let mut next = now.clone();
                        next.status = to;
                        next.version += 1;
                        next.history += 1;
                        Rule::Apply(Some((id, next)))
                    },
                )?;
                self.check_ticket(tenant, id).await?;
            }
            Request::Comment {
                tenant,
                key,
                ticket: id,
                body,
            } => {
                let draft = CommentDraft {
                    body: Some(BODIES[body].into()),
                };
                let seen = Seen::of(
                    k.add_comment(self.tenants[tenant], &self.key(key), id, &draft)
                        .await,
                    |_| None,
                )?;
                let meaning = (!BODIES[body].trim().is_empty()).then(|| Meaning::Comment {
                    ticket: id,
                    body: BODIES[body],
                });
                self.judge(
                    request,
                    (tenant, Action::AddComment, key),
                    meaning,
                    seen,
                    |case| {
                        let Some(now) = case.visible(tenant, id) else {
                            return Rule::Refuse(Refusal::TicketNotFound { ticket_id: id });
                        };
                        let mut next = now.clone();
                        next.comments += 1;
                        next.history += 1;
                        Rule::Apply(Some((id, next)))
                    },
                )?;
                self.check_ticket(tenant, id).await?;
            }
        }
        Ok(())
    }

    /// Checks one attempt's outcome against the model, and updates it.
    /// `slot` is the key's scope: (tenant, action, key).
    fn judge(
        &mut self,
        step: &Request,
        slot: (usize, Action, usize),
        meaning: Option<Meaning>,
        seen: Seen,
        rule: impl FnOnce(&Self) -> Rule,
    ) -> Result<(), TestCaseError> {
        let (tenant, action, k) = slot;
        let fail = |what: String| Err(TestCaseError::fail(format!("{step:?}: {what}")));
        if let Seen::Other(outcome) = &seen {
            // One attempt at a time: nothing ever waits, nothing is remote.
            return fail(format!("the model has no rule for {outcome}"));
        }
        let Some(meaning) = meaning else {
            return match seen {
                Seen::Invalid => Ok(()),
                other => fail(format!("invalid input answered {other:?}")),
            };
        };
        if let Some((first, frozen)) = self.used.get(&slot) {
            return match seen {
                Seen::Replayed { snapshot } if *first == meaning => {
                    prop_assert_eq!(&snapshot, frozen, "{:?}: replayed bytes", step);
                    Ok(())
                }
                Seen::Conflict { action: a, key } if *first != meaning => {
                    prop_assert_eq!((a, key), (action, self.key(k)), "{:?}", step);
                    Ok(())
                }
                other => fail(format!(
                    "key used by {first:?}, this is {meaning:?}, kitchen answered {other:?}"
                )),
            };
        }
        match (rule(self), seen) {
            (Rule::Refuse(expected), Seen::Refused(actual)) => {
                prop_assert_eq!(actual, expected, "{:?}", step);
            }
            (Rule::Apply(after), Seen::Created { snapshot, ticket }) => {
                match after {
                    Some((id, next)) => {
                        if let Some(ticket) = &ticket {
                            prop_assert_eq!(ticket.id, id, "{:?}", step);
                            prop_assert!(
                                next.agrees_with(ticket),
                                "{:?}: model {:?}, kitchen {:?}",
                                step,
                                next,
                                ticket
                            );
                        }
                        self.tickets.insert(id, next);
                    }
                    None => {
                        let id = ticket.expect("a create answers its ticket").id;
                        self.tickets.insert(id, Modelled::fresh(tenant));
                        self.made[tenant] += 1;
                    }
                }
                self.used.insert(slot, (meaning, snapshot));
            }
            (Rule::Refuse(expected), other) => {
                return fail(format!(
                    "model refuses ({expected:?}), kitchen answered {other:?}"
                ));
            }
            (Rule::Apply(_), other) => {
                return fail(format!("model applies, kitchen answered {other:?}"));
            }
        }
        Ok(())
    }

    /// The stored ticket agrees with the model, when `tenant` owns it.
    async fn check_ticket(&self, tenant: usize, id: TicketId) -> Result<(), TestCaseError> {
        let stored = self
            .kitchen
            .ticket(self.tenants[tenant], id)
            .await
            .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
        match (self.visible(tenant, id), stored) {
            (Some(model), Some(stored)) => prop_assert!(
                model.agrees_with(&stored),
                "model {:?}, stored {:?}",
                model,
                stored
            ),
            (None, None) => {}
            (model, stored) => {
                return Err(TestCaseError::fail(format!(
                    "model {model:?}, stored {stored:?}"
                )));
            }
        }
        Ok(())
    }

    /// The operation record is there exactly when the model froze the key,
    /// with the frozen bytes.
    async fn check_record(
        &self,
        tenant: usize,
        action: Action,
        k: usize,
    ) -> Result<(), TestCaseError> {
        let status = self
            .kitchen
            .operation_status(self.tenants[tenant], action, &self.key(k))
            .await
            .map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
        let stored = status.and_then(|s| s.record.result.map(|r| r.as_str().to_owned()));
        let frozen = self.used.get(&(tenant, action, k)).map(|(_, s)| s.clone());
        prop_assert_eq!(stored, frozen, "{} {} key {}", tenant, action, k);
        Ok(())
    }

    /// The ground truth at the end: tickets, versions, history, comments
    /// and every record.
    async fn check_all(&self) -> Result<(), TestCaseError> {
        for (t, tenant) in self.tenants.iter().enumerate() {
            prop_assert_eq!(
                ticket_count(self.kitchen, *tenant).await,
                2 + self.made[t],
                "tenant {}",
                t
            );
            for &id in &self.own[t] {
                self.check_ticket(t, id).await?;
                let model = &self.tickets[&id];
                prop_assert_eq!(
                    history(self.kitchen, *tenant, id).await.len(),
                    model.history
                );
                prop_assert_eq!(
                    comments(self.kitchen, *tenant, id).await.len(),
                    model.comments
                );
            }
            for action in Action::ALL {
                for k in 0..KEYS {
                    self.check_record(t, action, k).await?;
                }
            }
        }
        Ok(())
    }
}

async fn run_case(kitchen: &Kitchen, case: usize, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut model = Case::new(kitchen, case).await;
    for step in steps {
        model.run(step).await?;
    }
    model.check_all().await
}

/// One database per backend for the whole run; every case gets fresh
/// tenants (and so fresh keys and tickets), so cases cannot see each other.
fn model_agrees(backend: Backend) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (db, kitchen) = rt.block_on(async {
        let db = TestDatabase::new(backend).await;
        let kitchen = db.kitchen().await;
        (db, kitchen)
    });
    // proptest's runner takes an Fn closure, so the case counter is atomic.
    let case = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: 32,
        ..Config::default()
    });
    let result = runner.run(&proptest::collection::vec(step(), 1..32), |steps| {
        let n = case.fetch_add(1, Ordering::Relaxed);
        rt.block_on(run_case(&kitchen, n, &steps))
    });
    rt.block_on(kitchen.close());
    drop(db);
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[test]
fn sqlite_model_agrees() {
    model_agrees(Backend::Sqlite);
}

#[test]
fn postgres_model_agrees() {
    model_agrees(Backend::Postgres);
}

//! A model test: random sequences of all four writes (create, update,
//! transition, comment), with keys reused across actions, tickets and
//! tenants, and with time passing and the retention sweep running in
//! between, against a real kitchen on a clock the test holds, must agree
//! with a few lines of in-memory rules:
//!
//! - a (tenant, action, key) is free until a valid request uses it and is
//!   applied; the first use freezes its answer and starts its two horizons:
//!   `replayable_until` (first use + replay window) and `retained_until`
//!   (first use + tombstone horizon), each rounded up to a whole second;
//! - before `replayable_until` the same command with a used key replays
//!   that answer byte for byte; another command conflicts, naming the key;
//! - from `replayable_until` on, the same command answers `expired` with
//!   the resource as it is now (and writes nothing); another conflicts;
//! - from `retained_until` on, the key is free again: a valid request is
//!   applied as new;
//! - invalid input and refusals (no such ticket for this tenant, a stale
//!   expected version, a move the status machine does not allow) write
//!   nothing and leave the key free;
//! - a ticket's version goes up by one per real change (never for a
//!   comment or a patch that changes nothing), and its history gains one
//!   entry per write that was applied and changed something or commented;
//! - the sweep changes no answer (those follow the clock alone); it only
//!   drops frozen answers past the window and records past the horizon.

use kitchen::actions::{
    AddComment, AddLabel, CreateTicket, RemoveLabel, TransitionTicket, UpdateTicket,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use kitchen::testing::{DatabaseKind, TestDatabase, tenant_with_token};
use kitchen::{
    Action, Clock, CommentDraft, KeyPhase, Kitchen, KitchenConfig, KitchenError, LabelDraft,
    OperationKey, OperationRecord, OperationRef, Outcome, Refusal, TenantId, Ticket, TicketDraft,
    TicketId, TicketStatus, TicketUpdate, TransitionDraft, Uuid, Version,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::support::{comments, history, patch, ticket_count};

use TicketStatus::{Closed, InProgress, Open, Resolved};

const TENANTS: usize = 2;
const KEYS: usize = 3;

/// The kitchen's replay window and tombstone horizon: short enough that a
/// case's few advances cross both.
const WINDOW: time::Duration = time::Duration::days(10);
const HORIZON: time::Duration = time::Duration::days(30);
/// Not a whole second, so that first uses are mostly not either and the
/// horizons' rounding up matters.
const START: OffsetDateTime = datetime!(2026-03-01 09:00:00.250 UTC);
/// Small, so that one batch often leaves work for the next.
const SWEEP_BATCH: u32 = 3;
/// How far one "time passes" step moves the clock: a moment, a few days,
/// exactly the window, most of the horizon. Sums of these land before and
/// after both horizons; `Step::AdvanceTo` lands exactly on them.
const ADVANCES: [time::Duration; 4] = [
    time::Duration::SECOND,
    time::Duration::days(3),
    WINDOW,
    time::Duration::days(25),
];

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
/// Labels; the last has an uppercase letter, so invalid.
const LABELS: [&str; 3] = ["db", "urgent", "Bad"];

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
    /// `add_label` (`add`) or `remove_label`.
    Label {
        tenant: usize,
        key: usize,
        target: usize,
        label: usize,
        add: bool,
    },
    /// Sends an earlier write again, unchanged: a caller's retry.
    Retry(prop::sample::Index),
    Lookup {
        tenant: usize,
        action: usize,
        key: usize,
    },
    /// Time passes: the clock moves on by `ADVANCES[_]`.
    Advance(usize),
    /// Time passes up to a horizon of a key the model holds (or to one
    /// microsecond before it): where `>=` and `>` part ways. Nothing
    /// happens if the model holds no key or the horizon is behind.
    AdvanceTo {
        key: prop::sample::Index,
        retained: bool,
        early: bool,
    },
    /// The retention sweep runs: one batch, or batches until nothing is due.
    Sweep { all: bool },
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
    Label {
        tenant: usize,
        key: usize,
        ticket: TicketId,
        label: usize,
        add: bool,
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
        2 => (who.clone(), target(), 0..LABELS.len(), any::<bool>()).prop_map(
            |((tenant, key), target, label, add)| Step::Label { tenant, key, target, label, add }
        ),
        3 => any::<prop::sample::Index>().prop_map(Step::Retry),
        1 => (who, 0..Action::ALL.len())
            .prop_map(|((tenant, key), action)| Step::Lookup { tenant, action, key }),
        2 => (0..ADVANCES.len()).prop_map(Step::Advance),
        2 => (any::<prop::sample::Index>(), any::<bool>(), any::<bool>())
            .prop_map(|(key, retained, early)| Step::AdvanceTo { key, retained, early }),
        1 => any::<bool>().prop_map(|all| Step::Sweep { all }),
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
    /// Alphabetical, as the kitchen keeps them.
    labels: std::collections::BTreeSet<&'static str>,
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
            labels: std::collections::BTreeSet::new(),
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
            && self
                .labels
                .iter()
                .copied()
                .eq(ticket.labels.as_slice().iter().map(|l| l.as_str()))
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
    Label {
        ticket: TicketId,
        label: &'static str,
        add: bool,
    },
}

/// An outcome with its result type forgotten: what the model judges.
#[derive(Debug)]
enum Seen {
    Created {
        snapshot: String,
        ticket: Option<Ticket>,
        resource: Uuid,
        operation: OperationRecord,
    },
    Replayed {
        snapshot: String,
        operation: OperationRecord,
    },
    Expired {
        /// The resource as the answer shows it, as JSON.
        current: String,
        ticket: Option<Ticket>,
        resource: Uuid,
        operation: OperationRef,
    },
    Conflict {
        original: OperationRef,
    },
    Invalid,
    Refused(Refusal),
    Other(String),
}

impl Seen {
    /// `view` tells a result's ticket (if it is one) and its resource id.
    fn of<T: std::fmt::Debug + serde::Serialize>(
        outcome: Result<Outcome<T>, KitchenError>,
        view: impl Fn(&T) -> (Option<Ticket>, Uuid),
    ) -> Result<Self, TestCaseError> {
        let outcome =
            outcome.map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
        Ok(match outcome {
            Outcome::Created(r) => {
                let (ticket, resource) = view(&r.result);
                Seen::Created {
                    ticket,
                    resource,
                    snapshot: r.snapshot.as_str().to_owned(),
                    operation: r.operation,
                }
            }
            Outcome::Replayed(r) => Seen::Replayed {
                snapshot: r.snapshot.as_str().to_owned(),
                operation: r.operation,
            },
            Outcome::Expired(e) => {
                let (ticket, resource) = view(&e.current);
                Seen::Expired {
                    current: serde_json::to_string(&e.current)
                        .map_err(|e| TestCaseError::fail(format!("serialize: {e}")))?,
                    ticket,
                    resource,
                    operation: e.operation,
                }
            }
            Outcome::Conflict { original } => Seen::Conflict { original },
            Outcome::Invalid { .. } => Seen::Invalid,
            Outcome::Refused(refusal) => Seen::Refused(refusal),
            other @ (Outcome::InProgress { .. }
            | Outcome::NotCreated { .. }
            | Outcome::Unknown { .. }) => Seen::Other(format!("{other:?}")),
        })
    }
}

/// A ticket result's view for [`Seen::of`].
fn ticket_view(ticket: &Ticket) -> (Option<Ticket>, Uuid) {
    (Some(ticket.clone()), ticket.id.as_uuid())
}

/// `t` rounded up to a whole second, written out independently of the
/// kitchen's.
fn ceil_second(t: OffsetDateTime) -> OffsetDateTime {
    let floor = t - time::Duration::nanoseconds(i64::from(t.nanosecond()));
    if floor == t {
        t
    } else {
        floor + time::Duration::SECOND
    }
}

/// What the model knows of a used key.
#[derive(Debug, Clone)]
struct Used {
    /// The first use's meaning and its frozen answer.
    meaning: Meaning,
    frozen: String,
    first_use: OffsetDateTime,
    replayable_until: OffsetDateTime,
    retained_until: OffsetDateTime,
    /// The ticket it made or acted on, or the comment it made.
    resource: Uuid,
    /// What the sweep has done to its record so far.
    stored: Stored,
}

impl Used {
    fn new(meaning: Meaning, frozen: String, first_use: OffsetDateTime, resource: Uuid) -> Self {
        Self {
            meaning,
            frozen,
            first_use,
            replayable_until: ceil_second(first_use + WINDOW),
            retained_until: ceil_second(first_use + HORIZON),
            resource,
            stored: Stored::Full,
        }
    }

    /// The key's phase at `now`, by the model's rules.
    fn phase(&self, now: OffsetDateTime) -> KeyPhase {
        if now >= self.retained_until {
            KeyPhase::Forgotten
        } else if now >= self.replayable_until {
            KeyPhase::Expired
        } else {
            KeyPhase::Replayable
        }
    }

    /// Whether `op` carries this key's first use and horizons.
    fn dates_agree(
        &self,
        created_at: OffsetDateTime,
        until: (OffsetDateTime, OffsetDateTime),
    ) -> bool {
        created_at == self.first_use && until == (self.replayable_until, self.retained_until)
    }

    /// Whether the raw record (what the sweep left) is what the model
    /// expects.
    fn stored_agrees(&self, raw: Option<&OperationRecord>) -> bool {
        let frozen = Some(self.frozen.as_str());
        let full = |r: &OperationRecord| {
            r.result.as_ref().map(|s| s.as_str()) == frozen && r.tombstoned_at.is_none()
        };
        let tombstone = |r: &OperationRecord| r.result.is_none() && r.tombstoned_at.is_some();
        match (self.stored, raw) {
            (Stored::Full, Some(r)) => full(r),
            (Stored::Tombstone, Some(r)) => tombstone(r),
            (Stored::Gone | Stored::Unsure, None) => true,
            (Stored::Unsure, Some(r)) => full(r) || tombstone(r),
            _ => false,
        }
    }
}

/// What the sweep has done to a record, as far as the model can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    /// The frozen answer is there.
    Full,
    /// Only a tombstone is left.
    Tombstone,
    /// Deleted.
    Gone,
    /// One batch ran while it was due: it may or may not have been its turn
    /// (older records go first).
    Unsure,
}

impl Stored {
    /// After a sweep at a time when the key is in `phase`; `all`: batches
    /// until nothing was due, otherwise one batch.
    fn after_sweep(self, phase: KeyPhase, all: bool) -> Self {
        match (phase, all, self) {
            (KeyPhase::Replayable, ..) => self,
            (KeyPhase::Expired, true, _) => Stored::Tombstone,
            (KeyPhase::Forgotten, true, _) => Stored::Gone,
            (KeyPhase::Expired, false, Stored::Tombstone)
            | (KeyPhase::Forgotten, false, Stored::Gone) => self,
            (_, false, _) => Stored::Unsure,
        }
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
    /// The kitchen's clock: the model reads the time from it too.
    clock: &'k Clock,
    case: usize,
    tenants: Vec<TenantId>,
    /// Each tenant's own tickets, in target order.
    own: Vec<Vec<TicketId>>,
    tickets: HashMap<TicketId, Modelled>,
    /// (tenant, action, key) -> what its first use left.
    used: HashMap<(usize, Action, usize), Used>,
    /// Tickets made by the sequence's creates, per tenant.
    made: Vec<usize>,
    /// Every write sent so far, for retries.
    sent: Vec<Request>,
}

impl<'k> Case<'k> {
    async fn new(kitchen: &'k Kitchen, clock: &'k Clock, case: usize) -> Self {
        let mut this = Self {
            kitchen,
            clock,
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
                    .write::<CreateTicket>(tenant.id, &key, &create_request(0).0)
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
            Step::Label {
                tenant,
                key,
                target,
                label,
                add,
            } => Request::Label {
                tenant,
                key,
                ticket: self.target(tenant, target),
                label,
                add,
            },
            Step::Retry(which) => {
                if self.sent.is_empty() {
                    return None;
                }
                self.sent[which.index(self.sent.len())].clone()
            }
            Step::Lookup { .. }
            | Step::Advance(_)
            | Step::AdvanceTo { .. }
            | Step::Sweep { .. } => return None,
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
        match *step {
            Step::Advance(by) => {
                self.clock.advance(ADVANCES[by]);
                return Ok(());
            }
            Step::AdvanceTo {
                key,
                retained,
                early,
            } => {
                self.advance_to(key, retained, early);
                return Ok(());
            }
            Step::Sweep { all } => return self.sweep(all).await,
            _ => {}
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
                    k.write::<CreateTicket>(self.tenants[tenant], &self.key(key), &draft)
                        .await,
                    ticket_view,
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
                    k.write::<UpdateTicket>(self.tenants[tenant], &self.key(key), &update)
                        .await,
                    ticket_view,
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
                    k.write::<TransitionTicket>(
                        self.tenants[tenant],
                        &self.key(key),
                        &(id.into(), draft.clone()),
                    )
                    .await,
                    ticket_view,
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
                    k.write::<AddComment>(
                        self.tenants[tenant],
                        &self.key(key),
                        &(id.into(), draft.clone()),
                    )
                    .await,
                    |c| (None, c.id.as_uuid()),
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
            Request::Label {
                tenant,
                key,
                ticket: id,
                label,
                add,
            } => {
                let draft = LabelDraft {
                    label: Some(LABELS[label].into()),
                };
                let (actor, key_of) = (self.tenants[tenant], self.key(key));
                let outcome = if add {
                    k.write::<AddLabel>(actor, &key_of, &(id.into(), draft.clone()))
                        .await
                } else {
                    k.write::<RemoveLabel>(actor, &key_of, &(id.into(), draft.clone()))
                        .await
                };
                let seen = Seen::of(outcome, ticket_view)?;
                let name = LABELS[label];
                let meaning = (name != "Bad").then_some(Meaning::Label {
                    ticket: id,
                    label: name,
                    add,
                });
                let action = if add {
                    Action::AddLabel
                } else {
                    Action::RemoveLabel
                };
                self.judge(request, (tenant, action, key), meaning, seen, |case| {
                    let Some(now) = case.visible(tenant, id) else {
                        return Rule::Refuse(Refusal::TicketNotFound { ticket_id: id });
                    };
                    // The model's tickets never reach the limit: three labels.
                    let mut next = now.clone();
                    let changed = if add {
                        next.labels.insert(name)
                    } else {
                        next.labels.remove(name)
                    };
                    if changed {
                        next.version += 1;
                        next.history += 1;
                    }
                    Rule::Apply(Some((id, next)))
                })?;
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
        let (_, action, k) = slot;
        let now = self.clock.now();
        let fail = |what: String| Err(TestCaseError::fail(format!("{step:?} at {now}: {what}")));
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
        let used = self.used.get(&slot).cloned();
        if let Some(used) = used {
            let same = used.meaning == meaning;
            let horizons = |op: &OperationRef| {
                used.dates_agree(op.created_at, (op.replayable_until, op.retained_until))
            };
            match (used.phase(now), seen) {
                (
                    KeyPhase::Replayable,
                    Seen::Replayed {
                        snapshot,
                        operation,
                    },
                ) if same => {
                    prop_assert_eq!(&snapshot, &used.frozen, "{:?}: replayed bytes", step);
                    prop_assert!(
                        horizons(&operation.reference()),
                        "{:?}: {:?}",
                        step,
                        operation
                    );
                    return Ok(());
                }
                (KeyPhase::Replayable | KeyPhase::Expired, Seen::Conflict { original })
                    if !same =>
                {
                    prop_assert_eq!(
                        (original.action, &original.key),
                        (action, &self.key(k)),
                        "{:?}",
                        step
                    );
                    // The original operation's horizons, not this attempt's.
                    prop_assert!(
                        horizons(&original),
                        "{:?}: {:?} vs {:?}",
                        step,
                        original,
                        used
                    );
                    return Ok(());
                }
                (
                    KeyPhase::Expired,
                    Seen::Expired {
                        current,
                        ticket,
                        resource,
                        operation,
                    },
                ) if same => {
                    prop_assert_eq!(resource, used.resource, "{:?}: the original resource", step);
                    prop_assert!(
                        horizons(&operation),
                        "{:?}: {:?} vs {:?}",
                        step,
                        operation,
                        used
                    );
                    match ticket {
                        // The ticket as the model has it now, not as it was.
                        Some(ticket) => {
                            let model = self.tickets.get(&ticket.id);
                            prop_assert!(
                                model.is_some_and(|m| m.agrees_with(&ticket)),
                                "{:?}: model {:?}, expired answer {:?}",
                                step,
                                model,
                                ticket
                            );
                        }
                        // A comment never changes: as it is now is as it was.
                        None => prop_assert_eq!(&current, &used.frozen, "{:?}: comment", step),
                    }
                    return Ok(());
                }
                // Past the tombstone horizon the key is free: the kitchen
                // forgets the record, whatever this attempt then does.
                (KeyPhase::Forgotten, fresh) => {
                    self.used.remove(&slot);
                    return self.judge_free(step, slot, meaning, fresh, rule);
                }
                (phase, other) => {
                    return fail(format!(
                        "key used by {:?} at {} ({}), this is {meaning:?}, kitchen answered {other:?}",
                        used.meaning,
                        used.first_use,
                        phase.as_str()
                    ));
                }
            }
        }
        self.judge_free(step, slot, meaning, seen, rule)
    }

    /// [`Case::judge`] for a key the model holds no record of.
    fn judge_free(
        &mut self,
        step: &Request,
        slot: (usize, Action, usize),
        meaning: Meaning,
        seen: Seen,
        rule: impl FnOnce(&Self) -> Rule,
    ) -> Result<(), TestCaseError> {
        let tenant = slot.0;
        let now = self.clock.now();
        let fail = |what: String| Err(TestCaseError::fail(format!("{step:?} at {now}: {what}")));
        match (rule(self), seen) {
            (Rule::Refuse(expected), Seen::Refused(actual)) => {
                prop_assert_eq!(actual, expected, "{:?}", step);
            }
            (
                Rule::Apply(after),
                Seen::Created {
                    snapshot,
                    ticket,
                    resource,
                    operation,
                },
            ) => {
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
                        let ticket = ticket.expect("a create answers its ticket");
                        let mut fresh = Modelled::fresh(tenant);
                        if meaning == Meaning::Create(2) {
                            fresh.priority = "high".into();
                        }
                        prop_assert!(
                            fresh.agrees_with(&ticket),
                            "{:?}: model {:?}, kitchen {:?}",
                            step,
                            fresh,
                            ticket
                        );
                        self.tickets.insert(ticket.id, fresh);
                        self.made[tenant] += 1;
                    }
                }
                let used = Used::new(meaning, snapshot, now, resource);
                prop_assert!(
                    used.dates_agree(
                        operation.created_at,
                        (operation.replayable_until, operation.retained_until)
                    ) && operation.resource_id == Some(resource),
                    "{:?}: model {:?}, record {:?}",
                    step,
                    used,
                    operation
                );
                self.used.insert(slot, used);
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

    /// Moves the clock to a horizon of a key the model holds (or just
    /// before it), if that is ahead.
    fn advance_to(&self, which: prop::sample::Index, retained: bool, early: bool) {
        // Sorted, so that a case runs the same way every time (and shrinks).
        let mut slots: Vec<_> = self.used.keys().collect();
        if slots.is_empty() {
            return;
        }
        slots.sort_by_key(|(t, a, k)| (*t, a.as_str(), *k));
        let used = &self.used[slots[which.index(slots.len())]];
        let horizon = if retained {
            used.retained_until
        } else {
            used.replayable_until
        };
        let to = if early {
            horizon - time::Duration::MICROSECOND
        } else {
            horizon
        };
        if to > self.clock.now() {
            self.clock.set(to);
        }
    }

    /// Runs the sweep, then checks every record of this case: the sweep
    /// changes no answer, only what is stored.
    async fn sweep(&mut self, all: bool) -> Result<(), TestCaseError> {
        let sweeper = self.kitchen.sweeper();
        let swept = if all {
            sweeper.sweep_due(&mut |_| {}).await
        } else {
            sweeper.sweep_batch().await
        };
        swept.map_err(|e| TestCaseError::fail(format!("infrastructure error: {e}")))?;
        let now = self.clock.now();
        for used in self.used.values_mut() {
            used.stored = used.stored.after_sweep(used.phase(now), all);
        }
        // Only the keys in use: the others have nothing to sweep (the end
        // of the case checks them all).
        let mut slots: Vec<_> = self.used.keys().copied().collect();
        slots.sort_by_key(|(t, a, k)| (*t, a.as_str(), *k));
        for (t, action, k) in slots {
            self.check_record(t, action, k).await?;
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

    /// The key's status answers what the model's clock rules say: the
    /// frozen bytes while replayable, `expired` with the resource and the
    /// dates after, nothing once forgotten (or never used). The raw record
    /// shows what the sweep did, and nothing more.
    async fn check_record(
        &self,
        tenant: usize,
        action: Action,
        k: usize,
    ) -> Result<(), TestCaseError> {
        let infra = |e: KitchenError| TestCaseError::fail(format!("infrastructure error: {e}"));
        let key = self.key(k);
        let status = self
            .kitchen
            .operation_status(self.tenants[tenant], action, &key)
            .await
            .map_err(infra)?;
        let now = self.clock.now();
        let at = format!("{tenant} {action} key {k} at {now}");
        let Some(used) = self.used.get(&(tenant, action, k)) else {
            prop_assert!(status.is_none(), "{}: {:?}", at, status);
            return Ok(());
        };
        // What is stored: a replayable key's status carries its record as
        // read. An expired one's shows the tombstone whether or not the sweep
        // has made it one yet, and a forgotten key has no status though the
        // sweep may not have deleted it yet: those need a read of their own.
        let raw = match &status {
            Some(status) if status.phase == KeyPhase::Replayable => Some(status.record.clone()),
            _ => self
                .kitchen
                .operation(self.tenants[tenant], action, &key)
                .await
                .map_err(infra)?,
        };
        let phase = used.phase(now);
        match (&status, phase) {
            (None, KeyPhase::Forgotten) => {}
            (Some(status), KeyPhase::Replayable) => {
                prop_assert_eq!(status.phase, phase, "{}", at);
                prop_assert_eq!(
                    status.record.result.as_ref().map(|r| r.as_str()),
                    Some(used.frozen.as_str()),
                    "{}",
                    at
                );
            }
            (Some(status), KeyPhase::Expired) => {
                let r = &status.record;
                prop_assert_eq!(status.phase, phase, "{}", at);
                prop_assert_eq!(r.resource_id, Some(used.resource), "{}", at);
                // The first answer is no longer given out, swept or not.
                prop_assert_eq!(r.result.as_ref(), None, "{}", at);
                prop_assert!(
                    used.dates_agree(r.created_at, (r.replayable_until, r.retained_until)),
                    "{}: model {:?}, record {:?}",
                    at,
                    used,
                    r
                );
            }
            (status, phase) => {
                return Err(TestCaseError::fail(format!(
                    "{at}: model {used:?} is {}, status {status:?}",
                    phase.as_str()
                )));
            }
        }
        prop_assert!(
            used.stored_agrees(raw.as_ref()),
            "{}: model {:?}, raw record {:?}",
            at,
            used,
            raw
        );
        Ok(())
    }

    /// [`Case::check_record`] for every key of the case.
    async fn check_records(&self) -> Result<(), TestCaseError> {
        for t in 0..TENANTS {
            for action in Action::ALL {
                for k in 0..KEYS {
                    self.check_record(t, action, k).await?;
                }
            }
        }
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
        }
        self.check_records().await
    }
}

async fn run_case(
    kitchen: &Kitchen,
    clock: &Clock,
    case: usize,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let mut model = Case::new(kitchen, clock, case).await;
    for step in steps {
        model.run(step).await?;
    }
    model.check_all().await
}

/// One database per backend for the whole run; every case gets fresh
/// tenants (and so fresh keys and tickets), so cases cannot see each other.
/// The clock only moves on, across cases too: a later case's sweeps also
/// sweep earlier cases' records, which no answer may notice.
fn model_agrees(backend: DatabaseKind) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let clock = Clock::manual(START);
    let (db, kitchen) = rt.block_on(async {
        let db = TestDatabase::new(backend).await;
        let kitchen = db
            .kitchen_with(KitchenConfig {
                clock: clock.clone(),
                replay_window: WINDOW,
                tombstone_horizon: HORIZON,
                sweep_batch: SWEEP_BATCH,
                // Many small batches: no rest between them here.
                sweep_pause: std::time::Duration::ZERO,
                ..KitchenConfig::default()
            })
            .await;
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
        rt.block_on(run_case(&kitchen, &clock, n, &steps))
    });
    rt.block_on(kitchen.close());
    drop(db);
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

#[test]
fn sqlite_model_agrees() {
    model_agrees(DatabaseKind::Sqlite);
}

#[test]
fn postgres_model_agrees() {
    model_agrees(DatabaseKind::Postgres);
}

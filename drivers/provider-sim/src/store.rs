//! The tracker's memory: tickets, change records, comments, remembered
//! idempotency keys, and the request counters behind `/_sim/counts`.
//!
//! One plain mutex guards it all. Every write is check-the-key, check the
//! request against the ticket, then write, with no `.await` in between, so
//! holding the lock for that step is what serialises concurrent requests
//! with the same key (the second finds the first one's key and replays it)
//! and what makes a version check and its update one step.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use time::OffsetDateTime;

use super::KeyPolicy;
use super::api::{
    ChangeKind, ChangeRefCount, CommentRefCount, Counts, FieldChange, RefCount, SimChange,
    SimComment, SimObject, SimTicket,
};
use super::requests::{NewComment, NewTicket, NewTransition, Request, TicketPatch};

/// What a write did.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Made this.
    Made(SimObject),
    /// The key was remembered with the same request: nothing made; this is
    /// the answer it gave then.
    Replayed(SimObject),
    /// Refused on its merits: nothing made.
    Refused(Refusal),
}

/// Why a request was refused on its merits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The ticket in the path does not exist.
    NoTicket(String),
    /// The key was remembered with a different request.
    KeyReused,
    /// `expected_version` is not the ticket's version.
    StaleVersion {
        ticket_id: String,
        version: u64,
        expected: u64,
    },
    /// A transition to the status the ticket is already in.
    AlreadyInStatus { ticket_id: String, status: String },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoTicket(id) => write!(f, "no ticket {id}"),
            Self::KeyReused => {
                f.write_str("Idempotency-Key was already used with a different request")
            }
            Self::StaleVersion {
                ticket_id,
                version,
                expected,
            } => write!(
                f,
                "ticket {ticket_id} is at version {version}, not {expected}"
            ),
            Self::AlreadyInStatus { ticket_id, status } => {
                write!(f, "ticket {ticket_id} is already {status}")
            }
        }
    }
}

/// Which endpoint a request arrived at, for the `*_received` counters.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arrival {
    Create,
    Update,
    Transition,
    Comment,
    TicketSearch,
    ChangeSearch,
    CommentSearch,
}

pub(crate) struct Store {
    keys: KeyPolicy,
    dedup_window: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    tickets: Vec<SimTicket>,
    changes: Vec<SimChange>,
    comments: Vec<SimComment>,
    remembered: HashMap<String, Remembered>,
    /// The newest object carrying each external reference: what
    /// `/_sim/copies` copies.
    newest: HashMap<String, Stored>,
    received: Received,
}

#[derive(Default)]
struct Received {
    creates: u64,
    updates: u64,
    transitions: u64,
    comments: u64,
    ticket_searches: u64,
    change_searches: u64,
    comment_searches: u64,
}

struct Remembered {
    first_seen: Instant,
    request: Request,
    /// The answer it gave, as it was then: a replay says the same again.
    answer: SimObject,
}

/// Where an object lives in `State`.
#[derive(Debug, Clone, Copy)]
enum Stored {
    Ticket(usize),
    Change(usize),
    Comment(usize),
}

/// A write that passed its checks, ready to apply.
enum Plan {
    Ticket(SimTicket),
    /// `change.ticket` is the ticket at `at` as the change leaves it.
    Change {
        at: usize,
        change: SimChange,
    },
    Comment(SimComment),
}

impl Store {
    pub(crate) fn new(keys: KeyPolicy, dedup_window: Duration) -> Self {
        Self {
            keys,
            dedup_window,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave `State` half-updated in a way that
        // matters to a test fixture; keep serving rather than cascade.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn note(&self, arrival: Arrival) {
        let received = &mut self.state().received;
        let counter = match arrival {
            Arrival::Create => &mut received.creates,
            Arrival::Update => &mut received.updates,
            Arrival::Transition => &mut received.transitions,
            Arrival::Comment => &mut received.comments,
            Arrival::TicketSearch => &mut received.ticket_searches,
            Arrival::ChangeSearch => &mut received.change_searches,
            Arrival::CommentSearch => &mut received.comment_searches,
        };
        *counter += 1;
    }

    /// The key as this simulator treats it: ignore mode forgets every key.
    fn honoured<'k>(&self, key: Option<&'k str>) -> Option<&'k str> {
        match self.keys {
            KeyPolicy::Honour => key,
            KeyPolicy::Ignore => None,
        }
    }

    /// What a remembered key says about `request`: `None` when the key is
    /// unknown or its window has passed (it is forgotten, as real
    /// providers do), else the answer to replay or the refusal.
    fn recall(
        &self,
        state: &State,
        key: Option<&str>,
        request: &Request,
    ) -> Option<Result<SimObject, Refusal>> {
        let seen = state.remembered.get(self.honoured(key)?)?;
        if seen.first_seen.elapsed() >= self.dedup_window {
            return None;
        }
        Some(if seen.request == *request {
            Ok(seen.answer.clone())
        } else {
            Err(Refusal::KeyReused)
        })
    }

    /// Refuses, before any fault is taken, what would be refused on its
    /// merits if it were committed now; otherwise gives the title fault
    /// rules match: a create's own, or that of the ticket acted on as it
    /// is now.
    pub(crate) fn admit(&self, request: &Request, key: Option<&str>) -> Result<String, Refusal> {
        let state = self.state();
        let title = match request {
            Request::Create(ticket) => ticket.title.clone(),
            Request::Update { ticket_id, .. }
            | Request::Transition { ticket_id, .. }
            | Request::Comment { ticket_id, .. } => {
                let at = state.ticket_at(ticket_id)?;
                state.tickets[at].title.clone()
            }
        };
        match self.recall(&state, key, request) {
            Some(Ok(_)) => {}
            Some(Err(refusal)) => return Err(refusal),
            None => {
                state.plan(request, OffsetDateTime::now_utc())?;
            }
        }
        Ok(title)
    }

    /// Does what `request` asks, or replays the answer `key` got within
    /// the dedup window (honour mode only). The request's checks are made
    /// again here, with the write: a hang, or another request, may have
    /// changed the ticket since [`Store::admit`].
    pub(crate) fn commit(&self, request: Request, key: Option<&str>) -> Outcome {
        let mut state = self.state();
        match self.recall(&state, key, &request) {
            Some(Ok(answer)) => return Outcome::Replayed(answer),
            Some(Err(refusal)) => return Outcome::Refused(refusal),
            None => {}
        }
        let plan = match state.plan(&request, OffsetDateTime::now_utc()) {
            Ok(plan) => plan,
            Err(refusal) => return Outcome::Refused(refusal),
        };
        let made = state.write(plan);
        if let Some(key) = self.honoured(key) {
            let remembered = Remembered {
                first_seen: Instant::now(),
                request,
                answer: made.clone(),
            };
            state.remembered.insert(key.to_owned(), remembered);
        }
        Outcome::Made(made)
    }

    /// Tickets with this external reference, oldest first.
    pub(crate) fn tickets(&self, external_ref: &str) -> Vec<SimTicket> {
        let state = self.state();
        state
            .tickets
            .iter()
            .filter(|t| t.external_ref == external_ref)
            .cloned()
            .collect()
    }

    /// Change records with this external reference (on this ticket, if
    /// given), oldest first.
    pub(crate) fn changes(&self, external_ref: &str, ticket_id: Option<&str>) -> Vec<SimChange> {
        let state = self.state();
        state
            .changes
            .iter()
            .filter(|c| c.external_ref == external_ref)
            .filter(|c| ticket_id.is_none_or(|id| c.ticket_id == id))
            .cloned()
            .collect()
    }

    /// Comments with this external reference (on this ticket, if given),
    /// oldest first.
    pub(crate) fn comments(&self, external_ref: &str, ticket_id: Option<&str>) -> Vec<SimComment> {
        let state = self.state();
        state
            .comments
            .iter()
            .filter(|c| c.external_ref == external_ref)
            .filter(|c| ticket_id.is_none_or(|id| c.ticket_id == id))
            .cloned()
            .collect()
    }

    pub(crate) fn get(&self, id: &str) -> Option<SimTicket> {
        let state = self.state();
        let at = state.ticket_at(id).ok()?;
        Some(state.tickets[at].clone())
    }

    /// Plants a duplicate "made by someone else": one more object like the
    /// newest carrying `external_ref`, with a fresh id. A copied change
    /// record does not change its ticket again. `None` when nothing
    /// carries the reference.
    pub(crate) fn copy(&self, external_ref: &str) -> Option<SimObject> {
        let mut state = self.state();
        let now = OffsetDateTime::now_utc();
        let copied = match *state.newest.get(external_ref)? {
            Stored::Ticket(at) => {
                let mut ticket = state.tickets[at].clone();
                ticket.id = state.next_ticket_id();
                ticket.created_at = now;
                SimObject::Ticket(state.push_ticket(ticket))
            }
            Stored::Change(at) => {
                let mut change = state.changes[at].clone();
                change.id = state.next_change_id();
                change.created_at = now;
                SimObject::Change(state.push_change(change))
            }
            Stored::Comment(at) => {
                let mut comment = state.comments[at].clone();
                comment.id = state.next_comment_id();
                comment.created_at = now;
                SimObject::Comment(state.push_comment(comment))
            }
        };
        Some(copied)
    }

    pub(crate) fn counts(&self) -> Counts {
        let state = self.state();
        let received = &state.received;
        Counts {
            total_tickets: state.tickets.len() as u64,
            creates_received: received.creates,
            searches_received: received.ticket_searches
                + received.change_searches
                + received.comment_searches,
            by_external_ref: state.tickets_by_ref(),
            updates_received: received.updates,
            transitions_received: received.transitions,
            comments_received: received.comments,
            ticket_searches_received: received.ticket_searches,
            change_searches_received: received.change_searches,
            comment_searches_received: received.comment_searches,
            total_changes: state.changes.len() as u64,
            total_comments: state.comments.len() as u64,
            changes_by_external_ref: state.changes_by_ref(),
            comments_by_external_ref: state.comments_by_ref(),
        }
    }
}

impl State {
    /// Where ticket `id` is. Ids are `SIM-{n}` for the n-th ticket, so
    /// this is a lookup, not a scan.
    fn ticket_at(&self, id: &str) -> Result<usize, Refusal> {
        id.strip_prefix("SIM-")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
            .filter(|at| self.tickets.get(*at).is_some_and(|t| t.id == id))
            .ok_or_else(|| Refusal::NoTicket(id.to_owned()))
    }

    fn next_ticket_id(&self) -> String {
        format!("SIM-{}", self.tickets.len() + 1)
    }

    fn next_change_id(&self) -> String {
        format!("CHG-{}", self.changes.len() + 1)
    }

    fn next_comment_id(&self) -> String {
        format!("CMT-{}", self.comments.len() + 1)
    }

    /// Checks `request` against the tickets as they are and works out what
    /// it would write, writing nothing.
    fn plan(&self, request: &Request, now: OffsetDateTime) -> Result<Plan, Refusal> {
        match request {
            Request::Create(ticket) => Ok(Plan::Ticket(self.new_ticket(ticket, now))),
            Request::Update { ticket_id, patch } => {
                let at = self.ticket_at(ticket_id)?;
                let change = self.update(at, patch, now)?;
                Ok(Plan::Change { at, change })
            }
            Request::Transition {
                ticket_id,
                transition,
            } => {
                let at = self.ticket_at(ticket_id)?;
                let change = self.transition(at, transition, now)?;
                Ok(Plan::Change { at, change })
            }
            Request::Comment { ticket_id, comment } => {
                let at = self.ticket_at(ticket_id)?;
                Ok(Plan::Comment(self.new_comment(at, comment, now)))
            }
        }
    }

    fn new_ticket(&self, request: &NewTicket, now: OffsetDateTime) -> SimTicket {
        SimTicket {
            id: self.next_ticket_id(),
            external_ref: request.external_ref.clone(),
            project_id: request.project_id.clone(),
            title: request.title.clone(),
            description: request.description.clone(),
            priority: request.priority.clone(),
            created_at: now,
            status: "open".to_owned(),
            version: 1,
            assignee: None,
            updated_at: None,
        }
    }

    fn update(
        &self,
        at: usize,
        patch: &TicketPatch,
        now: OffsetDateTime,
    ) -> Result<SimChange, Refusal> {
        let before = &self.tickets[at];
        if let Some(expected) = patch.expected_version
            && expected != before.version
        {
            return Err(Refusal::StaleVersion {
                ticket_id: before.id.clone(),
                version: before.version,
                expected,
            });
        }
        let mut after = before.clone();
        let mut changes = BTreeMap::new();
        set(&mut changes, "title", &mut after.title, &patch.title);
        set(
            &mut changes,
            "description",
            &mut after.description,
            &patch.description,
        );
        set(
            &mut changes,
            "priority",
            &mut after.priority,
            &patch.priority,
        );
        set(
            &mut changes,
            "assignee",
            &mut after.assignee,
            &patch.assignee,
        );
        // A patch that changes nothing is still recorded (the caller's
        // effect happened), but the ticket itself did not move.
        if !changes.is_empty() {
            after.version += 1;
            after.updated_at = Some(now);
        }
        Ok(self.change_record(ChangeKind::Update, &patch.external_ref, changes, after, now))
    }

    fn transition(
        &self,
        at: usize,
        transition: &NewTransition,
        now: OffsetDateTime,
    ) -> Result<SimChange, Refusal> {
        let before = &self.tickets[at];
        if before.status == transition.to {
            return Err(Refusal::AlreadyInStatus {
                ticket_id: before.id.clone(),
                status: before.status.clone(),
            });
        }
        let mut after = before.clone();
        let mut changes = BTreeMap::new();
        changes.insert(
            "status".to_owned(),
            FieldChange {
                from: Value::from(before.status.as_str()),
                to: Value::from(transition.to.as_str()),
            },
        );
        if let Some(reason) = &transition.reason {
            changes.insert(
                "reason".to_owned(),
                FieldChange {
                    from: Value::Null,
                    to: Value::from(reason.as_str()),
                },
            );
        }
        after.status.clone_from(&transition.to);
        after.version += 1;
        after.updated_at = Some(now);
        Ok(self.change_record(
            ChangeKind::Transition,
            &transition.external_ref,
            changes,
            after,
            now,
        ))
    }

    fn change_record(
        &self,
        kind: ChangeKind,
        external_ref: &str,
        changes: BTreeMap<String, FieldChange>,
        after: SimTicket,
        now: OffsetDateTime,
    ) -> SimChange {
        SimChange {
            id: self.next_change_id(),
            ticket_id: after.id.clone(),
            external_ref: external_ref.to_owned(),
            kind,
            changes,
            ticket: after,
            created_at: now,
        }
    }

    fn new_comment(&self, at: usize, request: &NewComment, now: OffsetDateTime) -> SimComment {
        SimComment {
            id: self.next_comment_id(),
            ticket_id: self.tickets[at].id.clone(),
            external_ref: request.external_ref.clone(),
            body: request.body.clone(),
            created_at: now,
        }
    }

    fn write(&mut self, plan: Plan) -> SimObject {
        match plan {
            Plan::Ticket(ticket) => SimObject::Ticket(self.push_ticket(ticket)),
            Plan::Change { at, change } => {
                self.tickets[at] = change.ticket.clone();
                SimObject::Change(self.push_change(change))
            }
            Plan::Comment(comment) => SimObject::Comment(self.push_comment(comment)),
        }
    }

    fn push_ticket(&mut self, ticket: SimTicket) -> SimTicket {
        let stored = Stored::Ticket(self.tickets.len());
        self.newest.insert(ticket.external_ref.clone(), stored);
        self.tickets.push(ticket.clone());
        ticket
    }

    fn push_change(&mut self, change: SimChange) -> SimChange {
        let stored = Stored::Change(self.changes.len());
        self.newest.insert(change.external_ref.clone(), stored);
        self.changes.push(change.clone());
        change
    }

    fn push_comment(&mut self, comment: SimComment) -> SimComment {
        let stored = Stored::Comment(self.comments.len());
        self.newest.insert(comment.external_ref.clone(), stored);
        self.comments.push(comment.clone());
        comment
    }

    /// A ticket's title now, for the counts (empty if it is unknown, which
    /// cannot happen: tickets are never deleted).
    fn title_of(&self, ticket_id: &str) -> String {
        self.ticket_at(ticket_id)
            .map(|at| self.tickets[at].title.clone())
            .unwrap_or_default()
    }

    fn tickets_by_ref(&self) -> Vec<RefCount> {
        let mut by_ref: Vec<RefCount> = Vec::new();
        let mut position: HashMap<&str, usize> = HashMap::new();
        for ticket in &self.tickets {
            let at = *position
                .entry(ticket.external_ref.as_str())
                .or_insert_with(|| {
                    by_ref.push(RefCount {
                        external_ref: ticket.external_ref.clone(),
                        tickets: 0,
                        titles: Vec::new(),
                    });
                    by_ref.len() - 1
                });
            by_ref[at].tickets += 1;
            by_ref[at].titles.push(ticket.title.clone());
        }
        by_ref
    }

    fn changes_by_ref(&self) -> Vec<ChangeRefCount> {
        let mut by_ref: Vec<ChangeRefCount> = Vec::new();
        let mut position: HashMap<(&str, ChangeKind, &str), usize> = HashMap::new();
        for change in &self.changes {
            let group = (
                change.external_ref.as_str(),
                change.kind,
                change.ticket_id.as_str(),
            );
            let at = *position.entry(group).or_insert_with(|| {
                by_ref.push(ChangeRefCount {
                    external_ref: change.external_ref.clone(),
                    kind: change.kind,
                    count: 0,
                    ticket_id: change.ticket_id.clone(),
                    ticket_title: self.title_of(&change.ticket_id),
                });
                by_ref.len() - 1
            });
            by_ref[at].count += 1;
        }
        by_ref
    }

    fn comments_by_ref(&self) -> Vec<CommentRefCount> {
        let mut by_ref: Vec<CommentRefCount> = Vec::new();
        let mut position: HashMap<(&str, &str), usize> = HashMap::new();
        for comment in &self.comments {
            let group = (comment.external_ref.as_str(), comment.ticket_id.as_str());
            let at = *position.entry(group).or_insert_with(|| {
                by_ref.push(CommentRefCount {
                    external_ref: comment.external_ref.clone(),
                    count: 0,
                    ticket_id: comment.ticket_id.clone(),
                    ticket_title: self.title_of(&comment.ticket_id),
                });
                by_ref.len() - 1
            });
            by_ref[at].count += 1;
        }
        by_ref
    }
}

/// Applies one field of a patch (`None` keeps it) and records it in
/// `changes` if its value changed.
fn set<T>(changes: &mut BTreeMap<String, FieldChange>, name: &str, field: &mut T, new: &Option<T>)
where
    T: Clone + PartialEq + Into<Value>,
{
    if let Some(new) = new
        && field != new
    {
        let from = std::mem::replace(field, new.clone());
        changes.insert(
            name.to_owned(),
            FieldChange {
                from: from.into(),
                to: new.clone().into(),
            },
        );
    }
}

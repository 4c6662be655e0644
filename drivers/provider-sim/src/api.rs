//! The simulator's JSON, shared by its routes and by [`SimClient`](super::SimClient)
//! so the two cannot drift apart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

/// The statuses a ticket can be in; a transition may go from any to any other.
pub const STATUSES: [&str; 4] = ["open", "in_progress", "resolved", "closed"];

/// A ticket as the simulated tracker stores and answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimTicket {
    /// `SIM-1`, `SIM-2`, … in creation order.
    pub id: String,
    /// The caller's reference for the ticket (the thing duplicates are counted by).
    pub external_ref: String,
    /// The project it was filed under.
    pub project_id: String,
    /// The title.
    pub title: String,
    /// The description, if any.
    pub description: Option<String>,
    /// The priority, as the caller spelled it.
    pub priority: String,
    /// When the simulator made it.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// One of [`STATUSES`]; `open` when made.
    pub status: String,
    /// 1 when made; one more for each update that changed something and
    /// each transition.
    pub version: u64,
    /// Who it is assigned to, if anyone.
    pub assignee: Option<String>,
    /// When an update or transition last changed it (`None` until then).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub updated_at: Option<OffsetDateTime>,
}

/// What made a [`SimChange`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// `PATCH /api/tickets/{id}`.
    Update,
    /// `POST /api/tickets/{id}/transitions`.
    Transition,
}

/// One field's change in a [`SimChange`]: JSON values, `null` for none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    /// The value before.
    pub from: Value,
    /// The value after.
    pub to: Value,
}

/// A change record: what an update or a transition did to a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimChange {
    /// `CHG-1`, `CHG-2`, … in the order they were made.
    pub id: String,
    /// The ticket it changed.
    pub ticket_id: String,
    /// The caller's reference for this change.
    pub external_ref: String,
    /// Update or transition.
    pub kind: ChangeKind,
    /// Only the fields whose value changed (empty for an update that
    /// changed nothing). A transition has `status`, and `reason` (from
    /// `null`) when one was given.
    pub changes: BTreeMap<String, FieldChange>,
    /// The ticket as this change left it (not as it is now).
    pub ticket: SimTicket,
    /// When the simulator made it.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A comment on a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimComment {
    /// `CMT-1`, `CMT-2`, … in the order they were made.
    pub id: String,
    /// The ticket it is on.
    pub ticket_id: String,
    /// The caller's reference for this comment.
    pub external_ref: String,
    /// The text.
    pub body: String,
    /// When the simulator made it.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Anything the tracker makes: what a create, update, transition or comment
/// answers, and what `POST /_sim/copies` made. On the wire it is the object
/// itself (untagged); their required fields tell them apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SimObject {
    /// A change record (tried first: it has the most required fields).
    Change(SimChange),
    /// A comment.
    Comment(SimComment),
    /// A ticket.
    Ticket(SimTicket),
}

impl SimObject {
    /// Its external reference.
    pub fn external_ref(&self) -> &str {
        match self {
            Self::Change(c) => &c.external_ref,
            Self::Comment(c) => &c.external_ref,
            Self::Ticket(t) => &t.external_ref,
        }
    }

    /// Its id (`SIM-`, `CHG-` or `CMT-`).
    pub fn id(&self) -> &str {
        match self {
            Self::Change(c) => &c.id,
            Self::Comment(c) => &c.id,
            Self::Ticket(t) => &t.id,
        }
    }
}

/// `GET /api/tickets?external_ref=` answers this.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TicketsFound {
    pub tickets: Vec<SimTicket>,
}

/// `GET /api/changes?external_ref=` answers this.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ChangesFound {
    pub changes: Vec<SimChange>,
}

/// `GET /api/comments?external_ref=` answers this.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CommentsFound {
    pub comments: Vec<SimComment>,
}

/// `POST /_sim/copies` takes this.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CopyRequest {
    pub external_ref: String,
}

/// Which requests a [`FaultRule`] watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultOn {
    /// `POST /api/tickets`.
    #[default]
    Create,
    /// Every search: `GET /api/tickets`, `/api/changes` and `/api/comments`
    /// with `?external_ref=`.
    Search,
    /// `PATCH /api/tickets/{id}`.
    Update,
    /// `POST /api/tickets/{id}/transitions`.
    Transition,
    /// `POST /api/tickets/{id}/comments`.
    Comment,
}

/// What a matching request suffers. "Commit" is the write the request asks
/// for (the ticket, the change, the comment). On a search there is nothing
/// to commit, so the "commit" half of a fault is a no-op there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// Wait `ms`, then behave normally.
    Latency {
        /// Milliseconds to wait.
        ms: u64,
    },
    /// Answer `503` and make nothing.
    FailBeforeCommit,
    /// Commit, then close the connection without answering.
    CommitThenDrop,
    /// Commit, then answer `500`.
    #[serde(rename = "commit_then_500")]
    CommitThen500,
    /// Keep the request open `ms`, then commit (even if the client has
    /// gone) and answer whoever is still there.
    Hang {
        /// Milliseconds to hold the request.
        ms: u64,
    },
    /// Answer `422` and make nothing.
    Reject,
}

/// One scheduled fault: `POST /_sim/faults`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRule {
    /// Which kind of request it watches (default `create`).
    #[serde(default)]
    pub on: FaultOn,
    /// Match only requests whose ticket's title contains this: the title a
    /// create asks for, or the title of the ticket an update, transition
    /// or comment acts on as it is when the request arrives. Not for
    /// searches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_contains: Option<String>,
    /// Match only requests for this external reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<String>,
    /// What happens to a matching request.
    pub fault: Fault,
    /// How many matching requests it hits (default 1).
    #[serde(default = "one")]
    pub times: u32,
}

fn one() -> u32 {
    1
}

impl FaultRule {
    /// A rule that hits the next request of kind `on` (any until narrowed).
    pub fn on(on: FaultOn, fault: Fault) -> Self {
        Self {
            on,
            title_contains: None,
            external_ref: None,
            fault,
            times: 1,
        }
    }

    /// A rule that hits the next create (any create until narrowed).
    pub fn create(fault: Fault) -> Self {
        Self::on(FaultOn::Create, fault)
    }

    /// A rule that hits the next search of any kind (any search until narrowed).
    pub fn search(fault: Fault) -> Self {
        Self::on(FaultOn::Search, fault)
    }

    /// A rule that hits the next update (any update until narrowed).
    pub fn update(fault: Fault) -> Self {
        Self::on(FaultOn::Update, fault)
    }

    /// A rule that hits the next transition (any transition until narrowed).
    pub fn transition(fault: Fault) -> Self {
        Self::on(FaultOn::Transition, fault)
    }

    /// A rule that hits the next comment (any comment until narrowed).
    pub fn comment(fault: Fault) -> Self {
        Self::on(FaultOn::Comment, fault)
    }

    /// Narrows the rule to requests whose ticket's title contains `part`
    /// (see [`FaultRule::title_contains`](FaultRule#structfield.title_contains)).
    #[must_use]
    pub fn title_contains(mut self, part: impl Into<String>) -> Self {
        self.title_contains = Some(part.into());
        self
    }

    /// Narrows the rule to requests for `external_ref`.
    #[must_use]
    pub fn external_ref(mut self, external_ref: impl Into<String>) -> Self {
        self.external_ref = Some(external_ref.into());
        self
    }

    /// Lets the rule hit `times` matching requests instead of one.
    #[must_use]
    pub fn times(mut self, times: u32) -> Self {
        self.times = times;
        self
    }
}

/// The ground truth: `GET /_sim/counts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Tickets that exist.
    pub total_tickets: u64,
    /// `POST /api/tickets` requests that arrived, valid or not.
    pub creates_received: u64,
    /// Searches of every kind (tickets, changes, comments) that arrived,
    /// valid or not.
    pub searches_received: u64,
    /// Tickets per external reference, in the order each reference first
    /// got a ticket.
    pub by_external_ref: Vec<RefCount>,
    /// `PATCH /api/tickets/{id}` requests that arrived, valid or not.
    pub updates_received: u64,
    /// `POST /api/tickets/{id}/transitions` requests that arrived, valid or not.
    pub transitions_received: u64,
    /// `POST /api/tickets/{id}/comments` requests that arrived, valid or not.
    pub comments_received: u64,
    /// `GET /api/tickets?external_ref=` requests (part of `searches_received`).
    pub ticket_searches_received: u64,
    /// `GET /api/changes` requests (part of `searches_received`).
    pub change_searches_received: u64,
    /// `GET /api/comments` requests (part of `searches_received`).
    pub comment_searches_received: u64,
    /// Change records that exist.
    pub total_changes: u64,
    /// Comments that exist.
    pub total_comments: u64,
    /// Change records per (external reference, kind, ticket), in order of
    /// first appearance.
    pub changes_by_external_ref: Vec<ChangeRefCount>,
    /// Comments per (external reference, ticket), in order of first
    /// appearance.
    pub comments_by_external_ref: Vec<CommentRefCount>,
}

impl Counts {
    /// How many tickets exist for `external_ref` (0 when none).
    pub fn tickets_for(&self, external_ref: &str) -> u64 {
        self.by_external_ref
            .iter()
            .find(|r| r.external_ref == external_ref)
            .map_or(0, |r| r.tickets)
    }

    /// How many tickets have exactly this title, whatever their reference.
    pub fn tickets_titled(&self, title: &str) -> usize {
        self.by_external_ref
            .iter()
            .flat_map(|r| &r.titles)
            .filter(|t| *t == title)
            .count()
    }

    /// Requests that asked for a write (creates, updates, transitions and
    /// comments), valid or not: what a "a read never writes" test watches.
    pub fn effects_received(&self) -> u64 {
        self.creates_received
            + self.updates_received
            + self.transitions_received
            + self.comments_received
    }

    /// How many change records (of either kind) exist for `external_ref`
    /// (0 when none).
    pub fn changes_for(&self, external_ref: &str) -> u64 {
        self.changes_by_external_ref
            .iter()
            .filter(|r| r.external_ref == external_ref)
            .map(|r| r.count)
            .sum()
    }

    /// How many comments exist for `external_ref` (0 when none).
    pub fn comments_for(&self, external_ref: &str) -> u64 {
        self.comments_by_external_ref
            .iter()
            .filter(|r| r.external_ref == external_ref)
            .map(|r| r.count)
            .sum()
    }

    /// How many change records of `kind` exist on tickets whose current
    /// title is exactly `title`, whatever their reference.
    pub fn changes_on_ticket_titled(&self, kind: ChangeKind, title: &str) -> usize {
        self.changes_by_external_ref
            .iter()
            .filter(|r| r.kind == kind && r.ticket_title == title)
            .map(|r| usize::try_from(r.count).unwrap_or(usize::MAX))
            .sum()
    }

    /// How many change records of `kind` exist on the ticket with the
    /// simulator's id `ticket_id`, whatever their reference.
    pub fn changes_on_ticket(&self, kind: ChangeKind, ticket_id: &str) -> usize {
        self.changes_by_external_ref
            .iter()
            .filter(|r| r.kind == kind && r.ticket_id == ticket_id)
            .map(|r| usize::try_from(r.count).unwrap_or(usize::MAX))
            .sum()
    }

    /// How many comments exist on the ticket with the simulator's id
    /// `ticket_id`, whatever their reference.
    pub fn comments_on_ticket(&self, ticket_id: &str) -> usize {
        self.comments_by_external_ref
            .iter()
            .filter(|r| r.ticket_id == ticket_id)
            .map(|r| usize::try_from(r.count).unwrap_or(usize::MAX))
            .sum()
    }

    /// How many comments exist on tickets whose current title is exactly
    /// `title`, whatever their reference.
    pub fn comments_on_ticket_titled(&self, title: &str) -> usize {
        self.comments_by_external_ref
            .iter()
            .filter(|r| r.ticket_title == title)
            .map(|r| usize::try_from(r.count).unwrap_or(usize::MAX))
            .sum()
    }
}

/// The tickets of one external reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefCount {
    /// The external reference.
    pub external_ref: String,
    /// How many tickets carry it (more than 1 is a duplicate).
    pub tickets: u64,
    /// Their titles, oldest first.
    pub titles: Vec<String>,
}

/// The change records of one external reference, of one kind, on one ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRefCount {
    /// The external reference.
    pub external_ref: String,
    /// Update or transition.
    pub kind: ChangeKind,
    /// How many change records carry it (more than 1 is a duplicate).
    pub count: u64,
    /// The ticket they changed.
    pub ticket_id: String,
    /// That ticket's title now.
    pub ticket_title: String,
}

/// The comments of one external reference on one ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentRefCount {
    /// The external reference.
    pub external_ref: String,
    /// How many comments carry it (more than 1 is a duplicate).
    pub count: u64,
    /// The ticket they are on.
    pub ticket_id: String,
    /// That ticket's title now.
    pub ticket_title: String,
}

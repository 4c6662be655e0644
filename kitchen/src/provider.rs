//! The port to a ticket provider: a system the kitchen does not own (a
//! hosted tracker, a helpdesk) that keeps the tickets for us, with their
//! changes and comments.
//!
//! The kitchen decides what to send and what an answer means for the effect;
//! an adapter (see the `provider-client` crate for HTTP) only carries the
//! request and sorts the reply into one of the few kinds below. Sorting is
//! the adapter's one real job, because it decides whether a retry may be
//! sent blindly: only [`Dispatched::NotSent`] and [`Dispatched::Rejected`]
//! prove that nothing was made.
//!
//! Every write is one effect at the provider, which keeps one object for it
//! carrying the effect's external reference ([`EffectKind`]): a ticket for a
//! create, an entry in the ticket's changelog for an update or a move, a
//! comment for a comment. A search by that reference among objects of that
//! kind is how a lost answer is reconciled.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;

use crate::domain::change::Changes;
use crate::domain::patch::Setting;
use crate::domain::status::TicketStatus;
use crate::domain::ticket::{Assignee, Description, Priority, Title, Version};

/// A boxed future, so that a [`TicketProvider`] can live behind `dyn`.
pub type ProviderFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the provider keeps for one effect, and so where a search for the
/// effect's external reference looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EffectKind {
    /// A ticket (`create_ticket`).
    Ticket,
    /// An entry in a ticket's changelog (`update_ticket`,
    /// `transition_ticket`).
    Change,
    /// A comment on a ticket (`add_comment`).
    Comment,
}

impl EffectKind {
    /// As the docs and logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ticket => "ticket",
            Self::Change => "change",
            Self::Comment => "comment",
        }
    }
}

/// What a dispatch asks the provider to do. Tickets are named by the
/// provider's own ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderWrite {
    /// Make a ticket.
    CreateTicket {
        /// Project slug.
        project_id: String,
        /// One-line summary.
        title: String,
        /// Longer text, if any.
        description: Option<String>,
        /// `low`, `normal`, `high` or `urgent`.
        priority: String,
    },
    /// Edit a ticket's fields.
    UpdateTicket {
        /// The provider's id of the ticket.
        ticket: String,
        /// Refuse unless the ticket is at this version (the caller's
        /// `If-Match`).
        expected_version: Option<i64>,
        /// The new title.
        title: Setting<String>,
        /// The new description; `Set(None)` removes it.
        description: Setting<Option<String>>,
        /// The new priority.
        priority: Setting<String>,
        /// The new assignee; `Set(None)` unassigns.
        assignee: Setting<Option<String>>,
    },
    /// Move a ticket to another status.
    TransitionTicket {
        /// The provider's id of the ticket.
        ticket: String,
        /// `open`, `in_progress`, `resolved` or `closed`.
        to: String,
        /// Why, if the caller said.
        reason: Option<String>,
    },
    /// Add a comment to a ticket.
    AddComment {
        /// The provider's id of the ticket.
        ticket: String,
        /// The comment's text.
        body: String,
    },
}

impl ProviderWrite {
    /// What the provider keeps for this write.
    pub fn kind(&self) -> EffectKind {
        match self {
            Self::CreateTicket { .. } => EffectKind::Ticket,
            Self::UpdateTicket { .. } | Self::TransitionTicket { .. } => EffectKind::Change,
            Self::AddComment { .. } => EffectKind::Comment,
        }
    }

    /// The provider's id of the ticket the write acts on (none for a
    /// create).
    pub fn ticket(&self) -> Option<&str> {
        match self {
            Self::CreateTicket { .. } => None,
            Self::UpdateTicket { ticket, .. }
            | Self::TransitionTicket { ticket, .. }
            | Self::AddComment { ticket, .. } => Some(ticket),
        }
    }
}

/// What a dispatch sends: the write and the name of its effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Sent as the provider's idempotency key and stored on the object the
    /// write makes as its searchable external reference; the same on every
    /// re-dispatch.
    pub external_ref: String,
    /// What to do.
    pub write: ProviderWrite,
}

/// What a search looks for: the object of `kind` carrying `external_ref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// Where to look.
    pub kind: EffectKind,
    /// The effect's name.
    pub external_ref: String,
    /// The provider's id of the ticket the effect acted on, when there is
    /// one: a tracker whose changelog or comments are kept per ticket is
    /// searched there.
    pub ticket: Option<String>,
}

/// A ticket as the provider reports it after a change: the state the
/// service's local copy mirrors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderTicketState {
    /// The provider's id.
    pub id: String,
    /// Its title.
    pub title: Title,
    /// Its description, if any.
    pub description: Option<Description>,
    /// Its priority.
    pub priority: Priority,
    /// Its status.
    pub status: TicketStatus,
    /// Who works on it, if anyone.
    pub assignee: Option<Assignee>,
    /// The provider's version of it: 1 at creation, +1 per change.
    pub version: Version,
}

/// The object the provider keeps for an effect: the receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderEffect {
    /// A ticket, by the provider's id.
    Ticket {
        /// The provider's id for it.
        id: String,
    },
    /// A changelog entry: what changed, and the ticket as the change left
    /// it.
    Change {
        /// The provider's id of the entry.
        id: String,
        /// Each field's value before and after.
        changes: Changes,
        /// The ticket right after this change.
        ticket: ProviderTicketState,
    },
    /// A comment, by the provider's id.
    Comment {
        /// The provider's id for it.
        id: String,
    },
}

impl ProviderEffect {
    /// Which kind of object it is.
    pub fn kind(&self) -> EffectKind {
        match self {
            Self::Ticket { .. } => EffectKind::Ticket,
            Self::Change { .. } => EffectKind::Change,
            Self::Comment { .. } => EffectKind::Comment,
        }
    }

    /// The provider's id of the object.
    pub fn id(&self) -> &str {
        match self {
            Self::Ticket { id } | Self::Change { id, .. } | Self::Comment { id } => id,
        }
    }
}

/// The receipt of an effect: the object that carries its reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderReceipt {
    /// The external reference it carries.
    pub external_ref: String,
    /// What it is.
    pub effect: ProviderEffect,
}

/// How a dispatch ended, as far as the caller of the provider can know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatched {
    /// The provider did it, or (`replayed`) answered with what its dedup
    /// window remembered for this key.
    Done {
        /// What it made.
        receipt: ProviderReceipt,
        /// Whether the provider said this was a replay of an earlier write.
        replayed: bool,
    },
    /// The provider answered that it will not do this write (a 4xx answer
    /// on the merits: invalid, no such ticket, another version, a move its
    /// workflow forbids): provably nothing was made.
    Rejected(String),
    /// The request never reached the provider (connection refused, name
    /// not resolved, throttled): provably nothing was made.
    NotSent(String),
    /// The request may have been acted on: a timeout, a connection lost
    /// after sending, a 5xx, an answer we could not read.
    Ambiguous(String),
}

/// What a search by external reference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The provider has the effect: `receipt` is the oldest object carrying
    /// its reference (the original). `duplicates` are the provider's ids of
    /// any others that carry it too: something made the effect more than
    /// once there, which is reported, never hidden.
    Found {
        /// The original.
        receipt: ProviderReceipt,
        /// The ids of the other objects with the same reference, oldest
        /// first; empty when the provider holds exactly one.
        duplicates: Vec<String>,
    },
    /// The provider answered, and has nothing with this reference.
    Absent,
    /// The provider could not be asked, or its answer could not be read.
    Failed(String),
}

/// A system that keeps tickets, reached by an adapter.
pub trait TicketProvider: fmt::Debug + Send + Sync + 'static {
    /// Asks the provider to do `request.write`, sending
    /// `request.external_ref` as its idempotency key.
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched>;

    /// Searches the provider by external reference.
    fn find_by_reference<'a>(&'a self, request: &'a SearchRequest) -> ProviderFuture<'a, Lookup>;
}

/// How the kitchen uses a provider.
#[derive(Debug, Clone)]
pub struct RemoteSettings {
    /// How long the provider remembers an idempotency key. Within it, a
    /// re-dispatch with the same key is deduplicated by the provider; past
    /// it (or when zero: the provider ignores keys) nothing is re-sent before
    /// a search has shown the ticket is absent.
    pub dedup_window: Duration,
    /// The longest a request may still be worked on by the provider after
    /// it was sent (its own request deadline). A search that finds nothing
    /// proves absence only once this long has passed since the last
    /// dispatch; before, the ticket may still appear.
    pub max_inflight: Duration,
    /// How long one call to the provider may take before the kitchen stops
    /// waiting for it (the answer then counts as ambiguous).
    pub call_timeout: Duration,
    /// How often the background reconciler looks for unsettled effects.
    pub reconcile_every: Duration,
    /// The most calls to the provider (dispatches and searches, the first
    /// dispatch included) made for one effect whose outcome is unknown.
    /// Once an effect has this many attempts, no worker (the reconciler, a
    /// status read, a caller's retry) calls the provider for it again: it
    /// stays `unknown`, leaves the reconciler's queue, and is counted by
    /// [`Kitchen::unresolved_effects`](crate::Kitchen::unresolved_effects)
    /// until an operator checks the provider. Without a bound, an effect
    /// the provider never answers for would be retried, and its attempt log
    /// grow, for ever. An effect that provably failed (`failed_before_effect`)
    /// is not capped: nothing was made, so a caller's retry may always send.
    pub max_attempts: u32,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        Self {
            dedup_window: Duration::ZERO,
            max_inflight: Duration::from_secs(30),
            call_timeout: Duration::from_secs(10),
            reconcile_every: Duration::from_secs(5),
            // With the default backoff (5 s doubling to 320 s), about 75
            // minutes of trying before a human is asked to look.
            max_attempts: 20,
        }
    }
}

/// Where tickets are made.
#[derive(Debug, Clone, Default)]
pub enum TicketBackend {
    /// In the kitchen's own database, in the same transaction as the
    /// operation record: exactly once by construction.
    #[default]
    Local,
    /// In a provider over the network: recorded ahead, dispatched,
    /// reconciled when the answer is lost.
    Remote {
        /// The provider.
        provider: Arc<dyn TicketProvider>,
        /// How to use it.
        settings: RemoteSettings,
    },
}

impl TicketBackend {
    /// `local` or `remote`, for logs and readiness.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Remote { .. } => "remote",
        }
    }
}

/// Unix milliseconds of `t`: the unit lease and schedule columns use, so
/// that both databases compare them as plain integers.
pub(crate) fn unix_ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

//! Where writes happen: the backend a kitchen runs with.
//!
//! A closed set, dispatched by `match`: on the local backend every action
//! runs through the generic write path (`crate::write`); on the remote
//! backend every action runs through the effect ledger (`crate::remote`).

use crate::domain::action::Action;
use crate::provider::TicketBackend;
use crate::remote::Remote;
use crate::store::Db;
use crate::write::engine::Engine;

/// The backend a kitchen writes through.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// Tickets live in the kitchen's own database.
    Local,
    /// Tickets are made in a provider; the database keeps the effect ledger
    /// and a local copy of each ticket made. Boxed: a `Remote` carries a
    /// whole engine, and the local backend (the common one) nothing.
    Remote(Box<Remote>),
}

impl Backend {
    /// The backend `choice` names, on `db`.
    pub(crate) fn new(choice: &TicketBackend, db: &Db, engine: &Engine) -> Self {
        match choice {
            TicketBackend::Local => Self::Local,
            TicketBackend::Remote { provider, settings } => Self::Remote(Box::new(Remote {
                db: db.clone(),
                provider: provider.clone(),
                settings: settings.clone(),
                wait_bound: engine.wait_bound,
                engine: engine.clone(),
            })),
        }
    }

    /// Whether doing `action` calls a provider the service does not own:
    /// on the remote backend, every write does.
    pub(crate) fn sends(&self, action: Action) -> bool {
        match self {
            Self::Local => false,
            Self::Remote(_) => match action {
                Action::CreateTicket
                | Action::UpdateTicket
                | Action::TransitionTicket
                | Action::AddComment => true,
            },
        }
    }

    /// Whether reading an operation's status may call a provider (to
    /// search it, never to send: see `Trigger::may_send`).
    pub(crate) fn status_reads_search(&self) -> bool {
        match self {
            Self::Local => false,
            Self::Remote(_) => true,
        }
    }
}

//! The port to a ticket provider: a system the kitchen does not own (a
//! hosted tracker, a helpdesk) that can make tickets for us.
//!
//! The kitchen decides what to send and what an answer means for the effect;
//! an adapter (see the `provider-client` crate for HTTP) only carries the
//! request and sorts the reply into one of the few kinds below. Sorting is
//! the adapter's one real job, because it decides whether a retry may be
//! sent blindly: only [`Dispatched::NotSent`] and [`Dispatched::Rejected`]
//! prove that nothing was made.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;

/// A boxed future, so that a [`TicketProvider`] can live behind `dyn`.
pub type ProviderFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a dispatch asks the provider to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Sent as the provider's idempotency key and stored on its ticket as
    /// the searchable external reference; the same on every re-dispatch.
    pub external_ref: String,
    /// Project slug.
    pub project_id: String,
    /// One-line summary.
    pub title: String,
    /// Longer text, if any.
    pub description: Option<String>,
    /// `low`, `normal`, `high` or `urgent`.
    pub priority: String,
}

/// A ticket as the provider reports it: the receipt of the effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderTicket {
    /// The provider's own id for it.
    pub id: String,
    /// The external reference it carries.
    pub external_ref: String,
}

/// How a dispatch ended, as far as the caller of the provider can know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatched {
    /// The provider made the ticket, or (`replayed`) answered with the one
    /// its dedup window remembered for this key.
    Created {
        /// The ticket.
        ticket: ProviderTicket,
        /// Whether the provider said this was a replay of an earlier create.
        replayed: bool,
    },
    /// The provider answered that it will not make this ticket (a 4xx
    /// validation answer): provably nothing was made.
    Rejected(String),
    /// The request never reached the provider (connection refused, name
    /// not resolved): provably nothing was made.
    NotSent(String),
    /// The request may have been acted on: a timeout, a connection lost
    /// after sending, a 5xx, an answer we could not read.
    Ambiguous(String),
}

/// What a search by external reference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The provider has a ticket with this reference.
    Found(ProviderTicket),
    /// The provider answered, and has no ticket with this reference.
    Absent,
    /// The provider could not be asked, or its answer could not be read.
    Failed(String),
}

/// A system that makes tickets, reached by an adapter.
pub trait TicketProvider: fmt::Debug + Send + Sync + 'static {
    /// Asks the provider to make a ticket, sending `request.external_ref` as
    /// its idempotency key.
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched>;

    /// Searches the provider's tickets by external reference.
    fn find_by_reference<'a>(&'a self, external_ref: &'a str) -> ProviderFuture<'a, Lookup>;
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

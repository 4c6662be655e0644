//! A typed async client for the retry-safe ticket service, whose default
//! is the retry policy the service's promise needs from its callers: a
//! retried write never has a second effect, and a caller who lost an
//! answer finds out what happened.
//!
//! - **One key per intent, written down first.** Each write is an
//!   [`Intent`] whose [`OperationKey`] is made once, before anything is
//!   sent, and recorded in a [`Journal`] ([`MemoryJournal`], or
//!   `SqliteJournal` on a file so that a run that crashes is finished by
//!   the next one, [`Client::resume`], with the same keys). Every attempt
//!   reads the key from the journal entry; nothing after it can make one.
//! - **Answers sorted.** Transient ones (no connection, 502/503/504, 409
//!   in progress) are sent again with the same key after `Retry-After`;
//!   permanent ones (400, 401, 403, 404, 412, 422) are returned and never
//!   retried; ambiguous ones (a timeout, a reset after sending, an empty or
//!   malformed body, a 500, the remote backend's 202) are **reconciled**
//!   through the status lookup before anything is sent again.
//! - **Reconciled.** Found: its first answer, fetched with the same key (a
//!   replay writes nothing). Nothing recorded: one more send with the same
//!   key, never two. Still unknown: [`Settled::Unresolved`] with what was
//!   seen last; the caller decides, and the intent stays in the journal.
//!   The client never invents a second key.
//! - **Three identities, kept apart in the logs.** Each intent is a
//!   `client_intent` span with its `operation_key`; each try of the write
//!   a `client_attempt` span with its own `attempt` id and the
//!   `transport_request_id` it sends as `x-request-id` (which the server
//!   records); lookups and reads carry their own `transport_request_id`.
//!
//! It speaks only the HTTP contract (`docs/contract.md`), with its own
//! types, so it can be copied into another project as it is.
//!
//! ```no_run
//! use tickets_client::{Client, ClientConfig, NewTicket, Settled};
//!
//! # async fn example() -> Result<(), tickets_client::ClientError> {
//! let client = Client::new("http://127.0.0.1:8080", "tkt_…", ClientConfig::default())?;
//! match client.create_ticket(&NewTicket::new("ops", "Disk full on db-1")).await? {
//!     Settled::Done { value, replayed, .. } => println!("ticket {} (replayed: {replayed})", value.id),
//!     Settled::Expired { value, .. } => println!("made long ago: ticket {}", value.id),
//!     Settled::Refused { problem, .. } => eprintln!("refused: {}", problem.problem_type),
//!     Settled::Unresolved { key, last_seen } => {
//!         eprintln!("unknown whether {key} happened ({last_seen:?}); resume later, same key")
//!     }
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! - `client.rs`: [`Client`], every route as a typed call, and the
//!   journal around each write; `config.rs` its settings
//!   ([`ClientConfig`]); `error.rs` [`ClientError`].
//! - `intent.rs` ([`Intent`]), `key.rs` ([`OperationKey`]), `action.rs`
//!   ([`Action`]), `requests.rs` (what a write sends: [`WriteRequest`],
//!   [`NewTicket`], [`TicketPatch`]).
//! - `journal/`: the [`Journal`] trait and its entries; `memory.rs`
//!   [`MemoryJournal`]; `sqlite.rs` `SqliteJournal` (feature
//!   `sqlite-journal`, on by default).
//! - `policy.rs`: the retry policy as a state machine without I/O (its
//!   table is there); `classify.rs`: what one answer means to it (the only
//!   place that reads statuses and problem types); `driver.rs`: runs the
//!   policy for one journal entry over a network, with the tracing spans;
//!   `reads.rs`: the same waits for reads.
//! - `network.rs`: what the policy needs of the world (send, sleep, the
//!   time); `http.rs`: that over reqwest; `routes.rs`: each route's
//!   request.
//! - `settled.rs` ([`Settled`], [`LastSeen`], [`Read`]), `resources.rs`
//!   (tickets, comments, history, pages), `operation.rs` (the status
//!   lookup's record), `problem.rs` ([`Problem`]).

mod action;
mod classify;
mod client;
mod config;
mod driver;
mod error;
mod http;
mod intent;
mod journal;
mod key;
mod network;
mod operation;
mod policy;
mod problem;
mod reads;
mod requests;
mod resources;
mod routes;
mod settled;
#[cfg(test)]
mod testing;

pub use action::{Action, Made};
pub use client::Client;
pub use config::ClientConfig;
pub use error::ClientError;
pub use intent::Intent;
#[cfg(feature = "sqlite-journal")]
pub use journal::SqliteJournal;
pub use journal::{
    Begun, EntryId, Journal, JournalEntry, JournalError, JournalFuture, MemoryJournal,
    SettledOutcome, Settlement,
};
pub use key::{InvalidKey, MAX_KEY_LEN, MIN_KEY_LEN, OperationKey};
pub use operation::{KeyPhase, OperationState, OperationStatus};
pub use problem::Problem;
pub use requests::{NewTicket, PatchField, TicketPatch, WriteRequest};
pub use resources::{
    Comment, CommentPage, FieldChange, HistoryEntry, HistoryPage, PageRequest, Priority, Ticket,
    TicketId, TicketPage, TicketStatus,
};
pub use settled::{LastSeen, Read, Settled};

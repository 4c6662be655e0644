//! The kitchen: the domain core of the retry-safe ticket service.
//!
//! Callers (through the REST and MCP doors) retry on their own judgment: a
//! timeout, a dropped connection, a crash. A create may have committed before
//! its answer was lost. The kitchen makes a retried create return the
//! original ticket and create nothing, and lets a caller who lost an answer
//! find out what happened.
//!
//! Every write carries a caller-chosen [`OperationKey`]. The kitchen records
//! it, scoped to (tenant, [`Action`], key) and with a [`Fingerprint`] of the
//! meaningful request, in the same database transaction as the ticket, and
//! answers with one [`Outcome`]: created, replayed, conflict, invalid or in
//! progress, and, when tickets are made in a provider the kitchen does not
//! own, not created or unknown. Only infrastructure failures are
//! [`KitchenError`]s.
//!
//! The kitchen knows nothing of HTTP or MCP: status codes and tool results
//! belong to the doors, which never write SQL.
//!
//! # Layout
//!
//! - [`kitchen`](Kitchen): the entry point the doors call: one generic
//!   write ([`Kitchen::write`]), the reads, tenants and tokens.
//! - [`actions`]: one file per write action (`create_ticket`,
//!   `update_ticket`, `transition_ticket`, `add_comment`, `add_label`,
//!   `remove_label`), each a `WriteAction` (and a `RemoteAction` if a
//!   provider can do it), and the list of them: the template's extension
//!   point (`docs/adding-an-action.md`).
//! - `write`: the one generic write path: the `WriteAction` trait and the
//!   engine (claim, fingerprint, replay or conflict, wait bound, replay
//!   cache), the same for every action.
//! - `backend`: where writes happen: the local database, or a provider
//!   through `remote`.
//! - `domain`: value types, each parsed once at the edge: tickets and their
//!   fields, operation keys and records, the fingerprint, tenants and tokens,
//!   access scopes ([`Scopes`]: what a token may do, stored with an API
//!   token), identities from an identity provider ([`OAuthIdentity`]: the
//!   kitchen only maps them to tenants; verifying tokens is the `access`
//!   crate's job, outside the kitchen), pagination, field violations.
//! - `auth_cache`: short-lived caches of token and identity lookups.
//! - [`outcome`](Outcome): what a write answers, and what an operation's
//!   status means ([`OperationStatus::ended`]).
//! - `store`: all SQL. One create is one transaction whose first statement
//!   claims the key through the primary key of `operations`.
//! - [`config`](KitchenConfig): the wait bound, the retention period and the
//!   ticket backend.
//! - [`provider`](TicketProvider): the port to a ticket provider (remote
//!   backend); adapters live outside the kitchen.
//! - `clock`: the time source of the key lifecycle; tests hold a manual one.
//! - `sweep`: the retention sweep (tombstones, then deletion), and
//!   `domain/lifecycle.rs`: what a key answers in each phase.
//! - `remote`: the remote backend: write-ahead effect ledger, dispatch,
//!   reconciliation.
//! - `testing` (feature `test-support`): fresh databases for tests;
//!   `fake_provider`: an in-memory provider for the remote backend's tests.
//! - `bench` (feature `bench`): the store's create transaction and replay
//!   read alone, as ceilings for the benchmarks.
//! - `faults`: a crash right after a commit, or around a dispatch, for the
//!   double-fire driver; armed only by the `tickets-fault-injection`
//!   binary.

pub mod actions;
mod auth_cache;
mod backend;
#[cfg(feature = "bench")]
pub mod bench;
mod clock;
mod config;
mod domain;
mod error;
#[cfg(feature = "test-support")]
pub mod fake_provider;
pub mod faults;
mod kitchen;
mod outcome;
mod provider;
mod remote;
mod store;
mod sweep;
#[cfg(feature = "test-support")]
pub mod testing;
mod write;

pub use backend::reaches_provider;
pub use clock::Clock;
pub use config::{
    DEFAULT_ACQUIRE_TIMEOUT, DEFAULT_AUTH_CACHE_TTL, DEFAULT_PING_AFTER_IDLE,
    DEFAULT_REPLAY_WINDOW, DEFAULT_SWEEP_BATCH, DEFAULT_SWEEP_PAUSE, DEFAULT_TOMBSTONE_HORIZON,
    DEFAULT_WAIT_BOUND, DEFAULT_WRITE_GROUP_MAX, KitchenConfig,
};
pub use config::{DatabasePooler, ReplayCacheConfig};
pub use domain::action::Action;
pub use domain::change::{Change, Changes};
pub use domain::comment::{
    Comment, CommentBody, CommentDraft, CommentId, CommentPage, MAX_COMMENT_CHARS, NewComment,
};
pub use domain::duplicate::{
    DEFAULT_DUPLICATE_WINDOW, DuplicateGuard, EarlierWrite, GuardMode, WriteOptions,
};
pub use domain::effect::{
    AttemptKind, AttemptResult, EffectAttempt, EffectLedger, ExternalRef, FailedCall,
    OperationStatus, Trigger, Upkeep,
};
pub use domain::fault::{StorageFault, Written};
pub use domain::fingerprint::{FINGERPRINT_VERSION, Fingerprint};
pub use domain::history::{HistoryEntry, HistoryPage};
pub use domain::identity::{
    Issuer, MAX_ISSUER_LEN, MAX_SUBJECT_CHARS, OAuthIdentity, Subject, TenantVia,
};
pub use domain::label::{LABEL_PATTERN, Label, Labels, MAX_LABEL_CHARS, MAX_LABELS_PER_TICKET};
pub use domain::label_change::{LabelChange, LabelDraft};
pub use domain::lifecycle::KeyPhase;
pub use domain::operation::{
    KeyError, MAX_KEY_LEN, MIN_KEY_LEN, OperationKey, OperationRecord, OperationRef,
    OperationState, ResultSnapshot,
};
pub use domain::operation_list::{
    ListedState, OperationCursor, OperationFilter, OperationPage, OperationSummary,
};
pub use domain::page::{Cursor, PageSize, TicketFilter, TicketPage};
pub use domain::patch::{Setting, TicketEdit, TicketPatch, TicketUpdate};
pub use domain::precondition::TicketAt;
pub use domain::scope::{Scope, Scopes};
pub use domain::settlement::{
    Decision, MAX_OPERATOR_CHARS, MAX_PROVIDER_REFERENCE_CHARS, MAX_SETTLE_REASON_CHARS,
    OperatorName, ProviderReference, SettleAnswer, SettleOrder, SettleReason, SettleRefusal,
    Settlement,
};
pub use domain::status::TicketStatus;
pub use domain::tenant::{
    Actor, Caller, Credential, IssuedToken, Tenant, TenantId, TenantName, TokenId, TokenInfo,
};
pub use domain::ticket::{
    Assignee, Description, MAX_ASSIGNEE_CHARS, MAX_DESCRIPTION_CHARS, MAX_TITLE_CHARS, NewTicket,
    Priority, ProjectId, Ticket, TicketDraft, TicketId, Title, Version,
};
pub use domain::transition::{MAX_REASON_CHARS, Reason, Transition, TransitionDraft};
pub use domain::violation::FieldViolation;
pub use domain::wait::whole_seconds;
pub use error::{KitchenError, error_chain};
pub use kitchen::writes::KitchenWrite;
pub use kitchen::{Kitchen, TenantNameTaken};
pub use outcome::{
    Expired, NotCreatedReason, Outcome, PROVIDER_UNAVAILABLE_RETRY_AFTER, RETRY_AFTER, Receipt,
    Refusal, UNKNOWN_RETRY_AFTER,
};
pub use provider::{
    DispatchRequest, Dispatched, EffectKind, Lookup, ProviderEffect, ProviderFuture,
    ProviderReceipt, ProviderTicketState, ProviderWrite, RemoteSettings, SearchRequest,
    TicketBackend, TicketProvider,
};
pub use sweep::{SweepReport, Sweeper};
pub use write::RetrySafeWrite;

/// A span of time, for [`KitchenConfig::replay_window`] and
/// [`KitchenConfig::tombstone_horizon`].
pub type RetentionPeriod = time::Duration;
/// UUIDs, as ids are made of.
pub use uuid::Uuid;

/// A timestamp as every answer shows it: RFC 3339, the same text as in the
/// result snapshots.
pub fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| t.to_string())
}

//! The journal: where an intent is written down, with its key, before its
//! first attempt, so that a client that crashes (or a caller who gave up on
//! an [`Unresolved`](crate::Settled::Unresolved) answer) finishes it later
//! with the same key instead of inventing a new one.
//!
//! An entry is identified by its action and key, the service's own scope
//! (the tenant is the token's: keep one journal per service and token).
//! Beginning an intent the journal already holds reopens that entry, and
//! the client then reconciles before sending, since an earlier run may
//! have sent it; the same key with another request is refused, since the
//! service would refuse it too, unless the service refused the first
//! request in a way that left the key unused (invalid input, a version or
//! a move the ticket did not allow, a provider that refused it): then the
//! corrected request takes the entry over, as the service lets it take
//! the key over.

mod memory;
#[cfg(feature = "sqlite-journal")]
mod sqlite;

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::action::Action;
use crate::intent::Intent;
use crate::key::OperationKey;
use crate::requests::WriteRequest;

pub use memory::MemoryJournal;
#[cfg(feature = "sqlite-journal")]
pub use sqlite::SqliteJournal;

/// What a journal call returns: a boxed future, so that journals can be
/// chosen at run time (`Arc<dyn Journal>`).
pub type JournalFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, JournalError>> + Send + 'a>>;

/// Where intents are written down before they are attempted.
///
/// Implementations must make [`Journal::begin`] durable before it returns:
/// the client sends nothing until it has.
pub trait Journal: fmt::Debug + Send + Sync {
    /// Writes `intent` down (action, key, request, when) and returns its
    /// entry; called before the first attempt. An intent with the same
    /// action, key and request as an entry already there reopens that
    /// entry ([`Begun::Existing`]); the same action and key with another
    /// request takes over an entry settled [`SettledOutcome::Refused`] (the
    /// key is unused: [`Begun::New`]) and is [`JournalError::KeyTaken`]
    /// otherwise.
    fn begin<'a>(&'a self, intent: &'a Intent) -> JournalFuture<'a, Begun>;

    /// Marks `entry` finished: it happened, expired or was refused. An
    /// unresolved intent is not settled; it stays pending.
    fn settle<'a>(&'a self, entry: EntryId, settlement: &'a Settlement) -> JournalFuture<'a, ()>;

    /// Every entry not settled yet, oldest first.
    fn pending(&self) -> JournalFuture<'_, Vec<JournalEntry>>;

    /// Every entry, settled or not, oldest first: what a rerun of the same
    /// command looks in to find its intent (and key) again.
    fn entries(&self) -> JournalFuture<'_, Vec<JournalEntry>>;
}

/// A journal entry's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EntryId(Uuid);

impl EntryId {
    /// A new id (a UUID v7: ids sort in the order entries were made).
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }

    /// The id as a UUID.
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl Default for EntryId {
    fn default() -> Self {
        Self::new()
    }
}

impl From<Uuid> for EntryId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// One intent as the journal holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JournalEntry {
    id: EntryId,
    key: OperationKey,
    request: WriteRequest,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
}

impl JournalEntry {
    /// The entry for `intent`, made at `created_at` (for journal
    /// implementations).
    pub fn new(id: EntryId, intent: &Intent, created_at: OffsetDateTime) -> Self {
        Self {
            id,
            key: intent.key().clone(),
            request: intent.request().clone(),
            created_at,
        }
    }

    /// Its id.
    pub fn id(&self) -> EntryId {
        self.id
    }

    /// The key: the only one its intent is ever sent with.
    pub fn key(&self) -> &OperationKey {
        &self.key
    }

    /// The request.
    pub fn request(&self) -> &WriteRequest {
        &self.request
    }

    /// Its action.
    pub fn action(&self) -> Action {
        self.request.action()
    }

    /// When it was written down.
    pub fn created_at(&self) -> OffsetDateTime {
        self.created_at
    }

    /// Whether it is the entry of `intent`.
    fn is_for(&self, intent: &Intent) -> bool {
        self.key == *intent.key() && self.request == *intent.request()
    }
}

/// What beginning `intent` does to the entry of its scope that holds
/// another request, settled as `settled` (if at all): take it over (the
/// service refused that request and left the key unused) or refuse.
pub(crate) fn take_over(
    intent: &Intent,
    settled: Option<SettledOutcome>,
) -> Result<(), JournalError> {
    match settled {
        Some(SettledOutcome::Refused) => Ok(()),
        Some(SettledOutcome::Done | SettledOutcome::Expired | SettledOutcome::Conflict) | None => {
            Err(JournalError::KeyTaken {
                action: intent.action(),
                key: intent.key().clone(),
            })
        }
    }
}

/// What [`Journal::begin`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// A new entry: nothing has been sent for it.
    New(JournalEntry),
    /// The journal already held this intent (and reopened it if it was
    /// settled): an earlier run may have sent it.
    Existing(JournalEntry),
}

impl Begun {
    /// The entry.
    pub fn entry(&self) -> &JournalEntry {
        match self {
            Begun::New(entry) | Begun::Existing(entry) => entry,
        }
    }
}

/// How a settled entry ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettledOutcome {
    /// It happened.
    Done,
    /// It happened, past the key's replay window.
    Expired,
    /// The service refused it and left the key unused (invalid input, a
    /// version or move the ticket did not allow, a provider that refused
    /// it): a corrected request may take the key over.
    Refused,
    /// The service refused it because the key already names another
    /// request: the key stays that request's.
    Conflict,
}

impl SettledOutcome {
    /// The outcome a stored name names.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        [Self::Done, Self::Expired, Self::Refused, Self::Conflict]
            .into_iter()
            .find(|o| o.as_str() == name)
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            SettledOutcome::Done => "done",
            SettledOutcome::Expired => "expired",
            SettledOutcome::Refused => "refused",
            SettledOutcome::Conflict => "conflict",
        }
    }
}

/// The summary a settled entry keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    /// How it ended.
    pub outcome: SettledOutcome,
    /// A line for a person: the resource it made or acted on, or the
    /// problem's type.
    pub summary: String,
}

/// The journal could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The key already names another request of the same action in this
    /// journal (the caller's mistake: a new intent takes a new key).
    #[error(
        "the key {key} already names another {action} request in the journal; a different \
         request takes a new key"
    )]
    KeyTaken {
        /// The action.
        action: Action,
        /// The key.
        key: OperationKey,
    },
    /// The storage failed.
    #[error("the journal's storage failed: {0}")]
    Storage(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An entry could not be read back.
    #[error("journal entry {entry} cannot be read: {reason}")]
    Corrupt {
        /// Which entry.
        entry: String,
        /// Why.
        reason: String,
    },
}

impl JournalError {
    /// A storage failure.
    pub fn storage(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        JournalError::Storage(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::requests::NewTicket;

    fn create(title: &str) -> WriteRequest {
        WriteRequest::CreateTicket {
            ticket: NewTicket::new("ops", title),
        }
    }

    fn refused_settlement() -> Settlement {
        Settlement {
            outcome: SettledOutcome::Refused,
            summary: "400 /problems/validation-failed".into(),
        }
    }

    fn done() -> Settlement {
        Settlement {
            outcome: SettledOutcome::Done,
            summary: "ticket 0193a4f2".into(),
        }
    }

    /// What every journal must do, run on each implementation.
    async fn keeps_intents_until_settled(journal: &dyn Journal) {
        let intent = Intent::new(create("Disk full"));
        let Begun::New(entry) = journal.begin(&intent).await.expect("begin") else {
            panic!("a new intent makes a new entry");
        };
        assert_eq!(entry.key(), intent.key());
        assert_eq!(entry.request(), intent.request());
        assert_eq!(
            journal.pending().await.expect("pending"),
            std::slice::from_ref(&entry)
        );

        // The same intent again (a caller that kept its key): the same
        // entry, never a second one.
        let again = journal.begin(&intent).await.expect("begin");
        assert_eq!(again, Begun::Existing(entry.clone()));
        assert_eq!(journal.pending().await.expect("pending").len(), 1);

        // The key with another request: refused, nothing written.
        let other = Intent::with_key(intent.key().clone(), create("Another ticket"));
        assert!(matches!(
            journal.begin(&other).await,
            Err(JournalError::KeyTaken {
                action: Action::CreateTicket,
                ..
            })
        ));

        // Unless the service refused the first request and left the key
        // unused: then a corrected request takes the entry over.
        let refused = Intent::new(create(""));
        let first = journal.begin(&refused).await.expect("begin");
        journal
            .settle(first.entry().id(), &refused_settlement())
            .await
            .expect("settle");
        let corrected = Intent::with_key(refused.key().clone(), create("Corrected"));
        match journal.begin(&corrected).await.expect("begin") {
            Begun::New(entry) => {
                assert_eq!(entry.key(), refused.key(), "the same key");
                assert_eq!(entry.request(), corrected.request());
            }
            other => panic!("expected the corrected request to take the entry over: {other:?}"),
        }
        let taken_over = journal.pending().await.expect("pending");
        assert_eq!(taken_over.len(), 2, "{taken_over:?}");
        journal
            .settle(taken_over[1].id(), &done())
            .await
            .expect("settle");

        // The key under another action is another scope, as on the server.
        let comment = Intent::with_key(
            intent.key().clone(),
            WriteRequest::AddComment {
                ticket_id: "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79".parse().expect("id"),
                body: "seen".into(),
            },
        );
        let comment = journal.begin(&comment).await.expect("begin");
        assert!(matches!(comment, Begun::New(_)));

        journal.settle(entry.id(), &done()).await.expect("settle");
        assert_eq!(
            journal.pending().await.expect("pending"),
            [comment.entry().clone()],
            "a settled entry is not pending"
        );

        // Beginning a settled intent again reopens it.
        assert_eq!(
            journal.begin(&intent).await.expect("begin"),
            Begun::Existing(entry.clone())
        );
        assert_eq!(
            journal.pending().await.expect("pending"),
            [entry, comment.entry().clone()],
            "oldest first"
        );
    }

    #[tokio::test]
    async fn the_memory_journal_keeps_intents_until_settled() {
        keeps_intents_until_settled(&MemoryJournal::new()).await;
    }

    #[cfg(feature = "sqlite-journal")]
    #[tokio::test]
    async fn the_sqlite_journal_keeps_intents_until_settled() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let journal = SqliteJournal::open(dir.path().join("journal.db"))
            .await
            .expect("open");
        keeps_intents_until_settled(&journal).await;
    }

    /// A crash between `begin` and the first send: the entry, with its key
    /// and request, is there when the file is opened again.
    #[cfg(feature = "sqlite-journal")]
    #[tokio::test]
    async fn the_sqlite_journal_survives_the_process() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("journal.db");
        let intent = Intent::new(create("Disk full"));
        let before = {
            let journal = SqliteJournal::open(&path).await.expect("open");
            journal.begin(&intent).await.expect("begin").entry().clone()
        };
        let after = SqliteJournal::open(&path).await.expect("open again");
        assert_eq!(
            after.pending().await.expect("pending"),
            std::slice::from_ref(&before)
        );
        assert_eq!(
            after.begin(&intent).await.expect("begin"),
            Begun::Existing(before)
        );
    }
}

//! [`Client`]: the typed calls, each write run by the retry policy from
//! its journal entry.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::action::Action;
use crate::config::ClientConfig;
use crate::driver;
use crate::error::ClientError;
use crate::http::{HttpNetwork, SetupError};
use crate::intent::Intent;
use crate::journal::{Begun, Journal, JournalEntry, SettledOutcome, Settlement};
use crate::key::OperationKey;
use crate::operation::OperationStatus;
use crate::policy::{Bounds, Finish, Start};
use crate::reads;
use crate::requests::{NewTicket, TicketPatch, WriteRequest};
use crate::resources::{
    Comment, CommentPage, HistoryPage, PageRequest, Ticket, TicketId, TicketPage, TicketStatus,
};
use crate::routes;
use crate::settled::{Read, Settled};

/// A client of one service, with one token. Cheap to clone (clones share
/// connections and the journal).
#[derive(Debug, Clone)]
pub struct Client {
    network: HttpNetwork,
    bounds: Bounds,
    journal: Arc<dyn Journal>,
}

impl Client {
    /// A client of the service at `base_url` (e.g.
    /// `https://tickets.example.com`), calling with the bearer `token`.
    pub fn new(base_url: &str, token: &str, config: ClientConfig) -> Result<Self, ClientError> {
        let bounds = config.bounds().map_err(ClientError::InvalidConfig)?;
        let network =
            HttpNetwork::new(base_url, token, config.call_timeout).map_err(|e| match e {
                SetupError::Url(why) => ClientError::InvalidUrl(why),
                SetupError::Http(e) => ClientError::Setup(e.to_string()),
            })?;
        Ok(Self {
            network,
            bounds,
            journal: config.journal,
        })
    }

    /// Creates a ticket, under a new key.
    pub async fn create_ticket(&self, ticket: &NewTicket) -> Result<Settled<Ticket>, ClientError> {
        self.submit_as(Intent::new(WriteRequest::CreateTicket {
            ticket: ticket.clone(),
        }))
        .await
    }

    /// Creates a ticket under `key`, a key the caller already has (a
    /// retry of an intent it started earlier).
    pub async fn create_ticket_with_key(
        &self,
        key: OperationKey,
        ticket: &NewTicket,
    ) -> Result<Settled<Ticket>, ClientError> {
        self.submit_as(Intent::with_key(
            key,
            WriteRequest::CreateTicket {
                ticket: ticket.clone(),
            },
        ))
        .await
    }

    /// Changes a ticket's fields (a merge patch), under a new key; only if
    /// it is still at version `if_match`, when given.
    pub async fn update_ticket(
        &self,
        ticket_id: TicketId,
        patch: &TicketPatch,
        if_match: Option<u64>,
    ) -> Result<Settled<Ticket>, ClientError> {
        self.submit_as(Intent::new(WriteRequest::UpdateTicket {
            ticket_id,
            patch: patch.clone(),
            if_match,
        }))
        .await
    }

    /// Moves a ticket to status `to`, under a new key.
    pub async fn transition_ticket(
        &self,
        ticket_id: TicketId,
        to: TicketStatus,
        reason: Option<&str>,
    ) -> Result<Settled<Ticket>, ClientError> {
        self.submit_as(Intent::new(WriteRequest::TransitionTicket {
            ticket_id,
            to,
            reason: reason.map(str::to_owned),
        }))
        .await
    }

    /// Comments on a ticket, under a new key.
    pub async fn add_comment(
        &self,
        ticket_id: TicketId,
        body: &str,
    ) -> Result<Settled<Comment>, ClientError> {
        self.submit_as(Intent::new(WriteRequest::AddComment {
            ticket_id,
            body: body.to_owned(),
        }))
        .await
    }

    /// Puts `label` on a ticket, under a new key.
    pub async fn add_label(
        &self,
        ticket_id: TicketId,
        label: &str,
    ) -> Result<Settled<Ticket>, ClientError> {
        self.submit_as(Intent::new(WriteRequest::AddLabel {
            ticket_id,
            label: label.to_owned(),
        }))
        .await
    }

    /// Takes `label` off a ticket, under a new key.
    pub async fn remove_label(
        &self,
        ticket_id: TicketId,
        label: &str,
    ) -> Result<Settled<Ticket>, ClientError> {
        self.submit_as(Intent::new(WriteRequest::RemoveLabel {
            ticket_id,
            label: label.to_owned(),
        }))
        .await
    }

    /// Runs any write: journals `intent`, then follows the policy to its
    /// end. An intent the journal already holds (same action, key and
    /// request) is looked up before it is sent again. The answer is the
    /// service's JSON (a ticket, or a comment).
    pub async fn submit(&self, intent: Intent) -> Result<Settled<serde_json::Value>, ClientError> {
        // Written down before the first attempt: a crash from here on
        // leaves the key in the journal, never a key only memory knew.
        let begun = self.journal.begin(&intent).await?;
        let start = match &begun {
            Begun::New(_) => Start::Send,
            Begun::Existing(_) => Start::Look,
        };
        self.run(begun.entry(), start).await
    }

    /// Finishes one journal entry an earlier run left pending: looks its
    /// key up first (it may have been sent), then follows the policy.
    pub async fn finish(
        &self,
        entry: &JournalEntry,
    ) -> Result<Settled<serde_json::Value>, ClientError> {
        self.run(entry, Start::Look).await
    }

    /// Finishes every entry the journal holds unsettled (a crashed run's,
    /// or an earlier `Unresolved` one), oldest first, each with its stored
    /// key and request. What each ended with, beside its entry; an entry
    /// that ends `Unresolved` again stays pending. The error is the
    /// journal's (it cannot list them), or one of the client itself.
    pub async fn resume(
        &self,
    ) -> Result<Vec<(JournalEntry, Settled<serde_json::Value>)>, ClientError> {
        let mut finished = Vec::new();
        for entry in self.journal.pending().await? {
            let settled = self.finish(&entry).await?;
            finished.push((entry, settled));
        }
        Ok(finished)
    }

    /// The journal's unsettled entries, oldest first.
    pub async fn pending(&self) -> Result<Vec<JournalEntry>, ClientError> {
        Ok(self.journal.pending().await?)
    }

    /// Every entry of the journal, settled or not, oldest first.
    pub async fn entries(&self) -> Result<Vec<JournalEntry>, ClientError> {
        Ok(self.journal.entries().await?)
    }

    /// One ticket.
    pub async fn get_ticket(&self, ticket_id: TicketId) -> Result<Read<Ticket>, ClientError> {
        Ok(reads::read(&self.network, &self.bounds, "ticket", || {
            routes::ticket(ticket_id)
        })
        .await)
    }

    /// A page of tickets, newest first, of one project or all.
    pub async fn list_tickets(
        &self,
        project_id: Option<&str>,
        page: &PageRequest,
    ) -> Result<Read<TicketPage>, ClientError> {
        Ok(reads::read(&self.network, &self.bounds, "tickets", || {
            routes::tickets(project_id, page)
        })
        .await)
    }

    /// A page of a ticket's comments, oldest first.
    pub async fn list_comments(
        &self,
        ticket_id: TicketId,
        page: &PageRequest,
    ) -> Result<Read<CommentPage>, ClientError> {
        Ok(reads::read(&self.network, &self.bounds, "comments", || {
            routes::comments(ticket_id, page)
        })
        .await)
    }

    /// A page of a ticket's history, oldest first.
    pub async fn ticket_history(
        &self,
        ticket_id: TicketId,
        page: &PageRequest,
    ) -> Result<Read<HistoryPage>, ClientError> {
        Ok(reads::read(&self.network, &self.bounds, "history", || {
            routes::history(ticket_id, page)
        })
        .await)
    }

    /// What the service recorded for `key` under `action`.
    /// [`Read::NotFound`] means nothing was recorded (a retry with the
    /// key is safe).
    pub async fn operation_status(
        &self,
        action: Action,
        key: &OperationKey,
    ) -> Result<Read<OperationStatus>, ClientError> {
        Ok(reads::read(&self.network, &self.bounds, "operation", || {
            routes::operation(action, key)
        })
        .await)
    }

    /// Runs `intent` and reads its answer as `T`.
    async fn submit_as<T: DeserializeOwned>(
        &self,
        intent: Intent,
    ) -> Result<Settled<T>, ClientError> {
        let what = intent.action().result_name();
        self.submit(intent)
            .await?
            .try_map(serde_json::from_value)
            .map_err(|e| ClientError::Encoding {
                what,
                reason: e.to_string(),
            })
    }

    /// Runs `entry` from `start`, then settles it in the journal unless it
    /// is unresolved.
    async fn run(
        &self,
        entry: &JournalEntry,
        start: Start,
    ) -> Result<Settled<serde_json::Value>, ClientError> {
        let finish = driver::run(&self.network, &self.bounds, entry, start)
            .await
            .map_err(|e| ClientError::Encoding {
                what: "the request",
                reason: e.to_string(),
            })?;
        let key = entry.key().clone();
        let settled = match finish {
            Finish::Done { body, replayed } => Settled::Done {
                value: body,
                key,
                replayed,
            },
            Finish::Expired { body } => Settled::Expired { value: body, key },
            Finish::Refused(problem) => Settled::Refused { key, problem },
            Finish::Unresolved(last_seen) => Settled::Unresolved { key, last_seen },
        };
        if let Some(settlement) = settlement(&settled) {
            // The answer is known; a journal that cannot record it only
            // means a later resume asks again (and gets a replay).
            if let Err(e) = self.journal.settle(entry.id(), &settlement).await {
                tracing::warn!(
                    error = %e,
                    operation_key = entry.key().as_str(),
                    "could not mark the journal entry settled; a resume will look it up again"
                );
            }
        }
        Ok(settled)
    }
}

/// What the journal keeps of a finished intent; `None` while unresolved.
fn settlement(settled: &Settled<serde_json::Value>) -> Option<Settlement> {
    let resource = |value: &serde_json::Value| {
        value
            .get("id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
            .to_owned()
    };
    match settled {
        Settled::Done { value, .. } => Some(Settlement {
            outcome: SettledOutcome::Done,
            summary: resource(value),
        }),
        Settled::Expired { value, .. } => Some(Settlement {
            outcome: SettledOutcome::Expired,
            summary: resource(value),
        }),
        Settled::Refused { problem, .. } => Some(Settlement {
            // Every refusal but a reused key leaves the key unused.
            outcome: if problem.kind() == Some("idempotency-key-reused") {
                SettledOutcome::Conflict
            } else {
                SettledOutcome::Refused
            },
            summary: format!("{} {}", problem.status, problem.problem_type),
        }),
        Settled::Unresolved { .. } => None,
    }
}

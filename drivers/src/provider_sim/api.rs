//! The simulator's JSON, shared by its routes and by [`SimClient`](super::SimClient)
//! so the two cannot drift apart.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

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
}

/// Which requests a [`FaultRule`] watches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultOn {
    /// `POST /api/tickets`.
    #[default]
    Create,
    /// `GET /api/tickets?external_ref=`.
    Search,
}

/// What a matching request suffers. On a search there is nothing to commit,
/// so the "commit" half of a fault is a no-op there.
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
    /// Make the ticket, then close the connection without answering.
    CommitThenDrop,
    /// Make the ticket, then answer `500`.
    #[serde(rename = "commit_then_500")]
    CommitThen500,
    /// Keep the request open `ms`, then make the ticket (even if the client
    /// has gone) and answer whoever is still there.
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
    /// Match only creates whose title contains this.
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
    /// A rule that hits the next create (any create until narrowed).
    pub fn create(fault: Fault) -> Self {
        Self {
            on: FaultOn::Create,
            title_contains: None,
            external_ref: None,
            fault,
            times: 1,
        }
    }

    /// A rule that hits the next search (any search until narrowed).
    pub fn search(fault: Fault) -> Self {
        Self {
            on: FaultOn::Search,
            ..Self::create(fault)
        }
    }

    /// Narrows the rule to creates whose title contains `part`.
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
    /// `GET /api/tickets` requests that arrived, valid or not.
    pub searches_received: u64,
    /// Tickets per external reference, in the order each reference first
    /// got a ticket.
    pub by_external_ref: Vec<RefCount>,
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

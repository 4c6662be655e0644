//! What the service recorded for one key: the body of
//! `GET /v1/operations/{action}/{key}`, the status lookup that
//! reconciliation reads.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::resources::TicketId;

/// Where an operation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationState {
    /// It happened: the same request with its key replays the first answer.
    Succeeded,
    /// Remote backend: being sent to the provider.
    InProgress,
    /// Remote backend: the provider's answer was lost; being reconciled.
    Unknown,
    /// Remote backend: the provider made nothing; the key is not used up.
    FailedBeforeEffect,
}

impl OperationState {
    /// The contract's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationState::Succeeded => "succeeded",
            OperationState::InProgress => "in_progress",
            OperationState::Unknown => "unknown",
            OperationState::FailedBeforeEffect => "failed_before_effect",
        }
    }
}

/// Where a key is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPhase {
    /// Within its replay window: a retry replays the first answer.
    Replayable,
    /// Past it: a retry answers the resource as it is now, makes nothing.
    Expired,
}

/// The status lookup's answer for a key that has a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationStatus {
    /// The action's name.
    pub action: String,
    /// The key.
    pub key: String,
    /// Where it stands.
    pub state: OperationState,
    /// Where the key is in its lifecycle.
    pub phase: KeyPhase,
    /// The ticket made or acted on, once there is one.
    #[serde(default)]
    pub ticket_id: Option<TicketId>,
    /// The ticket, or for `add_comment` the comment.
    #[serde(default)]
    pub resource_id: Option<String>,
    /// Where to GET the ticket.
    #[serde(default)]
    pub ticket_location: Option<String>,
    /// For `add_comment`: where to GET the comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment_location: Option<String>,
    /// The fingerprint of the request that first used the key.
    pub fingerprint: String,
    /// When the key was first used.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Until when a retry replays the first answer.
    #[serde(with = "time::serde::rfc3339")]
    pub replayable_until: OffsetDateTime,
    /// Until when the key is remembered at all.
    #[serde(with = "time::serde::rfc3339")]
    pub retained_until: OffsetDateTime,
    /// Whether the same request with this key is safe to send again.
    pub retry_safe: bool,
    /// What the service says to do now.
    pub next_step: String,
    /// Why the provider made nothing, or why the outcome is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Remote backend: the effect at the provider and every call made for
    /// it, as sent (diagnostics for a person; the client decides nothing
    /// on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_reads_from_the_contracts_json() {
        let status: OperationStatus = serde_json::from_str(
            r#"{"action":"create_ticket","key":"01936b2e-6a4f","state":"succeeded","phase":"replayable",
               "ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","resource_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79",
               "ticket_location":"/v1/tickets/0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","fingerprint":"v1:abc",
               "created_at":"2026-11-30T12:00:00.123456Z","replayable_until":"2026-12-30T12:00:01Z",
               "retained_until":"2028-01-04T12:00:01Z","retry_safe":true,"next_step":"The ticket exists."}"#,
        )
        .expect("a status");
        assert_eq!(status.state, OperationState::Succeeded);
        assert_eq!(status.phase, KeyPhase::Replayable);
        let unknown: OperationStatus = serde_json::from_str(
            r#"{"action":"add_comment","key":"01936b2e-6a4f","state":"unknown","phase":"replayable",
               "ticket_id":null,"resource_id":null,"ticket_location":null,"fingerprint":"v1:abc",
               "created_at":"2026-11-30T12:00:00Z","replayable_until":"2026-12-30T12:00:01Z",
               "retained_until":"2028-01-04T12:00:01Z","retry_safe":true,"next_step":"Wait.",
               "detail":"the provider's answer was lost","effect":{"attempts":[]}}"#,
        )
        .expect("a status");
        assert_eq!(unknown.state, OperationState::Unknown);
        assert_eq!(unknown.state.as_str(), "unknown");
    }
}

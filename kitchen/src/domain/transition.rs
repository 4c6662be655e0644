//! Moving a ticket through the status machine: the request as sent and the
//! validated command.

use serde::{Deserialize, Serialize};

use super::precondition::TicketAt;
use super::status::TicketStatus;
use super::text::refuse_nul;
use super::ticket::{TicketId, Version, keep, required};
use super::violation::FieldViolation;

/// Longest transition reason, in characters.
pub const MAX_REASON_CHARS: usize = 1_000;

/// A transition request's body as a caller sent it, before validation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransitionDraft {
    /// Required: the status to move to.
    pub to: Option<String>,
    /// Optional: why, in words; kept in the ticket's history.
    pub reason: Option<String>,
}

/// Why a ticket was moved: up to 1,000 characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Reason(String);

impl Reason {
    /// Parses a reason; empty means none.
    pub fn parse(raw: impl Into<String>) -> Result<Option<Self>, FieldViolation> {
        let raw = raw.into();
        refuse_nul("reason", &raw)?;
        let chars = raw.chars().count();
        if chars > MAX_REASON_CHARS {
            Err(FieldViolation::new(
                "reason",
                "too_long",
                format!("reason must be at most {MAX_REASON_CHARS} characters; it has {chars}"),
            ))
        } else if raw.is_empty() {
            Ok(None)
        } else {
            Ok(Some(Self(raw)))
        }
    }

    /// The reason as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A validated transition: what the fingerprint is computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The ticket to move.
    pub ticket_id: TicketId,
    /// Refuse the move unless the ticket is at this version.
    pub expected_version: Option<Version>,
    /// Where to.
    pub to: TicketStatus,
    /// Why, if the caller said.
    pub reason: Option<Reason>,
}

impl TransitionDraft {
    /// Validates the body for the ticket `at` names and reports every
    /// problem at once. Whether the move is allowed depends on the ticket's
    /// status and version, which are read inside the write: a refused move
    /// is a refusal, not a violation.
    pub fn validate(&self, at: impl Into<TicketAt>) -> Result<Transition, Vec<FieldViolation>> {
        let TicketAt {
            ticket_id,
            expected_version,
        } = at.into();
        let mut violations = Vec::new();
        let v = &mut violations;
        let to = keep(
            v,
            required(&self.to, "to").and_then(|raw| TicketStatus::parse_field(&raw, "to")),
        );
        let reason = keep(v, Reason::parse(self.reason.clone().unwrap_or_default()));
        match (to, reason) {
            (Some(to), Some(reason)) if violations.is_empty() => Ok(Transition {
                ticket_id,
                expected_version,
                to,
                reason,
            }),
            _ => Err(violations),
        }
    }
}

/// Version 1 of a transition's canonical form, for the fingerprint.
/// Alphabetical; never change it without a new version. `expected_version`
/// came later and is left out when absent, so an unconditional move encodes
/// byte for byte as before (its old keys still replay) and a conditional
/// one can never encode like an unconditional one.
#[derive(Serialize)]
pub(crate) struct CanonicalTransitionV1<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_version: Option<i64>,
    reason: Option<&'a str>,
    ticket_id: String,
    to: &'static str,
}

impl Transition {
    pub(crate) fn canonical(&self) -> CanonicalTransitionV1<'_> {
        CanonicalTransitionV1 {
            expected_version: self.expected_version.map(Version::get),
            reason: self.reason.as_ref().map(Reason::as_str),
            ticket_id: self.ticket_id.to_string(),
            to: self.to.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(at: TicketAt) -> String {
        let draft = TransitionDraft {
            to: Some("in_progress".into()),
            reason: Some("Paged".into()),
        };
        let command = draft.validate(at).expect("valid");
        serde_json::to_string(&command.canonical()).expect("json")
    }

    /// Keys the previous release recorded (without a version) must still
    /// replay, so an unconditional move encodes exactly as it did.
    #[test]
    fn an_unconditional_move_encodes_as_before_and_a_conditional_one_does_not() {
        let id = TicketId::new_v7();
        assert_eq!(
            canonical(id.into()),
            format!(r#"{{"reason":"Paged","ticket_id":"{id}","to":"in_progress"}}"#)
        );
        let at = TicketAt::new(id, Some(Version::from_stored(3)));
        assert_eq!(
            canonical(at),
            format!(
                r#"{{"expected_version":3,"reason":"Paged","ticket_id":"{id}","to":"in_progress"}}"#
            )
        );
    }
}

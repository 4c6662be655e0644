//! `add_label` and `remove_label`: the request as sent and the validated
//! command, one for both (whether it adds or removes is the action's).

use serde::{Deserialize, Serialize};

use super::label::Label;
use super::precondition::TicketAt;
use super::ticket::{TicketId, Version, keep, required};
use super::violation::FieldViolation;

/// An `add_label` or `remove_label` body as a caller sent it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelDraft {
    /// Required: the label.
    pub label: Option<String>,
}

/// A validated `add_label` or `remove_label`: what the fingerprint is
/// computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelChange {
    /// The ticket labelled.
    pub ticket_id: TicketId,
    /// Refuse the change unless the ticket is at this version.
    pub expected_version: Option<Version>,
    /// The label added or removed.
    pub label: Label,
}

impl LabelDraft {
    /// Validates the body for a change to the labels of the ticket `at`
    /// names.
    pub fn validate(&self, at: impl Into<TicketAt>) -> Result<LabelChange, Vec<FieldViolation>> {
        let TicketAt {
            ticket_id,
            expected_version,
        } = at.into();
        let mut violations = Vec::new();
        let label = keep(
            &mut violations,
            required(&self.label, "label").and_then(Label::parse),
        );
        match label {
            Some(label) if violations.is_empty() => Ok(LabelChange {
                ticket_id,
                expected_version,
                label,
            }),
            _ => Err(violations),
        }
    }
}

/// Version 1 of a label change's canonical form, for the fingerprint.
/// Alphabetical; never change it without a new version. Whether it adds
/// or removes is the action's, which the fingerprint covers too.
#[derive(Serialize)]
pub(crate) struct CanonicalLabelV1<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_version: Option<i64>,
    label: &'a str,
    ticket_id: String,
}

impl LabelChange {
    pub(crate) fn canonical(&self) -> CanonicalLabelV1<'_> {
        CanonicalLabelV1 {
            expected_version: self.expected_version.map(Version::get),
            label: self.label.as_str(),
            ticket_id: self.ticket_id.to_string(),
        }
    }
}

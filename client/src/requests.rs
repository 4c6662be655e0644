//! What a write asks for: the four requests, as the client journals them
//! and sends them. Field rules (lengths, the project's pattern) are the
//! server's to enforce; a request it refuses comes back as a problem, so
//! the client keeps no copy of them that could drift.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use uuid::Uuid;

use crate::action::Made;
use crate::key::OperationKey;
use crate::network::{Call, Method};
use crate::resources::{Priority, TicketId, TicketStatus};

/// A ticket to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewTicket {
    /// Project slug (`[a-z0-9][a-z0-9_-]{0,63}`).
    pub project_id: String,
    /// One-line summary.
    pub title: String,
    /// Longer text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How urgent (the server's default, `normal`, when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// `true`: a second ticket is meant even if one with the same content
    /// was made under another key within the server's window (its
    /// likely-duplicate guard, in `confirm` mode, refuses it otherwise:
    /// `Settled::Refused` with `possible-duplicate`). Not part of the
    /// request's meaning: a retry replays whatever it says.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm_new: bool,
}

impl NewTicket {
    /// A ticket with a project and a title, the rest left to defaults.
    pub fn new(project_id: impl Into<String>, title: impl Into<String>) -> Self {
        Self {
            project_id: project_id.into(),
            title: title.into(),
            description: None,
            priority: None,
            confirm_new: false,
        }
    }
}

/// One field of a merge patch that can be removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PatchField<T> {
    /// Left out: kept as it is.
    #[default]
    Keep,
    /// `null`: removed.
    Remove,
    /// Set to this.
    Set(T),
}

impl<T> PatchField<T> {
    /// Whether the field is left out.
    pub fn is_keep(&self) -> bool {
        matches!(self, PatchField::Keep)
    }
}

/// How a removable field is written: `null` to remove it, its value to
/// set it (a kept one is skipped before this is called).
fn write_patch_field<T: Serialize, S: Serializer>(
    field: &PatchField<T>,
    out: S,
) -> Result<S::Ok, S::Error> {
    match field {
        PatchField::Keep | PatchField::Remove => out.serialize_none(),
        PatchField::Set(value) => out.serialize_some(value),
    }
}

/// How a removable field is read back: present and `null` is a removal,
/// present with a value sets it (absent is [`PatchField::Keep`], the
/// default).
fn read_patch_field<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    input: D,
) -> Result<PatchField<T>, D::Error> {
    Ok(match Option::<T>::deserialize(input)? {
        None => PatchField::Remove,
        Some(value) => PatchField::Set(value),
    })
}

/// A change to a ticket's editable fields, sent as a JSON merge patch:
/// what is left out is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketPatch {
    /// A new title (it cannot be removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new description, or its removal.
    #[serde(
        default,
        skip_serializing_if = "PatchField::is_keep",
        serialize_with = "write_patch_field",
        deserialize_with = "read_patch_field"
    )]
    pub description: PatchField<String>,
    /// A new priority (it cannot be removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// A new assignee, or nobody.
    #[serde(
        default,
        skip_serializing_if = "PatchField::is_keep",
        serialize_with = "write_patch_field",
        deserialize_with = "read_patch_field"
    )]
    pub assignee: PatchField<String>,
}

/// One write, with everything it sends. This is what the journal keeps,
/// beside the key, so that a resumed entry sends the same request.
///
/// Its kinds are the client's [`Action`]s, derived: a new variant here is
/// a new action, named by the variant in snake case (`AddComment` is
/// `add_comment`), as the server names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[serde(tag = "action", rename_all = "snake_case")]
#[strum_discriminants(
    name(Action),
    vis(pub),
    doc = "A write action, by the name the contract gives it: each key is scoped to one, and the status lookup is addressed by it. One per kind of `WriteRequest`.",
    derive(
        Hash,
        Serialize,
        Deserialize,
        strum::IntoStaticStr,
        strum::VariantArray
    ),
    serde(rename_all = "snake_case"),
    strum(serialize_all = "snake_case")
)]
pub enum WriteRequest {
    /// Create a ticket.
    CreateTicket {
        /// The ticket.
        ticket: NewTicket,
    },
    /// Change a ticket's fields.
    UpdateTicket {
        /// Which ticket.
        ticket_id: TicketId,
        /// What changes.
        patch: TicketPatch,
        /// Only if the ticket is at this version (`If-Match`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        if_match: Option<u64>,
    },
    /// Move a ticket to another status.
    TransitionTicket {
        /// Which ticket.
        ticket_id: TicketId,
        /// Where to.
        to: TicketStatus,
        /// Why, kept in its history.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Comment on a ticket.
    AddComment {
        /// Which ticket.
        ticket_id: TicketId,
        /// The text.
        body: String,
    },
    /// Put a label on a ticket (one it has already changes nothing).
    AddLabel {
        /// Which ticket.
        ticket_id: TicketId,
        /// The label: 1 to 50 of `a-z`, `0-9` and `-`.
        label: String,
    },
    /// Take a label off a ticket (one it lacks changes nothing).
    RemoveLabel {
        /// Which ticket.
        ticket_id: TicketId,
        /// The label.
        label: String,
    },
}

impl WriteRequest {
    /// Its action.
    pub fn action(&self) -> Action {
        self.into()
    }

    /// The contract's route for it under `key`: method, path, body and
    /// `If-Match`. Every attempt sends these same bytes, each with its own
    /// request id (filled per attempt). The client's one table of how each
    /// action is sent, beside [`Action::made`].
    pub(crate) fn call(&self, key: &OperationKey) -> Result<Call, serde_json::Error> {
        let (method, path, body, if_match) = match self {
            WriteRequest::CreateTicket { ticket } => (
                Method::Post,
                vec!["v1".into(), "tickets".into()],
                Some(("application/json", serde_json::to_vec(ticket)?)),
                None,
            ),
            WriteRequest::UpdateTicket {
                ticket_id,
                patch,
                if_match,
            } => (
                Method::Patch,
                ticket_path(*ticket_id, None),
                Some(("application/merge-patch+json", serde_json::to_vec(patch)?)),
                *if_match,
            ),
            WriteRequest::TransitionTicket {
                ticket_id,
                to,
                reason,
            } => {
                #[derive(serde::Serialize)]
                struct Body<'a> {
                    to: &'a str,
                    #[serde(skip_serializing_if = "Option::is_none")]
                    reason: Option<&'a str>,
                }
                let body = Body {
                    to: to.as_str(),
                    reason: reason.as_deref(),
                };
                (
                    Method::Post,
                    ticket_path(*ticket_id, Some("transitions")),
                    Some(("application/json", serde_json::to_vec(&body)?)),
                    None,
                )
            }
            WriteRequest::AddComment { ticket_id, body } => {
                #[derive(serde::Serialize)]
                struct Body<'a> {
                    body: &'a str,
                }
                (
                    Method::Post,
                    ticket_path(*ticket_id, Some("comments")),
                    Some(("application/json", serde_json::to_vec(&Body { body })?)),
                    None,
                )
            }
            WriteRequest::AddLabel { ticket_id, label } => {
                #[derive(serde::Serialize)]
                struct Body<'a> {
                    label: &'a str,
                }
                (
                    Method::Post,
                    ticket_path(*ticket_id, Some("labels")),
                    Some(("application/json", serde_json::to_vec(&Body { label })?)),
                    None,
                )
            }
            // No body: the label is the last segment of the path.
            WriteRequest::RemoveLabel { ticket_id, label } => {
                let mut path = ticket_path(*ticket_id, Some("labels"));
                path.push(label.clone());
                (Method::Delete, path, None, None)
            }
        };
        Ok(Call {
            method,
            path,
            query: Vec::new(),
            key: Some(key.clone()),
            if_match,
            body,
            request_id: Uuid::nil(),
        })
    }
}

impl Action {
    /// What a successful answer carries: a ticket for the ticket writes, a
    /// comment for `add_comment`.
    pub fn made(self) -> Made {
        match self {
            Action::AddComment => Made::Comment,
            Action::CreateTicket
            | Action::UpdateTicket
            | Action::TransitionTicket
            | Action::AddLabel
            | Action::RemoveLabel => Made::Ticket,
        }
    }
}

/// `/v1/tickets/{id}` and, if given, one segment under it.
pub(crate) fn ticket_path(ticket_id: TicketId, under: Option<&str>) -> Vec<String> {
    let mut path = vec!["v1".into(), "tickets".into(), ticket_id.to_string()];
    path.extend(under.map(str::to_owned));
    path
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_patch_is_a_merge_patch_and_reads_back_the_same() {
        let patch = TicketPatch {
            title: Some("New".into()),
            description: PatchField::Remove,
            priority: None,
            assignee: PatchField::Set("Ada".into()),
        };
        let json = serde_json::to_value(&patch).expect("JSON");
        assert_eq!(
            json,
            json!({"title": "New", "description": null, "assignee": "Ada"}),
            "left out: kept; null: removed"
        );
        let back: TicketPatch = serde_json::from_value(json).expect("a patch");
        assert_eq!(back, patch);
        assert_eq!(
            serde_json::to_value(TicketPatch::default()).expect("JSON"),
            json!({})
        );
    }

    #[test]
    fn a_request_round_trips_through_its_journal_form() {
        let ticket_id: TicketId = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79"
            .parse()
            .expect("an id");
        for request in [
            WriteRequest::CreateTicket {
                ticket: NewTicket::new("ops", "Disk full"),
            },
            WriteRequest::UpdateTicket {
                ticket_id,
                patch: TicketPatch {
                    assignee: PatchField::Remove,
                    ..TicketPatch::default()
                },
                if_match: Some(3),
            },
            WriteRequest::TransitionTicket {
                ticket_id,
                to: TicketStatus::InProgress,
                reason: Some("on it".into()),
            },
            WriteRequest::AddComment {
                ticket_id,
                body: "seen".into(),
            },
            WriteRequest::AddLabel {
                ticket_id,
                label: "disk".into(),
            },
            WriteRequest::RemoveLabel {
                ticket_id,
                label: "disk".into(),
            },
        ] {
            let json = serde_json::to_string(&request).expect("JSON");
            assert!(json.contains(request.action().as_str()), "{json}");
            let back: WriteRequest = serde_json::from_str(&json).expect("a request");
            assert_eq!(back, request);
        }
    }
}

//! Bodies as the REST door shows and reads them. The kitchen's types know
//! nothing of OpenAPI; these do, and convert to and from them.
//!
//! Every limit a schema states (lengths, page sizes, the enums) is taken
//! from the kitchen's constants, never retyped, so the document cannot
//! drift from what the kitchen accepts.
//!
//! # Layout
//! - this file: the bodies (tickets, comments, history, requests);
//! - `fields.rs`: the schema of each field and parameter.

mod fields;

use std::collections::BTreeMap;

use kitchen::{Comment, CommentPage, HistoryEntry, HistoryPage, Ticket, TicketDraft};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::links;

use fields::*;
pub(crate) use fields::{
    action_schema, label_schema, limit_schema, parameter, status_schema, statuses_schema,
};

/// A ticket. Writes answer with the kitchen's frozen snapshot of it; a test
/// checks that this shape serializes to exactly those bytes, so that a
/// `GET` and a write's answer of the same ticket at the same version are
/// identical.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Ticket)]
pub(crate) struct TicketBody {
    /// Server-made UUID v7.
    #[schema(format = Uuid)]
    id: String,
    /// Project slug.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    project_id: String,
    /// One-line summary.
    #[schema(schema_with = title_schema)]
    title: String,
    /// Longer text, or null.
    #[schema(schema_with = description_schema, required = true)]
    description: Option<String>,
    /// How urgent.
    #[schema(schema_with = priority_schema)]
    priority: &'static str,
    /// Where it is in its life (`open` at creation).
    #[schema(schema_with = status_schema)]
    status: &'static str,
    /// RFC 3339, UTC.
    #[schema(format = DateTime)]
    created_at: String,
    /// The ticket provider's id for it, when tickets are made in a provider
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_ticket_id: Option<String>,
    /// Who works on it; absent when nobody does.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = assignee_schema)]
    assignee: Option<String>,
    /// 1 at creation, +1 for every change; also the `ETag` (`"3"`) that
    /// `If-Match` takes.
    #[schema(minimum = 1, example = 1)]
    version: i64,
    /// When it last changed (RFC 3339, UTC); absent until its first change.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    updated_at: Option<String>,
    /// Its labels, alphabetical; absent when it has none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = labels_schema)]
    labels: Vec<String>,
}

impl From<Ticket> for TicketBody {
    fn from(t: Ticket) -> Self {
        Self {
            id: t.id.to_string(),
            project_id: t.project_id.as_str().into(),
            title: t.title.as_str().into(),
            description: t.description.map(|d| d.as_str().into()),
            priority: t.priority.as_str(),
            status: t.status.as_str(),
            created_at: links::rfc3339(t.created_at),
            provider_ticket_id: t.provider_ticket_id,
            assignee: t.assignee.map(|a| a.as_str().into()),
            version: t.version.get(),
            updated_at: t.updated_at.map(links::rfc3339),
            labels: t
                .labels
                .as_slice()
                .iter()
                .map(|l| l.as_str().into())
                .collect(),
        }
    }
}

/// The body of `POST /v1/tickets`. Unknown fields are refused, so a typo
/// (or an attempt to name a tenant) is an error, not silently dropped.
/// Every field is read as optional text so that each problem is reported by
/// field name, by the kitchen's validation; the schema says what that
/// validation accepts (a missing or `null` `project_id` or `title` is a
/// `400` listing it), so a request valid by this schema is never refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CreateTicket)]
pub(crate) struct CreateTicketRequest {
    /// Required. Project slug: lowercase letters, digits, `_`, `-`; starts with a letter or digit.
    #[schema(
        value_type = String,
        pattern = "^[a-z0-9][a-z0-9_-]{0,63}$",
        example = "billing-api",
        required = true
    )]
    project_id: Option<String>,
    /// Required. One line, not blank.
    #[schema(schema_with = create_title_schema, required = true)]
    title: Option<String>,
    /// Longer text; empty or `null` means none.
    #[schema(schema_with = create_description_schema)]
    description: Option<String>,
    /// Default `normal` (also when `null`).
    #[schema(schema_with = optional_priority_schema)]
    priority: Option<String>,
    /// `true`: a new ticket is meant even if one with the same content was
    /// made under another key within the last minutes (the likely-duplicate
    /// guard then neither warns nor refuses). Not part of the request's
    /// meaning: it changes nothing about a replay or a conflict.
    #[expect(
        dead_code,
        reason = "documented here; json_body::parse_confirming takes it out of the body first"
    )]
    #[serde(default)]
    confirm_new: Option<bool>,
}

impl From<CreateTicketRequest> for TicketDraft {
    fn from(r: CreateTicketRequest) -> Self {
        TicketDraft {
            project_id: r.project_id,
            title: r.title,
            description: r.description,
            priority: r.priority,
        }
    }
}

/// The body of `PATCH /v1/tickets/{id}`: a JSON merge patch (RFC 7396) of
/// the ticket's editable fields. A field left out is kept, `null` removes
/// it (only `description` and `assignee` can be removed), a value replaces
/// it. Unknown fields (`status` included: use the transitions) are refused
/// by name. An empty object changes nothing, and still uses the key.
///
/// The body is read straight into the kitchen's patch; this type only
/// describes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TicketPatch)]
#[expect(
    dead_code,
    reason = "never built: only its derived OpenAPI schema is used"
)]
pub(crate) struct TicketPatchRequest {
    /// A new title.
    #[schema(schema_with = patch_title_schema)]
    title: Option<String>,
    /// A new description, or `null` to remove it.
    #[schema(schema_with = patch_description_schema)]
    description: Option<String>,
    /// A new priority.
    #[schema(schema_with = patch_priority_schema)]
    priority: Option<String>,
    /// A new assignee, or `null` to unassign.
    #[schema(schema_with = patch_assignee_schema)]
    assignee: Option<String>,
}

/// The body of `POST /v1/tickets/{id}/transitions`. Read straight into the
/// kitchen's transition draft; this type only describes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "never built: only its derived OpenAPI schema is used"
)]
pub(crate) struct TransitionRequest {
    /// Where to.
    #[schema(schema_with = transition_to_schema, required = true)]
    to: Option<String>,
    /// Why, if you like.
    #[schema(schema_with = reason_schema)]
    reason: Option<String>,
}

/// The body of `POST /v1/tickets/{id}/comments`. Read straight into the
/// kitchen's comment draft; this type only describes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "never built: only its derived OpenAPI schema is used"
)]
pub(crate) struct CommentRequest {
    /// The comment's text.
    #[schema(schema_with = comment_request_body_schema, required = true)]
    body: Option<String>,
    /// `true`: a new comment is meant even if one with the same text was
    /// added to this ticket under another key within the last minutes (the
    /// likely-duplicate guard then neither warns nor refuses). Not part of
    /// the request's meaning: it changes nothing about a replay or a
    /// conflict.
    confirm_new: Option<bool>,
}

/// A comment on a ticket. `POST` answers with the kitchen's frozen
/// snapshot of it; this shape serializes to exactly those bytes.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Comment)]
pub(crate) struct CommentBody {
    /// Server-made UUID v7.
    #[schema(format = Uuid)]
    id: String,
    /// The ticket it is on.
    #[schema(format = Uuid)]
    ticket_id: String,
    /// The text.
    #[schema(schema_with = comment_body_schema)]
    body: String,
    /// When it was added (RFC 3339, UTC).
    #[schema(format = DateTime)]
    created_at: String,
    /// The ticket provider's id for it, when tickets are kept in a provider
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_comment_id: Option<String>,
}

impl From<Comment> for CommentBody {
    fn from(c: Comment) -> Self {
        Self {
            id: c.id.to_string(),
            ticket_id: c.ticket_id.to_string(),
            body: c.body.as_str().into(),
            created_at: links::rfc3339(c.created_at),
            provider_comment_id: c.provider_comment_id,
        }
    }
}

/// A page of a ticket's comments, oldest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CommentPage)]
pub(crate) struct CommentPageBody {
    /// The comments.
    comments: Vec<CommentBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

impl From<CommentPage> for CommentPageBody {
    fn from(page: CommentPage) -> Self {
        Self {
            comments: page.comments.into_iter().map(CommentBody::from).collect(),
            next_cursor: page.next_cursor.map(|c| c.to_string()),
        }
    }
}

/// One field's change: its value before and after (`null` for none).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Change)]
pub(crate) struct ChangeBody {
    /// Before the write.
    #[schema(schema_with = any_value)]
    from: serde_json::Value,
    /// After the write.
    #[schema(schema_with = any_value)]
    to: serde_json::Value,
}

/// One write that changed a ticket.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = HistoryEntry)]
pub(crate) struct HistoryEntryBody {
    /// Server-made UUID v7; entries sort by it in the order they happened.
    #[schema(format = Uuid)]
    id: String,
    /// The ticket changed.
    #[schema(format = Uuid)]
    ticket_id: String,
    /// The write.
    #[schema(schema_with = action_schema)]
    action: &'static str,
    /// The Idempotency-Key (or MCP `operation_id`) of that write: its
    /// status resource is `/v1/operations/{action}/{operation_key}`.
    operation_key: String,
    /// The id of the API token the write was made with, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    actor_token_id: Option<String>,
    /// Every field the write changed, by name, with its value before and
    /// after (a transition's `reason` and a comment's `comment_id` appear as
    /// added). Empty only for a write that changed nothing visible.
    changes: BTreeMap<String, ChangeBody>,
    /// The ticket's version after the write.
    #[schema(minimum = 1)]
    version: i64,
    /// When the write committed (RFC 3339, UTC).
    #[schema(format = DateTime)]
    recorded_at: String,
}

impl From<HistoryEntry> for HistoryEntryBody {
    fn from(e: HistoryEntry) -> Self {
        Self {
            id: e.id.to_string(),
            ticket_id: e.ticket_id.to_string(),
            action: e.action.as_str(),
            operation_key: e.operation_key.as_str().into(),
            actor_token_id: e.actor_token_id.map(|t| t.to_string()),
            changes: e
                .changes
                .fields()
                .iter()
                .map(|(field, change)| {
                    (
                        field.clone(),
                        ChangeBody {
                            from: change.from.clone(),
                            to: change.to.clone(),
                        },
                    )
                })
                .collect(),
            version: e.version.get(),
            recorded_at: links::rfc3339(e.recorded_at),
        }
    }
}

/// A page of a ticket's history, oldest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = HistoryPage)]
pub(crate) struct HistoryPageBody {
    /// The entries.
    entries: Vec<HistoryEntryBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

impl From<HistoryPage> for HistoryPageBody {
    fn from(page: HistoryPage) -> Self {
        Self {
            entries: page
                .entries
                .into_iter()
                .map(HistoryEntryBody::from)
                .collect(),
            next_cursor: page.next_cursor.map(|c| c.to_string()),
        }
    }
}

#[cfg(test)]
mod tests;

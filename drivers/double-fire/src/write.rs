//! What the driver asks a door for: one request of one of the service's
//! write actions ([`Write`]), as REST sends it and as MCP's tool takes it.
//! The one place the driver spells out each action's request.

use kitchen::Action;
use reqwest::Method;
use serde_json::{Value, json};

/// A ticket to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The project slug (unique per check, so counts are exact).
    pub project_id: String,
    /// The title.
    pub title: String,
}

/// A write to ask a door for: one request of one of the service's actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// `create_ticket`: `POST /v1/tickets`.
    Create(Ticket),
    /// `update_ticket`: `PATCH /v1/tickets/{id}` setting the title, with
    /// `If-Match` (MCP `expected_version`) when a version is expected.
    Update {
        /// The ticket to edit.
        ticket_id: String,
        /// Its new title.
        title: String,
        /// Only if the ticket is still at this version.
        expected_version: Option<i64>,
    },
    /// `transition_ticket`: `POST /v1/tickets/{id}/transitions`.
    Transition {
        /// The ticket to move.
        ticket_id: String,
        /// The status to move it to, e.g. `in_progress`.
        to: String,
        /// Why.
        reason: Option<String>,
    },
    /// `add_comment`: `POST /v1/tickets/{id}/comments`.
    Comment {
        /// The ticket to comment on.
        ticket_id: String,
        /// The comment.
        body: String,
    },
    /// `add_label`: `POST /v1/tickets/{id}/labels`.
    AddLabel {
        /// The ticket to label.
        ticket_id: String,
        /// The label.
        label: String,
    },
    /// `remove_label`: `DELETE /v1/tickets/{id}/labels/{label}`.
    RemoveLabel {
        /// The ticket to take the label off.
        ticket_id: String,
        /// The label.
        label: String,
    },
}

impl Write {
    /// The action this write is.
    pub fn action(&self) -> Action {
        match self {
            Write::Create(_) => Action::CreateTicket,
            Write::Update { .. } => Action::UpdateTicket,
            Write::Transition { .. } => Action::TransitionTicket,
            Write::Comment { .. } => Action::AddComment,
            Write::AddLabel { .. } => Action::AddLabel,
            Write::RemoveLabel { .. } => Action::RemoveLabel,
        }
    }

    /// The REST request: method, path, body, content type, and the status
    /// a performed (or replayed) write answers with.
    pub(crate) fn rest(&self) -> (Method, String, Value, &'static str, u16) {
        const JSON: &str = "application/json";
        match self {
            Write::Create(t) => (
                Method::POST,
                "/v1/tickets".into(),
                json!({"project_id": t.project_id, "title": t.title}),
                JSON,
                201,
            ),
            Write::Update {
                ticket_id, title, ..
            } => (
                Method::PATCH,
                format!("/v1/tickets/{ticket_id}"),
                json!({"title": title}),
                "application/merge-patch+json",
                200,
            ),
            Write::Transition {
                ticket_id,
                to,
                reason,
            } => (
                Method::POST,
                format!("/v1/tickets/{ticket_id}/transitions"),
                with_reason(json!({"to": to}), reason),
                JSON,
                200,
            ),
            Write::Comment { ticket_id, body } => (
                Method::POST,
                format!("/v1/tickets/{ticket_id}/comments"),
                json!({"body": body}),
                JSON,
                201,
            ),
            Write::AddLabel { ticket_id, label } => (
                Method::POST,
                format!("/v1/tickets/{ticket_id}/labels"),
                json!({"label": label}),
                JSON,
                200,
            ),
            // No body: the label is in the path.
            Write::RemoveLabel { ticket_id, label } => (
                Method::DELETE,
                format!("/v1/tickets/{ticket_id}/labels/{label}"),
                Value::Null,
                JSON,
                200,
            ),
        }
    }

    /// The MCP tool's arguments (without `operation_id`).
    pub(crate) fn mcp_arguments(&self) -> Value {
        match self {
            Write::Create(t) => json!({"project_id": t.project_id, "title": t.title}),
            Write::Update {
                ticket_id,
                title,
                expected_version,
            } => {
                let mut arguments = json!({"ticket_id": ticket_id, "title": title});
                if let Some(version) = expected_version {
                    arguments["expected_version"] = json!(version);
                }
                arguments
            }
            Write::Transition {
                ticket_id,
                to,
                reason,
            } => with_reason(json!({"ticket_id": ticket_id, "to": to}), reason),
            Write::Comment { ticket_id, body } => json!({"ticket_id": ticket_id, "body": body}),
            Write::AddLabel { ticket_id, label } | Write::RemoveLabel { ticket_id, label } => {
                json!({"ticket_id": ticket_id, "label": label})
            }
        }
    }

    /// Where the MCP tool result carries what the write made or changed.
    pub(crate) fn mcp_resource(&self) -> &'static str {
        match self.action() {
            Action::AddComment => "comment",
            Action::CreateTicket
            | Action::UpdateTicket
            | Action::TransitionTicket
            | Action::AddLabel
            | Action::RemoveLabel => "ticket",
        }
    }
}

fn with_reason(mut body: Value, reason: &Option<String>) -> Value {
    if let Some(reason) = reason {
        body["reason"] = json!(reason);
    }
    body
}

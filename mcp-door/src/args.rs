//! Tool arguments. Fields are optional text on the wire (and marked
//! required in the schema where they are): rmcp does not enforce schema
//! limits, so the kitchen validates everything and reports each problem by
//! name, the same way the REST door does.

use std::collections::BTreeMap;

use kitchen::{FieldViolation, TicketDraft};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::contract;

/// `create_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CreateTicketArgs {
    /// The operation id.
    #[schemars(required, description = contract::OPERATION_ID_ARG, length(min = 8, max = 255))]
    pub operation_id: Option<String>,
    /// The ticket.
    #[serde(flatten)]
    pub ticket: TicketArgs,
}

/// The fields of a ticket, shared by `create_ticket` and `preview_ticket`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TicketArgs {
    /// Project slug.
    #[schemars(required, description = contract::PROJECT_ID_ARG, regex(pattern = r"^[a-z0-9][a-z0-9_-]{0,63}$"))]
    pub project_id: Option<String>,
    /// One line, 1 to 200 characters, not blank.
    #[schemars(required, length(min = 1, max = 200))]
    pub title: Option<String>,
    /// Longer text, up to 10,000 characters.
    #[schemars(length(max = 10000))]
    pub description: Option<String>,
    /// How urgent: low, normal (default), high or urgent.
    #[schemars(extend("enum" = ["low", "normal", "high", "urgent"]))]
    pub priority: Option<String>,
    /// Anything else the caller sent. serde cannot combine
    /// `deny_unknown_fields` with `flatten`, so unknown arguments are
    /// collected here and refused by name (a misspelt field must not be
    /// silently dropped, and no argument can name a tenant).
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown: BTreeMap<String, serde_json::Value>,
}

impl TicketArgs {
    /// The draft to validate, or the unknown arguments by name.
    pub fn into_draft(self) -> Result<TicketDraft, Vec<FieldViolation>> {
        if !self.unknown.is_empty() {
            return Err(self
                .unknown
                .keys()
                .map(|name| FieldViolation {
                    field: name.clone(),
                    code: "unknown_argument",
                    message: format!(
                        "{name} is not an argument of this tool; see its input schema"
                    ),
                })
                .collect());
        }
        Ok(TicketDraft {
            project_id: self.project_id,
            title: self.title,
            description: self.description,
            priority: self.priority,
        })
    }
}

/// `preview_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PreviewTicketArgs {
    /// The ticket.
    #[serde(flatten)]
    pub ticket: TicketArgs,
}

/// `get_operation_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationStatusArgs {
    /// The operation id to look up.
    #[schemars(required, description = contract::OPERATION_ID_LOOKUP_ARG)]
    pub operation_id: Option<String>,
}

/// `get_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTicketArgs {
    /// The ticket id.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub ticket_id: Option<String>,
}

/// `list_tickets` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTicketsArgs {
    /// Only tickets of this project.
    #[schemars(description = contract::PROJECT_ID_ARG)]
    pub project_id: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// Where the page starts.
    #[schemars(description = contract::CURSOR_ARG)]
    pub cursor: Option<String>,
}

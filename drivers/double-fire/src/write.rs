//! What the driver asks a door for: one request of one of the service's
//! write actions ([`Write`]), as REST sends it and as MCP's tool takes it.
//! A `Write` is data, the same shape for every action, so sending one and
//! reading its answer is written once (`doors.rs`); each action's request
//! is spelt out where the driver plans its checks (`actions.rs`), and a
//! create's here, since every check makes tickets.

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
pub struct Write {
    action: Action,
    rest: Rest,
    mcp_arguments: Value,
    mcp_resource: &'static str,
}

/// A write as the REST door takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rest {
    pub(crate) method: Method,
    /// From the root, e.g. `/v1/tickets`.
    pub(crate) path: String,
    /// The body and its content type; none where the path says it all.
    pub(crate) body: Option<(&'static str, Value)>,
    /// Only if the ticket is still at this version (`If-Match`).
    pub(crate) if_match: Option<i64>,
    /// The status a performed (or replayed) write answers with.
    pub(crate) performed: u16,
}

impl Rest {
    /// A request with a JSON body, unconditional.
    pub(crate) fn json(method: Method, path: String, body: Value, performed: u16) -> Self {
        Self::with_body(method, path, "application/json", body, performed)
    }

    /// A request with a body of `content_type`, unconditional.
    pub(crate) fn with_body(
        method: Method,
        path: String,
        content_type: &'static str,
        body: Value,
        performed: u16,
    ) -> Self {
        Self {
            method,
            path,
            body: Some((content_type, body)),
            if_match: None,
            performed,
        }
    }

    /// Only if the ticket is still at `version`, when one is given.
    pub(crate) fn if_match(self, version: Option<i64>) -> Self {
        Self {
            if_match: version,
            ..self
        }
    }
}

impl Write {
    /// `action` as REST sends it and as MCP's tool takes it (its
    /// arguments without `operation_id`); the MCP result carries what the
    /// write made or changed under `mcp_resource` (`ticket`, `comment`).
    pub(crate) fn new(
        action: Action,
        rest: Rest,
        mcp_arguments: Value,
        mcp_resource: &'static str,
    ) -> Self {
        Self {
            action,
            rest,
            mcp_arguments,
            mcp_resource,
        }
    }

    /// `create_ticket`: `POST /v1/tickets`.
    pub fn create(ticket: &Ticket) -> Self {
        let body = json!({"project_id": ticket.project_id, "title": ticket.title});
        Self::new(
            Action::CreateTicket,
            Rest::json(Method::POST, "/v1/tickets".into(), body.clone(), 201),
            body,
            "ticket",
        )
    }

    /// The action this write is.
    pub fn action(&self) -> Action {
        self.action
    }

    /// The REST request.
    pub(crate) fn rest(&self) -> &Rest {
        &self.rest
    }

    /// The MCP tool's arguments (without `operation_id`).
    pub(crate) fn mcp_arguments(&self) -> Value {
        self.mcp_arguments.clone()
    }

    /// Where the MCP tool result carries what the write made or changed.
    pub(crate) fn mcp_resource(&self) -> &'static str {
        self.mcp_resource
    }
}

//! What the tracker accepts: request bodies checked field by field and
//! turned into the requests the store acts on. Two requests are equal when
//! the caller asked for the same thing (the ticket in the path included),
//! which is exactly what an idempotency key's fingerprint must compare, so
//! these types hold what the caller sent and nothing the simulator added.
//! Unknown fields are ignored, as a lenient tracker would.

use serde_json::{Map, Value};

use super::api::STATUSES;

/// A validated create (`POST /api/tickets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewTicket {
    pub external_ref: String,
    pub project_id: String,
    pub title: String,
    pub description: Option<String>,
    pub priority: String,
}

/// A validated update (`PATCH /api/tickets/{id}`): `None` keeps a field,
/// and for the nullable ones `Some(None)` clears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TicketPatch {
    pub external_ref: String,
    pub expected_version: Option<u64>,
    pub title: Option<String>,
    pub description: Option<Option<String>>,
    pub priority: Option<String>,
    pub assignee: Option<Option<String>>,
}

/// A validated transition (`POST /api/tickets/{id}/transitions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewTransition {
    pub external_ref: String,
    /// One of [`STATUSES`].
    pub to: String,
    pub reason: Option<String>,
}

/// A validated comment (`POST /api/tickets/{id}/comments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewComment {
    pub external_ref: String,
    pub body: String,
}

/// Any request that writes, with the ticket it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Create(NewTicket),
    Update {
        ticket_id: String,
        patch: TicketPatch,
    },
    Transition {
        ticket_id: String,
        transition: NewTransition,
    },
    Comment {
        ticket_id: String,
        comment: NewComment,
    },
}

impl Request {
    pub(crate) fn external_ref(&self) -> &str {
        match self {
            Self::Create(ticket) => &ticket.external_ref,
            Self::Update { patch, .. } => &patch.external_ref,
            Self::Transition { transition, .. } => &transition.external_ref,
            Self::Comment { comment, .. } => &comment.external_ref,
        }
    }
}

/// A body's fields, read with the tracker's rules and error messages.
struct Fields(Map<String, Value>);

impl Fields {
    fn parse(body: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(body)
            .map(Self)
            .map_err(|e| format!("body must be a JSON object: {e}"))
    }

    /// A non-empty string that must be there.
    fn required(&self, name: &str) -> Result<String, String> {
        match self.0.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(Value::String(_)) => Err(format!("{name} must not be empty")),
            None | Some(Value::Null) => Err(format!("{name} is required")),
            Some(_) => Err(format!("{name} must be a string")),
        }
    }

    /// A non-empty string that may be left out (or null).
    fn optional(&self, name: &str) -> Result<Option<String>, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(_) => self.required(name).map(Some),
        }
    }

    /// A patch of a field that cannot be cleared: left out keeps it, null
    /// is refused (it would mean "clear").
    fn kept_or_set(&self, name: &str) -> Result<Option<String>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(Value::Null) => Err(format!("{name} cannot be null (leave it out to keep it)")),
            Some(_) => self.required(name).map(Some),
        }
    }

    /// A patch of a nullable field: left out keeps it, null clears it.
    fn kept_set_or_cleared(
        &self,
        name: &str,
        allow_empty: bool,
    ) -> Result<Option<Option<String>>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) if allow_empty || !s.is_empty() => Ok(Some(Some(s.clone()))),
            Some(Value::String(_)) => Err(format!("{name} must not be empty (null clears it)")),
            Some(_) => Err(format!("{name} must be a string or null")),
        }
    }
}

pub(crate) fn new_ticket(body: &[u8]) -> Result<NewTicket, String> {
    let fields = Fields::parse(body)?;
    let description = match fields.0.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("description must be a string or null".into()),
    };
    Ok(NewTicket {
        external_ref: fields.required("external_ref")?,
        project_id: fields.required("project_id")?,
        title: fields.required("title")?,
        description,
        priority: fields.required("priority")?,
    })
}

pub(crate) fn ticket_patch(body: &[u8]) -> Result<TicketPatch, String> {
    let fields = Fields::parse(body)?;
    // Ignoring it would turn a caller's mistake into a silent no-op.
    if fields.0.contains_key("status") {
        return Err("status changes only through POST /api/tickets/{id}/transitions".into());
    }
    let expected_version = match fields.0.get("expected_version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or("expected_version must be a whole number")?,
        ),
    };
    Ok(TicketPatch {
        external_ref: fields.required("external_ref")?,
        expected_version,
        title: fields.kept_or_set("title")?,
        // Empty descriptions are allowed on create, so here too.
        description: fields.kept_set_or_cleared("description", true)?,
        priority: fields.kept_or_set("priority")?,
        assignee: fields.kept_set_or_cleared("assignee", false)?,
    })
}

pub(crate) fn new_transition(body: &[u8]) -> Result<NewTransition, String> {
    let fields = Fields::parse(body)?;
    let external_ref = fields.required("external_ref")?;
    let to = fields.required("to")?;
    if !STATUSES.contains(&to.as_str()) {
        return Err(format!(
            "to must be one of {}, not {to:?}",
            STATUSES.join(", ")
        ));
    }
    Ok(NewTransition {
        external_ref,
        to,
        reason: fields.optional("reason")?,
    })
}

pub(crate) fn new_comment(body: &[u8]) -> Result<NewComment, String> {
    let fields = Fields::parse(body)?;
    Ok(NewComment {
        external_ref: fields.required("external_ref")?,
        body: fields.required("body")?,
    })
}

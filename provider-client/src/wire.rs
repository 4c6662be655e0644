//! The JSON the tracker speaks (`docs/provider-simulator.md`), and its
//! reading into the kitchen's port types. Reading is strict: a field that
//! is missing or does not parse makes the whole object unreadable, and an
//! unreadable answer never counts as proof of anything.

use std::collections::BTreeMap;

use kitchen::{
    Assignee, Changes, Description, Priority, ProviderEffect, ProviderReceipt, ProviderTicketState,
    ProviderWrite, Setting, TicketStatus, Title, Version,
};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A ticket as the tracker shows it.
#[derive(Debug, Deserialize)]
pub(crate) struct TicketBody {
    pub(crate) id: String,
    pub(crate) external_ref: String,
    title: String,
    description: Option<String>,
    priority: String,
    #[serde(default = "open")]
    status: String,
    #[serde(default)]
    assignee: Option<String>,
    #[serde(default = "first")]
    version: i64,
}

fn open() -> String {
    "open".into()
}

fn first() -> i64 {
    1
}

/// An entry in a ticket's changelog: an update or a move.
#[derive(Debug, Deserialize)]
pub(crate) struct ChangeBody {
    pub(crate) id: String,
    pub(crate) external_ref: String,
    pub(crate) ticket_id: String,
    changes: BTreeMap<String, ChangeValues>,
    ticket: TicketBody,
}

#[derive(Debug, Deserialize)]
struct ChangeValues {
    from: Value,
    to: Value,
}

/// A comment on a ticket.
#[derive(Debug, Deserialize)]
pub(crate) struct CommentBody {
    pub(crate) id: String,
    pub(crate) external_ref: String,
    pub(crate) ticket_id: String,
}

/// The answer to a search: one list, named by what was searched.
#[derive(Debug, Deserialize)]
pub(crate) struct Found<T> {
    #[serde(alias = "tickets", alias = "changes", alias = "comments")]
    pub(crate) items: Vec<T>,
}

/// What the tracker answered with a refusal.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorBody {
    pub(crate) error: String,
}

/// Something the tracker makes for one effect, read from its JSON.
pub(crate) trait Made: Sized {
    /// The reference it carries.
    fn external_ref(&self) -> &str;
    /// The tracker's id of it.
    fn id(&self) -> &str;
    /// The receipt, if every field reads; the reason otherwise.
    fn receipt(self) -> Result<ProviderReceipt, String>;
}

impl Made for TicketBody {
    fn external_ref(&self) -> &str {
        &self.external_ref
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn receipt(self) -> Result<ProviderReceipt, String> {
        Ok(ProviderReceipt {
            external_ref: self.external_ref,
            effect: ProviderEffect::Ticket { id: self.id },
        })
    }
}

impl Made for ChangeBody {
    fn external_ref(&self) -> &str {
        &self.external_ref
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn receipt(self) -> Result<ProviderReceipt, String> {
        if self.ticket.id != self.ticket_id {
            return Err(format!(
                "change {} is to ticket {} but shows ticket {}",
                self.id, self.ticket_id, self.ticket.id
            ));
        }
        let mut changes = Map::new();
        for (field, ChangeValues { from, to }) in self.changes {
            changes.insert(field, json!({ "from": from, "to": to }));
        }
        let changes: Changes = serde_json::from_value(Value::Object(changes))
            .map_err(|e| format!("change {}: unreadable changes: {e}", self.id))?;
        Ok(ProviderReceipt {
            external_ref: self.external_ref,
            effect: ProviderEffect::Change {
                id: self.id,
                changes,
                ticket: ticket_state(self.ticket)?,
            },
        })
    }
}

impl Made for CommentBody {
    fn external_ref(&self) -> &str {
        &self.external_ref
    }

    fn id(&self) -> &str {
        &self.id
    }

    fn receipt(self) -> Result<ProviderReceipt, String> {
        Ok(ProviderReceipt {
            external_ref: self.external_ref,
            effect: ProviderEffect::Comment { id: self.id },
        })
    }
}

/// A ticket's state as the service keeps it, if every field is one the
/// service accepts.
fn ticket_state(t: TicketBody) -> Result<ProviderTicketState, String> {
    let bad = |field: &str, why: String| format!("ticket {}: {field}: {why}", t.id);
    Ok(ProviderTicketState {
        title: Title::parse(t.title.clone()).map_err(|v| bad("title", v.message))?,
        description: Description::parse(t.description.clone().unwrap_or_default())
            .map_err(|v| bad("description", v.message))?,
        priority: Priority::parse(&t.priority).map_err(|v| bad("priority", v.message))?,
        status: TicketStatus::parse_field(&t.status, "status")
            .map_err(|v| bad("status", v.message))?,
        assignee: t
            .assignee
            .as_deref()
            .map(Assignee::parse)
            .transpose()
            .map_err(|v| bad("assignee", v.message))?,
        version: Version::parse(t.version, "version").map_err(|v| bad("version", v.message))?,
        id: t.id,
    })
}

/// The method, path and body that carry `write` for `external_ref`.
pub(crate) fn request(write: &ProviderWrite, external_ref: &str) -> (Method, String, Value) {
    let mut body = Map::new();
    body.insert("external_ref".into(), external_ref.into());
    let (method, path) = match write {
        ProviderWrite::CreateTicket {
            project_id,
            title,
            description,
            priority,
        } => {
            body.insert("project_id".into(), project_id.as_str().into());
            body.insert("title".into(), title.as_str().into());
            body.insert("description".into(), description.as_deref().into());
            body.insert("priority".into(), priority.as_str().into());
            (Method::POST, "/api/tickets".to_owned())
        }
        ProviderWrite::UpdateTicket {
            ticket,
            expected_version,
            title,
            description,
            priority,
            assignee,
        } => {
            if let Some(v) = expected_version {
                body.insert("expected_version".into(), (*v).into());
            }
            // Merge-patch: a field left out is kept, null removes it.
            let mut set = |name: &str, value: Setting<Value>| {
                if let Setting::Set(value) = value {
                    body.insert(name.into(), value);
                }
            };
            set("title", title.map(|t| t.as_str().into()));
            set("description", description.map(|d| d.as_deref().into()));
            set("priority", priority.map(|p| p.as_str().into()));
            set("assignee", assignee.map(|a| a.as_deref().into()));
            (Method::PATCH, format!("/api/tickets/{}", segment(ticket)))
        }
        ProviderWrite::TransitionTicket { ticket, to, reason } => {
            body.insert("to".into(), to.as_str().into());
            if let Some(reason) = reason {
                body.insert("reason".into(), reason.as_str().into());
            }
            let path = format!("/api/tickets/{}/transitions", segment(ticket));
            (Method::POST, path)
        }
        ProviderWrite::AddComment { ticket, body: text } => {
            body.insert("body".into(), text.as_str().into());
            let path = format!("/api/tickets/{}/comments", segment(ticket));
            (Method::POST, path)
        }
    };
    (method, path, Value::Object(body))
}

/// What a path segment escapes: everything but RFC 3986's unreserved
/// characters, except `.` (so that no id can be a dot segment).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

/// A provider id as one path segment: percent-encoded, so an id the
/// provider chose cannot step into another path.
fn segment(id: &str) -> String {
    utf8_percent_encode(id, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn a_provider_id_stays_one_path_segment() {
        assert_eq!(segment("SIM-1"), "SIM-1");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
        assert_eq!(segment(".."), "%2E%2E");
    }
}

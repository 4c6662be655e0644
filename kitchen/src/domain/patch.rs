//! Editing a ticket: the patch a caller sends (JSON merge-patch semantics)
//! and the validated edit it becomes.

use serde::{Deserialize, Deserializer, Serialize};

use super::change::Changes;
use super::ticket::{Assignee, Description, Priority, Ticket, TicketId, Title, Version, keep};
use super::violation::FieldViolation;

/// The fields of an update as a caller sent them, before validation, with
/// JSON merge-patch meaning: a field left out is kept, `null` removes it (only
/// `description` and `assignee` may be removed), a value replaces it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketPatch {
    /// A new title; `null` is refused (a ticket always has one).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub title: Option<Option<String>>,
    /// A new description; `null` or `""` removes it.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<Option<String>>,
    /// A new priority; `null` is refused (use `normal`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub priority: Option<Option<String>>,
    /// A new assignee; `null` unassigns.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub assignee: Option<Option<String>>,
}

/// Tells "sent as null" (`Some(None)`) from "left out" (`None`, through
/// `#[serde(default)]`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// An update request: which ticket, the version the caller expects it to be
/// at (if it cares), and the patch. Its JSON is how the remote backend
/// stores the request with the write-ahead record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketUpdate {
    /// The ticket to edit.
    pub ticket_id: TicketId,
    /// Refuse the edit unless the ticket is at this version.
    pub expected_version: Option<Version>,
    /// The fields to change.
    pub patch: TicketPatch,
}

/// What to do with one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting<T> {
    /// Leave it as it is.
    Keep,
    /// Make it this.
    Set(T),
}

impl<T> Setting<T> {
    /// The same setting, its value (if any) turned into another.
    pub fn map<U>(&self, f: impl FnOnce(&T) -> U) -> Setting<U> {
        match self {
            Self::Keep => Setting::Keep,
            Self::Set(value) => Setting::Set(f(value)),
        }
    }
}

/// A validated edit: what the fingerprint is computed over and what is
/// applied to the ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketEdit {
    /// The ticket to edit.
    pub ticket_id: TicketId,
    /// Refuse the edit unless the ticket is at this version.
    pub expected_version: Option<Version>,
    /// The title.
    pub title: Setting<Title>,
    /// The description (`None` removes it).
    pub description: Setting<Option<Description>>,
    /// The priority.
    pub priority: Setting<Priority>,
    /// The assignee (`None` unassigns).
    pub assignee: Setting<Option<Assignee>>,
}

impl TicketUpdate {
    /// Validates every field and reports every problem at once.
    pub fn validate(&self) -> Result<TicketEdit, Vec<FieldViolation>> {
        let mut violations = Vec::new();
        let v = &mut violations;
        let p = &self.patch;
        let title = keep(
            v,
            not_null(&p.title, "title", "a ticket always has a title").and_then(|t| match t {
                None => Ok(Setting::Keep),
                Some(raw) => Title::parse(raw).map(Setting::Set),
            }),
        );
        let description = keep(
            v,
            match &p.description {
                None => Ok(Setting::Keep),
                Some(raw) => Description::parse(raw.clone().unwrap_or_default()).map(Setting::Set),
            },
        );
        let priority = keep(
            v,
            not_null(
                &p.priority,
                "priority",
                "use normal for the default priority",
            )
            .and_then(|raw| match raw {
                None => Ok(Setting::Keep),
                Some(raw) => Priority::parse(&raw).map(Setting::Set),
            }),
        );
        let assignee = keep(
            v,
            match &p.assignee {
                None => Ok(Setting::Keep),
                Some(None) => Ok(Setting::Set(None)),
                Some(Some(raw)) => Assignee::parse(raw.clone()).map(|a| Setting::Set(Some(a))),
            },
        );
        match (title, description, priority, assignee) {
            (Some(title), Some(description), Some(priority), Some(assignee))
                if violations.is_empty() =>
            {
                Ok(TicketEdit {
                    ticket_id: self.ticket_id,
                    expected_version: self.expected_version,
                    title,
                    description,
                    priority,
                    assignee,
                })
            }
            _ => Err(violations),
        }
    }
}

/// The value of a field that may be left out but not sent as `null`.
fn not_null(
    value: &Option<Option<String>>,
    field: &str,
    why: &str,
) -> Result<Option<String>, FieldViolation> {
    match value {
        None => Ok(None),
        Some(None) => Err(FieldViolation::new(
            field,
            "not_removable",
            format!("{field} cannot be null: {why}; leave it out to keep it as it is"),
        )),
        Some(Some(raw)) => Ok(Some(raw.clone())),
    }
}

/// Version 1 of an edit's canonical form, for the fingerprint. Field order
/// is the encoding: keep it alphabetical and never change it without a new
/// version. `Keep` and `Set(null)` encode differently on purpose.
#[derive(Serialize)]
pub(crate) struct CanonicalEditV1<'a> {
    assignee: Canonical<Option<&'a str>>,
    description: Canonical<Option<&'a str>>,
    expected_version: Option<i64>,
    priority: Canonical<&'a str>,
    ticket_id: String,
    title: Canonical<&'a str>,
}

#[derive(Serialize)]
enum Canonical<T> {
    Keep,
    Set(T),
}

fn canonical<'s, T, U>(setting: &'s Setting<T>, f: impl FnOnce(&'s T) -> U) -> Canonical<U> {
    match setting {
        Setting::Keep => Canonical::Keep,
        Setting::Set(value) => Canonical::Set(f(value)),
    }
}

impl TicketEdit {
    pub(crate) fn canonical(&self) -> CanonicalEditV1<'_> {
        CanonicalEditV1 {
            assignee: canonical(&self.assignee, |a| a.as_ref().map(Assignee::as_str)),
            description: canonical(&self.description, |d| d.as_ref().map(Description::as_str)),
            expected_version: self.expected_version.map(Version::get),
            priority: canonical(&self.priority, |p| p.as_str()),
            ticket_id: self.ticket_id.to_string(),
            title: canonical(&self.title, |t| t.as_str()),
        }
    }

    /// `ticket` with this edit applied, and what changed. The version and
    /// `updated_at` are the caller's to set, and only when something changed.
    pub(crate) fn apply_to(&self, ticket: &Ticket) -> (Ticket, Changes) {
        let mut edited = ticket.clone();
        let mut changes = Changes::default();
        if let Setting::Set(title) = &self.title {
            changes.note("title", &ticket.title, title);
            edited.title = title.clone();
        }
        if let Setting::Set(description) = &self.description {
            changes.note("description", &ticket.description, description);
            edited.description = description.clone();
        }
        if let Setting::Set(priority) = &self.priority {
            changes.note("priority", ticket.priority, priority);
            edited.priority = *priority;
        }
        if let Setting::Set(assignee) = &self.assignee {
            changes.note("assignee", &ticket.assignee, assignee);
            edited.assignee = assignee.clone();
        }
        (edited, changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(json: &str) -> TicketUpdate {
        TicketUpdate {
            ticket_id: TicketId::new_v7(),
            expected_version: None,
            patch: serde_json::from_str(json).expect("a patch"),
        }
    }

    #[test]
    fn left_out_null_and_value_mean_keep_remove_and_set() {
        let edit = update(r#"{"description": null, "assignee": "Ada"}"#)
            .validate()
            .expect("valid");
        assert_eq!(edit.title, Setting::Keep);
        assert_eq!(edit.description, Setting::Set(None));
        assert_eq!(
            edit.assignee,
            Setting::Set(Some(Assignee::parse("Ada").expect("valid")))
        );
    }

    #[test]
    fn title_and_priority_cannot_be_removed() {
        let violations = update(r#"{"title": null, "priority": null}"#)
            .validate()
            .expect_err("invalid");
        let fields: Vec<_> = violations
            .iter()
            .map(|v| (v.field.as_str(), v.code))
            .collect();
        assert_eq!(
            fields,
            [("title", "not_removable"), ("priority", "not_removable")]
        );
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err =
            serde_json::from_str::<TicketPatch>(r#"{"status": "closed"}"#).expect_err("unknown");
        assert!(err.to_string().contains("status"), "{err}");
    }

    #[test]
    fn keep_and_remove_fingerprint_differently() {
        let keep = update("{}").validate().expect("valid");
        let remove = TicketUpdate {
            ticket_id: keep.ticket_id,
            ..update(r#"{"assignee": null}"#)
        }
        .validate()
        .expect("valid");
        let json = |e: &TicketEdit| serde_json::to_string(&e.canonical()).expect("json");
        assert_ne!(json(&keep), json(&remove));
    }
}

//! Tickets: the draft a caller sends, the validated command, and the stored ticket.

use std::fmt;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::label::Labels;
use super::slug::{is_slug, slug_rule};
use super::status::TicketStatus;
use super::text::refuse_nul;
use super::uuid_id::uuid_id;
use super::violation::FieldViolation;

/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 10_000;

uuid_id!(
    /// A ticket's id: a UUID v7 made by the server, so ids sort by creation time.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(transparent)]
    TicketId, parses
);

/// The project a ticket belongs to: a slug such as `billing-api`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProjectId(String);

impl ProjectId {
    /// Parses a project id; the error says what a valid one looks like.
    pub fn parse(raw: impl Into<String>) -> Result<Self, FieldViolation> {
        let raw = raw.into();
        refuse_nul("project_id", &raw)?;
        if is_slug(&raw) {
            Ok(Self(raw))
        } else {
            Err(FieldViolation::new(
                "project_id",
                "malformed",
                format!("project_id {}", slug_rule()),
            ))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ProjectId {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(raw).map_err(|v| v.message)
    }
}

impl From<ProjectId> for String {
    fn from(id: ProjectId) -> Self {
        id.0
    }
}

/// A ticket title: 1 to 200 characters on one line, not blank.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Title(String);

impl Title {
    /// Parses a title; the error says what is wrong with it.
    pub fn parse(raw: impl Into<String>) -> Result<Self, FieldViolation> {
        let raw = raw.into();
        // NUL is a control character too, but it is refused first and by the
        // shared rule, so it reports `nul_character` here as in every field.
        refuse_nul("title", &raw)?;
        let chars = raw.chars().count();
        let violation = |code, message: String| Err(FieldViolation::new("title", code, message));
        if raw.trim().is_empty() {
            violation(
                "blank",
                "title must not be empty or only white space".into(),
            )
        } else if chars > MAX_TITLE_CHARS {
            violation(
                "too_long",
                format!("title must be at most {MAX_TITLE_CHARS} characters; it has {chars}"),
            )
        } else if raw.chars().any(char::is_control) {
            // A title is shown on one line in lists; line breaks belong in the description.
            violation(
                "control_character",
                "title must be a single line without control characters; \
                 put longer text in description"
                    .into(),
            )
        } else {
            Ok(Self(raw))
        }
    }

    /// The title as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Title {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(raw).map_err(|v| v.message)
    }
}

impl From<Title> for String {
    fn from(t: Title) -> Self {
        t.0
    }
}

/// A ticket description: up to 10,000 characters, line breaks and tabs
/// allowed. A caller's description never holds U+0000; one stored by SQLite
/// before that rule may (see `Description::from_stored`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Description(String);

impl Description {
    /// Parses a description a caller sent. An empty description means "no
    /// description" and yields `None`, so `""` and an omitted field mean the
    /// same thing.
    pub fn parse(raw: impl Into<String>) -> Result<Option<Self>, FieldViolation> {
        let raw = raw.into();
        refuse_nul("description", &raw)?;
        Self::from_stored(raw)
    }

    /// A description read back from the database or from a result
    /// snapshot: every rule of [`Description::parse`] except the NUL rule.
    ///
    /// SQLite stored U+0000 before the kitchen refused it, so an old SQLite
    /// database may hold such descriptions. They were accepted once and stay
    /// readable: refusing them on the way out would turn every read, list
    /// page, replay and status lookup that touches such a ticket into an
    /// error, and the key's retry into a failure forever.
    pub(crate) fn from_stored(raw: String) -> Result<Option<Self>, FieldViolation> {
        let chars = raw.chars().count();
        if chars > MAX_DESCRIPTION_CHARS {
            Err(FieldViolation::new(
                "description",
                "too_long",
                format!(
                    "description must be at most {MAX_DESCRIPTION_CHARS} characters; it has {chars}"
                ),
            ))
        } else if raw.is_empty() {
            Ok(None)
        } else {
            Ok(Some(Self(raw)))
        }
    }

    /// The description as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Used by `Deserialize`, which reads stored result snapshots; so, like
/// `Description::from_stored`, it does not apply the NUL rule. Caller
/// input goes through [`TicketDraft::validate`] instead.
impl TryFrom<String> for Description {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        match Self::from_stored(raw) {
            Ok(Some(d)) => Ok(d),
            Ok(None) => Err("description must not be empty".into()),
            Err(v) => Err(v.message),
        }
    }
}

impl From<Description> for String {
    fn from(d: Description) -> Self {
        d.0
    }
}

/// Longest assignee name, in characters.
pub const MAX_ASSIGNEE_CHARS: usize = 200;

/// The person a ticket is assigned to: a free-text name, 1 to 200
/// characters on one line, not blank.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Assignee(String);

impl Assignee {
    /// Parses an assignee name; the error says what is wrong with it.
    pub fn parse(raw: impl Into<String>) -> Result<Self, FieldViolation> {
        let raw = raw.into();
        refuse_nul("assignee", &raw)?;
        let chars = raw.chars().count();
        let violation = |code, message: String| Err(FieldViolation::new("assignee", code, message));
        if raw.trim().is_empty() {
            violation(
                "blank",
                "assignee must not be empty or only white space; send null to unassign".into(),
            )
        } else if chars > MAX_ASSIGNEE_CHARS {
            violation(
                "too_long",
                format!("assignee must be at most {MAX_ASSIGNEE_CHARS} characters; it has {chars}"),
            )
        } else if raw.chars().any(char::is_control) {
            violation(
                "control_character",
                "assignee must be a single line without control characters".into(),
            )
        } else {
            Ok(Self(raw))
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Assignee {
    type Error = String;
    fn try_from(raw: String) -> Result<Self, Self::Error> {
        Self::parse(raw).map_err(|v| v.message)
    }
}

impl From<Assignee> for String {
    fn from(a: Assignee) -> Self {
        a.0
    }
}

/// A ticket's version: 1 at creation, +1 for every change. A conditional
/// write names the version it expects (REST `If-Match`, MCP
/// `expected_version`) and is refused if the ticket has moved on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(i64);

impl Version {
    /// A new ticket's version.
    pub const FIRST: Version = Version(1);

    /// Parses a version a caller sent: a whole number from 1.
    pub fn parse(n: i64, field: &str) -> Result<Self, FieldViolation> {
        if n >= 1 {
            Ok(Self(n))
        } else {
            Err(FieldViolation::new(
                field,
                "out_of_range",
                format!("{field} must be a ticket version, a whole number from 1; got {n}"),
            ))
        }
    }

    pub(crate) fn from_stored(n: i64) -> Self {
        Self(n)
    }

    /// The version after one more change.
    pub(crate) fn next(self) -> Self {
        Self(self.0 + 1)
    }

    /// The number.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl Default for Version {
    fn default() -> Self {
        Self::FIRST
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How urgent a ticket is. Omitted means `normal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Can wait.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Soon.
    High,
    /// Now.
    Urgent,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Priority; 4] = [Self::Low, Self::Normal, Self::High, Self::Urgent];

    /// The priority as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
            Self::Urgent => "urgent",
        }
    }

    /// Parses `low`, `normal`, `high` or `urgent`.
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == raw)
            .ok_or_else(|| {
                FieldViolation::new(
                    "priority",
                    "unknown_value",
                    format!("priority must be one of low, normal, high, urgent; got {raw:?}"),
                )
            })
    }
}

/// A ticket as stored and as shown to callers.
///
/// Its JSON form (field order included) is the result snapshot that a create
/// stores and every replay returns, so changing this struct changes what old
/// replays look like: add fields, never reorder or rename them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    /// Server-made UUID v7.
    pub id: TicketId,
    /// The project the ticket belongs to.
    pub project_id: ProjectId,
    /// One-line summary.
    pub title: Title,
    /// Longer text, if any.
    pub description: Option<Description>,
    /// How urgent it is.
    pub priority: Priority,
    /// Where it is in its life.
    pub status: TicketStatus,
    /// When it was created (RFC 3339, UTC, microsecond precision).
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The provider's id for the ticket, when it was made in a provider (the
    /// remote backend); absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_ticket_id: Option<String>,
    /// Who works on it, if anyone; absent from the JSON when nobody does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<Assignee>,
    /// 1 at creation, +1 for every change. Snapshots made before versions
    /// existed have none and read as 1.
    #[serde(default)]
    pub version: Version,
    /// When it last changed; absent until its first change.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub updated_at: Option<OffsetDateTime>,
    /// Its labels, alphabetical. Left out when there are none, so a ticket
    /// without labels reads as it did before labels existed (and snapshots
    /// made then read back as they were written).
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
}

/// A create request as a caller sent it, before validation.
///
/// Every field is optional here so that a missing field is reported by name
/// next to every other problem, instead of failing the whole body at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TicketDraft {
    /// Required: the project slug.
    pub project_id: Option<String>,
    /// Required: the one-line summary.
    pub title: Option<String>,
    /// Optional longer text.
    pub description: Option<String>,
    /// Optional: `low`, `normal` (default), `high` or `urgent`.
    pub priority: Option<String>,
}

/// A validated create command with every default filled in: what the
/// fingerprint is computed over and what the ticket is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTicket {
    /// The project slug.
    pub project_id: ProjectId,
    /// The title.
    pub title: Title,
    /// The description, `None` when omitted or empty.
    pub description: Option<Description>,
    /// The priority, `normal` when omitted.
    pub priority: Priority,
}

impl TicketDraft {
    /// Validates every field and reports every problem at once.
    pub fn validate(&self) -> Result<NewTicket, Vec<FieldViolation>> {
        let mut violations = Vec::new();
        let v = &mut violations;
        let project_id = keep(
            v,
            required(&self.project_id, "project_id").and_then(ProjectId::parse),
        );
        let title = keep(v, required(&self.title, "title").and_then(Title::parse));
        let description = keep(
            v,
            Description::parse(self.description.clone().unwrap_or_default()),
        );
        let priority = keep(
            v,
            self.priority
                .as_deref()
                .map_or(Ok(Priority::default()), Priority::parse),
        );

        match (project_id, title, description, priority) {
            (Some(project_id), Some(title), Some(description), Some(priority))
                if violations.is_empty() =>
            {
                Ok(NewTicket {
                    project_id,
                    title,
                    description,
                    priority,
                })
            }
            _ => Err(violations),
        }
    }
}

/// The value of `result`, or `None` after noting its violation.
pub(crate) fn keep<T>(
    violations: &mut Vec<FieldViolation>,
    result: Result<T, FieldViolation>,
) -> Option<T> {
    result.map_err(|v| violations.push(v)).ok()
}

pub(crate) fn required(value: &Option<String>, field: &str) -> Result<String, FieldViolation> {
    value
        .clone()
        .ok_or_else(|| FieldViolation::new(field, "required", format!("{field} is required")))
}

impl NewTicket {
    /// The ticket this command makes, with a fresh id, status `open`, and
    /// `created_at` cut to microseconds (what both databases store exactly).
    pub(crate) fn into_ticket(self, now: OffsetDateTime) -> Ticket {
        Ticket {
            id: TicketId::new_v7(),
            project_id: self.project_id,
            title: self.title,
            description: self.description,
            priority: self.priority,
            status: TicketStatus::Open,
            created_at: truncate_to_micros(now),
            provider_ticket_id: None,
            assignee: None,
            version: Version::FIRST,
            updated_at: None,
            labels: Labels::default(),
        }
    }
}

pub(crate) fn truncate_to_micros(t: OffsetDateTime) -> OffsetDateTime {
    let micros = t.microsecond();
    t.replace_microsecond(micros).unwrap_or(t)
}

#[cfg(test)]
mod tests;

//! Redmine's JSON, as far as the adapter reads it (tests/redmine/API_NOTES.md
//! says what each field really does). Reading is strict where a field
//! decides anything (ids, the reference, the journals' details) and lax
//! elsewhere: Redmine adds fields between releases.

use serde::Deserialize;
use serde_json::Value;

/// `{"issue": {...}}`, as `GET /issues/{id}.json` and a create answer.
#[derive(Debug, Deserialize)]
pub(crate) struct IssueEnvelope {
    pub(crate) issue: Issue,
}

/// `{"issues": [...], "total_count": n}`, as a search answers.
#[derive(Debug, Deserialize)]
pub(crate) struct IssueList {
    pub(crate) issues: Vec<Issue>,
    pub(crate) total_count: u64,
}

/// An issue.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Issue {
    pub(crate) id: u64,
    pub(crate) project: Named,
    pub(crate) subject: String,
    #[serde(default)]
    pub(crate) description: Option<String>,
    pub(crate) status: Named,
    pub(crate) priority: Named,
    /// Every custom field the issue has and the user may see.
    #[serde(default)]
    pub(crate) custom_fields: Vec<CustomValue>,
    /// Only with `include=journals`, in ascending id order.
    #[serde(default)]
    pub(crate) journals: Vec<Journal>,
    /// Only with `include=allowed_statuses`: the statuses this user may
    /// move the issue to now (its own included).
    #[serde(default)]
    pub(crate) allowed_statuses: Option<Vec<Named>>,
}

impl Issue {
    /// The value of custom field `id`, if the issue shows that field.
    pub(crate) fn custom_value(&self, id: u64) -> Option<&str> {
        self.custom_fields
            .iter()
            .find(|f| f.id == id)
            .and_then(|f| f.value.as_ref())
            .and_then(Value::as_str)
    }
}

/// Something Redmine names by id: a project, a status, a priority.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Named {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) name: String,
}

/// One custom field's value on an issue (`null` when unset; a list for a
/// multiple-value field, which the reference field is not).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CustomValue {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) value: Option<Value>,
}

/// A journal: one edit of an issue, with its note and the attributes it
/// changed.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Journal {
    pub(crate) id: u64,
    /// `""` for an edit without a note; `null` in some releases.
    #[serde(default)]
    pub(crate) notes: Option<String>,
    #[serde(default)]
    pub(crate) details: Vec<Detail>,
}

/// One changed attribute of a journal. Values are strings (ids too), or
/// `null` for none.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Detail {
    pub(crate) property: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) old_value: Option<String>,
    #[serde(default)]
    pub(crate) new_value: Option<String>,
}

/// `{"errors": ["Subject cannot be blank", ...]}`: a validation refusal.
#[derive(Debug, Deserialize)]
pub(crate) struct Errors {
    pub(crate) errors: Vec<String>,
}

/// `GET /users/current.json`.
#[derive(Debug, Deserialize)]
pub(crate) struct CurrentUser {
    pub(crate) user: User,
}

/// The user an API key belongs to.
#[derive(Debug, Deserialize)]
pub(crate) struct User {
    pub(crate) login: String,
    #[serde(default)]
    pub(crate) admin: bool,
}

/// `GET /projects/{id}.json?include=issue_custom_fields`.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectEnvelope {
    pub(crate) project: Project,
}

/// A project, with the issue custom fields enabled for it.
#[derive(Debug, Deserialize)]
pub(crate) struct Project {
    pub(crate) id: u64,
    #[serde(default)]
    pub(crate) issue_custom_fields: Vec<Named>,
}

/// `GET /custom_fields.json` (administrators only).
#[derive(Debug, Deserialize)]
pub(crate) struct CustomFields {
    pub(crate) custom_fields: Vec<CustomField>,
}

/// A custom field's definition.
#[derive(Debug, Deserialize)]
pub(crate) struct CustomField {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) customized_type: String,
    #[serde(default)]
    pub(crate) field_format: String,
    #[serde(default)]
    pub(crate) is_filter: bool,
    #[serde(default)]
    pub(crate) multiple: bool,
}

/// `GET /issue_statuses.json`.
#[derive(Debug, Deserialize)]
pub(crate) struct Statuses {
    pub(crate) issue_statuses: Vec<Status>,
}

/// A status.
#[derive(Debug, Deserialize)]
pub(crate) struct Status {
    pub(crate) id: u64,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) is_closed: bool,
}

/// `GET /enumerations/issue_priorities.json`, in Redmine's order (lowest
/// first).
#[derive(Debug, Deserialize)]
pub(crate) struct Priorities {
    pub(crate) issue_priorities: Vec<Named>,
}

//! Bodies as the REST door shows and reads them. The kitchen's types know
//! nothing of OpenAPI; these do, and convert to and from them.
//!
//! Every limit a schema states (lengths, page sizes, the enums) is taken
//! from the kitchen's constants, never retyped, so the document cannot
//! drift from what the kitchen accepts.

use std::collections::BTreeMap;

use kitchen::{
    Action, Comment, CommentPage, HistoryEntry, HistoryPage, LABEL_PATTERN, MAX_ASSIGNEE_CHARS,
    MAX_COMMENT_CHARS, MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_LABELS_PER_TICKET,
    MAX_REASON_CHARS, MAX_TITLE_CHARS, PageSize, Priority, Ticket, TicketDraft, TicketStatus,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, Object, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};

use crate::links;

/// One line, not blank: no control characters (U+0000 to U+001F, U+007F
/// to U+009F), and at least one character that is not white space. What
/// the kitchen checks of titles and assignees.
const ONE_LINE_NOT_BLANK: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\u0000-\\u0020\\u007F-\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// No U+0000 anywhere: what the kitchen checks of every free text.
const NO_NUL: &str = "^[^\\u0000]*$";

/// No U+0000, and at least one character that is not white space (as Rust's
/// `char::is_whitespace` has it): what the kitchen checks of a comment.
const NOT_BLANK_NO_NUL: &str = "^[^\\u0000]*[^\\u0000\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000]*$";

/// A string schema.
fn string(description: String) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .description(Some(description))
}

/// A string-or-null schema.
fn nullable_string(description: String) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .description(Some(description))
}

/// A ticket's title as answered.
fn title_schema() -> Object {
    string("One-line summary.".into())
        .min_length(Some(1))
        .max_length(Some(MAX_TITLE_CHARS))
        .build()
}

/// A title as a request sends it.
fn title_request_schema(required: bool) -> Object {
    let lead = if required {
        "Required. "
    } else {
        "A new title (left out: kept; it cannot be removed, so not `null`). "
    };
    string(format!(
        "{lead}One line, 1 to {MAX_TITLE_CHARS} characters, not blank: no control characters \
         (U+0000 to U+001F, U+007F to U+009F), and at least one character that is not white \
         space."
    ))
    .min_length(Some(1))
    .max_length(Some(MAX_TITLE_CHARS))
    .pattern(Some(ONE_LINE_NOT_BLANK))
    .examples(["Checkout fails for EU cards"])
    .build()
}

fn create_title_schema() -> Object {
    title_request_schema(true)
}

fn patch_title_schema() -> Object {
    title_request_schema(false)
}

/// A ticket's description as answered.
fn description_schema() -> Object {
    nullable_string("Longer text, or null.".into())
        .max_length(Some(MAX_DESCRIPTION_CHARS))
        .build()
}

/// A description as a request sends it.
fn description_request_schema(lead: &str) -> Object {
    nullable_string(format!(
        "{lead}Up to {MAX_DESCRIPTION_CHARS} characters; line breaks and tabs are fine, U+0000 \
         (NUL) is not."
    ))
    .max_length(Some(MAX_DESCRIPTION_CHARS))
    .pattern(Some(NO_NUL))
    .build()
}

fn create_description_schema() -> Object {
    description_request_schema("Empty or `null` means none. ")
}

fn patch_description_schema() -> Object {
    description_request_schema("A new description (left out: kept; `null` or empty: removed). ")
}

/// An assignee as answered.
fn assignee_schema() -> Object {
    string("Who works on it; absent when nobody does.".into())
        .min_length(Some(1))
        .max_length(Some(MAX_ASSIGNEE_CHARS))
        .build()
}

/// An assignee as a patch sends it.
fn patch_assignee_schema() -> Object {
    nullable_string(format!(
        "A new assignee: a name, 1 to {MAX_ASSIGNEE_CHARS} characters on one line, not blank \
         (left out: kept; `null`: unassigned)."
    ))
    .min_length(Some(1))
    .max_length(Some(MAX_ASSIGNEE_CHARS))
    .pattern(Some(ONE_LINE_NOT_BLANK))
    .build()
}

/// One of the priorities.
fn priority_schema() -> Object {
    string("How urgent: low, normal (default), high, urgent.".into())
        .enum_values(Some(Priority::ALL.map(|p| p.as_str())))
        .build()
}

/// A patch's priority: one of them, never `null`.
fn patch_priority_schema() -> Object {
    string(
        "A new priority: low, normal, high, urgent (left out: kept; it cannot be removed, so \
         not `null`)."
            .into(),
    )
    .enum_values(Some(Priority::ALL.map(|p| p.as_str())))
    .build()
}

/// The request's `priority`: one of the priorities, or `null` (read as
/// omitted, so the default).
fn optional_priority_schema() -> Object {
    let values = Priority::ALL
        .map(|p| serde_json::Value::from(p.as_str()))
        .into_iter()
        .chain([serde_json::Value::Null]);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(values))
        .description(Some(
            "How urgent: low, normal (default), high, urgent; null means the default.",
        ))
        .build()
}

/// One of the statuses.
pub(crate) fn status_schema() -> Object {
    string(format!(
        "Where a ticket is in its life: {}.",
        TicketStatus::ALL.map(TicketStatus::as_str).join(", ")
    ))
    .enum_values(Some(TicketStatus::ALL.map(TicketStatus::as_str)))
    .build()
}

/// A list of statuses.
pub(crate) fn statuses_schema() -> ArrayBuilder {
    ArrayBuilder::new().items(status_schema())
}

/// The status a transition asks for.
fn transition_to_schema() -> Object {
    string(format!(
        "Required. The status to move to: {}. From where the ticket is, only some moves are \
         allowed (open → in_progress → resolved → closed, resolved → in_progress, closed → \
         open); another is `409 transition-not-allowed`.",
        TicketStatus::ALL.map(TicketStatus::as_str).join(", ")
    ))
    .enum_values(Some(TicketStatus::ALL.map(TicketStatus::as_str)))
    .build()
}

/// A transition's reason.
fn reason_schema() -> Object {
    nullable_string(format!(
        "Why, in words; kept in the ticket's history. Up to {MAX_REASON_CHARS} characters, no \
         U+0000 (NUL). Empty or `null` means none."
    ))
    .max_length(Some(MAX_REASON_CHARS))
    .pattern(Some(NO_NUL))
    .build()
}

/// A comment's text as a request sends it.
fn comment_request_body_schema() -> Object {
    string(format!(
        "Required. The comment: 1 to {MAX_COMMENT_CHARS} characters, not blank; line breaks are \
         fine, U+0000 (NUL) is not."
    ))
    .min_length(Some(1))
    .max_length(Some(MAX_COMMENT_CHARS))
    .pattern(Some(NOT_BLANK_NO_NUL))
    .examples(["Reproduced on staging; the card network times out."])
    .build()
}

/// A comment's text as answered.
fn comment_body_schema() -> Object {
    string("The comment's text.".into())
        .min_length(Some(1))
        .max_length(Some(MAX_COMMENT_CHARS))
        .build()
}

/// A page size parameter.
pub(crate) fn limit_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::Integer))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
        .minimum(Some(1))
        .maximum(Some(PageSize::MAX))
        .description(Some(format!(
            "Page size, 1 to {} (default {}).",
            PageSize::MAX,
            PageSize::DEFAULT.get()
        )))
        .build()
}

/// An action's name.
pub(crate) fn action_schema() -> Object {
    string(format!("The action: {}.", Action::names()))
        .enum_values(Some(Action::ALL.map(Action::as_str)))
        .build()
}

/// Any JSON value.
fn any_value() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::AnyValue)
            .build(),
    )
}

/// A parameter whose schema is built from the kitchen's constants. The
/// derive cannot take such a schema and keep the parameter's description
/// and `required`, so these parameters are written out.
pub(crate) fn parameter(
    name: &str,
    location: ParameterIn,
    required: bool,
    description: &str,
    schema: Object,
) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(location)
        .required(if required {
            Required::True
        } else {
            Required::False
        })
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

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

/// A ticket's labels as answered.
fn labels_schema() -> ArrayBuilder {
    ArrayBuilder::new()
        .items(label_schema())
        .max_items(Some(MAX_LABELS_PER_TICKET))
        .unique_items(true)
        .description(Some("Its labels, alphabetical; absent when it has none."))
}

/// One label, as sent and answered.
pub(crate) fn label_schema() -> Object {
    string(format!(
        "A label: 1 to {MAX_LABEL_CHARS} of lowercase `a`-`z`, digits and `-`."
    ))
    .min_length(Some(1))
    .max_length(Some(MAX_LABEL_CHARS))
    .pattern(Some(LABEL_PATTERN))
    .examples(["billing"])
    .build()
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
mod tests {
    use super::*;

    /// A ticket with every optional field set, and one with none, each
    /// shown through [`TicketBody`] exactly as the kitchen freezes it.
    #[test]
    fn ticket_body_serializes_as_the_kitchen_snapshot() {
        for json in [
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk","description":null,"priority":"normal","status":"open","created_at":"2026-11-30T12:00:00.123456Z","version":1}"#,
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk","description":"d","priority":"high","status":"in_progress","created_at":"2026-11-30T12:00:00Z","provider_ticket_id":"SIM-1","assignee":"Ada","version":3,"updated_at":"2026-11-30T12:00:01.5Z"}"#,
        ] {
            let ticket: Ticket = serde_json::from_str(json).expect("a ticket");
            let kitchen = serde_json::to_string(&ticket).expect("JSON");
            let door = serde_json::to_string(&TicketBody::from(ticket)).expect("JSON");
            assert_eq!(door, kitchen);
        }
    }

    #[test]
    fn comment_body_serializes_as_the_kitchen_snapshot() {
        for json in [
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a","body":"line\nbreak","created_at":"2026-11-30T12:00:00.000001Z"}"#,
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a","body":"hi","created_at":"2026-11-30T12:00:00Z","provider_comment_id":"CMT-1"}"#,
        ] {
            let comment: Comment = serde_json::from_str(json).expect("a comment");
            let kitchen = serde_json::to_string(&comment).expect("JSON");
            let door = serde_json::to_string(&CommentBody::from(comment)).expect("JSON");
            assert_eq!(door, kitchen);
        }
    }
}

//! The schemas of single fields and parameters, each built from the
//! kitchen's constants (lengths, patterns, enums), which the bodies in
//! `schema.rs` and the routes' parameters refer to.

use kitchen::{
    Action, LABEL_PATTERN, MAX_ASSIGNEE_CHARS, MAX_COMMENT_CHARS, MAX_DESCRIPTION_CHARS,
    MAX_LABEL_CHARS, MAX_LABELS_PER_TICKET, MAX_REASON_CHARS, MAX_TITLE_CHARS, PageSize, Priority,
    TicketStatus,
};
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, Object, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};

/// One line, not blank: no control characters (U+0000 to U+001F, U+007F
/// to U+009F), and at least one character that is not white space. What
/// the kitchen checks of titles and assignees.
pub(super) const ONE_LINE_NOT_BLANK: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\u0000-\\u0020\\u007F-\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000-\\u001F\\u007F-\\u009F]*$";

/// No U+0000 anywhere: what the kitchen checks of every free text.
pub(super) const NO_NUL: &str = "^[^\\u0000]*$";

/// No U+0000, and at least one character that is not white space (as Rust's
/// `char::is_whitespace` has it): what the kitchen checks of a comment.
pub(super) const NOT_BLANK_NO_NUL: &str = "^[^\\u0000]*[^\\u0000\\u0009-\\u000D\\u0020\\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000]*$";

/// A string schema.
pub(super) fn string(description: String) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .description(Some(description))
}

/// A string-or-null schema.
pub(super) fn nullable_string(description: String) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .description(Some(description))
}

/// A ticket's title as answered.
pub(super) fn title_schema() -> Object {
    string("One-line summary.".into())
        .min_length(Some(1))
        .max_length(Some(MAX_TITLE_CHARS))
        .build()
}

/// A title as a request sends it.
pub(super) fn title_request_schema(required: bool) -> Object {
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

pub(super) fn create_title_schema() -> Object {
    title_request_schema(true)
}

pub(super) fn patch_title_schema() -> Object {
    title_request_schema(false)
}

/// A ticket's description as answered.
pub(super) fn description_schema() -> Object {
    nullable_string("Longer text, or null.".into())
        .max_length(Some(MAX_DESCRIPTION_CHARS))
        .build()
}

/// A description as a request sends it.
pub(super) fn description_request_schema(lead: &str) -> Object {
    nullable_string(format!(
        "{lead}Up to {MAX_DESCRIPTION_CHARS} characters; line breaks and tabs are fine, U+0000 \
         (NUL) is not."
    ))
    .max_length(Some(MAX_DESCRIPTION_CHARS))
    .pattern(Some(NO_NUL))
    .build()
}

pub(super) fn create_description_schema() -> Object {
    description_request_schema("Empty or `null` means none. ")
}

pub(super) fn patch_description_schema() -> Object {
    description_request_schema("A new description (left out: kept; `null` or empty: removed). ")
}

/// An assignee as answered.
pub(super) fn assignee_schema() -> Object {
    string("Who works on it; absent when nobody does.".into())
        .min_length(Some(1))
        .max_length(Some(MAX_ASSIGNEE_CHARS))
        .build()
}

/// An assignee as a patch sends it.
pub(super) fn patch_assignee_schema() -> Object {
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
pub(super) fn priority_schema() -> Object {
    string("How urgent: low, normal (default), high, urgent.".into())
        .enum_values(Some(Priority::ALL.map(|p| p.as_str())))
        .build()
}

/// A patch's priority: one of them, never `null`.
pub(super) fn patch_priority_schema() -> Object {
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
pub(super) fn optional_priority_schema() -> Object {
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
pub(super) fn transition_to_schema() -> Object {
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
pub(super) fn reason_schema() -> Object {
    nullable_string(format!(
        "Why, in words; kept in the ticket's history. Up to {MAX_REASON_CHARS} characters, no \
         U+0000 (NUL). Empty or `null` means none."
    ))
    .max_length(Some(MAX_REASON_CHARS))
    .pattern(Some(NO_NUL))
    .build()
}

/// A comment's text as a request sends it.
pub(super) fn comment_request_body_schema() -> Object {
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
pub(super) fn comment_body_schema() -> Object {
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
pub(super) fn any_value() -> Schema {
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

/// A ticket's labels as answered.
pub(super) fn labels_schema() -> ArrayBuilder {
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

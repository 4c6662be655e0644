//! Bodies as the REST door shows and reads them. The kitchen's types know
//! nothing of OpenAPI; these do, and convert to and from them.

use kitchen::{Ticket, TicketDraft};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};

use crate::links;

/// A ticket. `POST` answers with the kitchen's frozen snapshot of it; a test
/// checks that this shape serializes to exactly those bytes.
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
    #[schema(min_length = 1, max_length = 200)]
    title: String,
    /// Longer text, or null.
    #[schema(max_length = 10000)]
    description: Option<String>,
    /// `low`, `normal`, `high` or `urgent`.
    #[schema(schema_with = priority_schema)]
    priority: &'static str,
    /// Always `open` at creation.
    #[schema(example = "open")]
    status: &'static str,
    /// RFC 3339, UTC.
    #[schema(format = DateTime)]
    created_at: String,
    /// The ticket provider's id for it, when tickets are made in a provider
    /// (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_ticket_id: Option<String>,
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
    /// Required. One line, 1 to 200 characters, not blank: no control
    /// characters (U+0000 to U+001F, U+007F to U+009F), and at least one
    /// character that is not white space.
    #[schema(
        value_type = String,
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\u0000-\\u0020\\u007F-\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000-\\u001F\\u007F-\\u009F]*$",
        example = "Checkout fails for EU cards",
        required = true
    )]
    title: Option<String>,
    /// Up to 10,000 characters; line breaks and tabs are fine, U+0000 (NUL)
    /// is not. Empty or `null` means none.
    #[schema(max_length = 10000, pattern = "^[^\\u0000]*$")]
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

fn priority_schema() -> impl Into<RefOr<Schema>> {
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .enum_values(Some(kitchen::Priority::ALL.map(|p| p.as_str())))
        .description(Some("How urgent: low, normal (default), high, urgent."))
}

/// The request's `priority`: one of the priorities, or `null` (read as
/// omitted, so the default).
fn optional_priority_schema() -> impl Into<RefOr<Schema>> {
    let values = kitchen::Priority::ALL
        .map(|p| serde_json::Value::from(p.as_str()))
        .into_iter()
        .chain([serde_json::Value::Null]);
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(values))
        .description(Some(
            "How urgent: low, normal (default), high, urgent; null means the default.",
        ))
}

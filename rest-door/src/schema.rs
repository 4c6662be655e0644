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
/// field name, by the kitchen's validation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CreateTicket)]
pub(crate) struct CreateTicketRequest {
    /// Required. Project slug: lowercase letters, digits, `_`, `-`; starts with a letter or digit.
    #[schema(
        pattern = "^[a-z0-9][a-z0-9_-]{0,63}$",
        example = "billing-api",
        required = true
    )]
    project_id: Option<String>,
    /// Required. One line, 1 to 200 characters, not blank.
    #[schema(
        min_length = 1,
        max_length = 200,
        example = "Checkout fails for EU cards",
        required = true
    )]
    title: Option<String>,
    /// Up to 10,000 characters. Empty means none.
    #[schema(max_length = 10000)]
    description: Option<String>,
    /// Default `normal`.
    #[schema(schema_with = priority_schema)]
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

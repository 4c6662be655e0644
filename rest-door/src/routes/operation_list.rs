//! `GET /v1/operations`: the caller's own operations, newest first, for a
//! person (or a client) looking for what needs attention, e.g. every
//! `unknown` one.

use axum::Extension;
use axum::extract::{Query, State};
use kitchen::{Caller, Kitchen, ListedState, OperationCursor, OperationFilter, OperationSummary};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::RestError;
use crate::links;
use crate::problem::Problem;
use crate::routes::pages;

/// Query of `GET /v1/operations`. Every value is read as text so that each
/// bad one is reported by name.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Only operations in this state: `succeeded` (a retry replays it),
    /// `expired` (succeeded, past its replay window), and with a ticket
    /// provider `in_progress`, `unknown` (the provider's answer was lost)
    /// and `failed_before_effect` (the provider made nothing).
    #[param(schema_with = state_schema)]
    state: Option<String>,
    /// Only this action's operations, e.g. `create_ticket`.
    #[param(schema_with = crate::schema::action_schema)]
    action: Option<String>,
    /// Only operations whose key was first used at or after this time (RFC
    /// 3339).
    #[param(format = DateTime)]
    since: Option<String>,
    /// How many operations a page holds.
    #[param(schema_with = crate::schema::limit_schema)]
    limit: Option<String>,
    /// `next_cursor` of the previous page. Empty means none: the first page.
    #[param(pattern = "^[0-9a-f]*$")]
    cursor: Option<String>,
}

/// The states a list shows and filters by, with their words (a
/// `schema_with` schema does not take the doc comment).
fn state_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .description(Some(
            "Where the operation is. `succeeded`: the write happened and a retry replays it. \
             `expired`: it succeeded, and its replay window is over (the key is spent until \
             `retained_until`). With a ticket provider also `in_progress` (being sent), \
             `unknown` (the provider's answer was lost; being reconciled, or waiting for an \
             operator when `needs_operator`) and `failed_before_effect` (the provider made \
             nothing; a retry with the same key sends it).",
        ))
        .enum_values(Some(ListedState::ALL.map(ListedState::as_str)))
        .build()
}

/// One operation in a list: enough to see what needs attention; its
/// `status_location` has the rest (the first answer, every call made to a
/// provider).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationItem {
    /// The action, e.g. `create_ticket`.
    #[schema(schema_with = crate::schema::action_schema)]
    action: String,
    /// The operation key.
    key: String,
    /// One of the `state` filter's values.
    #[schema(schema_with = state_schema)]
    state: &'static str,
    /// The ticket made or acted on, once there is one.
    ticket_id: Option<String>,
    /// What the operation made or acted on, once there is one: the ticket's
    /// id, or for `add_comment` the comment's.
    resource_id: Option<String>,
    /// When the key was first used (RFC 3339).
    #[schema(format = DateTime)]
    created_at: String,
    /// Until when a retry replays the first answer (RFC 3339).
    #[schema(format = DateTime)]
    replayable_until: String,
    /// Until when the key is remembered (RFC 3339).
    #[schema(format = DateTime)]
    retained_until: String,
    /// Whether only a person can settle it now: reconciliation gave up on
    /// it, or the provider holds it more than once. Ask the service's
    /// operators (they settle it with `tickets ops settle`).
    needs_operator: bool,
    /// Why the provider made nothing, or why the outcome is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// With a ticket provider: the effect's name there.
    #[serde(skip_serializing_if = "Option::is_none")]
    external_reference: Option<String>,
    /// The provider's ids of copies a search found besides the original.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    duplicates_at_provider: Vec<String>,
    /// Where to GET its whole status.
    status_location: String,
}

impl From<OperationSummary> for OperationItem {
    fn from(summary: OperationSummary) -> Self {
        let needs_operator = summary.needs_operator();
        let state = summary.listed_state();
        let record = summary.record;
        Self {
            status_location: links::operation(record.action, &record.key),
            action: record.action.as_str().into(),
            key: record.key.as_str().into(),
            state: state.as_str(),
            ticket_id: record.ticket_id.map(|id| id.to_string()),
            resource_id: record.resource_id.map(|id| id.to_string()),
            created_at: links::rfc3339(record.created_at),
            replayable_until: links::rfc3339(record.replayable_until),
            retained_until: links::rfc3339(record.retained_until),
            needs_operator,
            detail: summary.detail,
            external_reference: summary.external_ref.map(|r| r.as_str().into()),
            duplicates_at_provider: summary.duplicates_at_provider,
        }
    }
}

/// A page of operations, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationList {
    /// The operations.
    operations: Vec<OperationItem>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// The caller's operations, newest first, a page at a time.
///
/// A read: it settles nothing and calls no provider. Keys past their
/// `retained_until` are forgotten and not listed.
#[utoipa::path(
    get,
    path = "/v1/operations",
    operation_id = "list_operations",
    tag = "operations",
    params(ListParams),
    responses(
        (status = 200, description = "A page of operations.", body = OperationList),
        (status = 400, description = "A query parameter is not valid (`validation-failed`; `errors` lists each), a parameter is given twice, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry. Or the database cannot be used right now (`database-unavailable`): retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn list(
    State(kitchen): State<Kitchen>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListParams>,
) -> Result<axum::Json<OperationList>, RestError> {
    let mut violations = Vec::new();
    let filter = OperationFilter::parse(
        params.state.as_deref(),
        params.action.as_deref(),
        params.since.as_deref(),
        &mut violations,
    );
    let size = pages::read_limit(params.limit, &mut violations);
    let cursor = params.cursor.filter(|c| !c.is_empty()).and_then(|c| {
        OperationCursor::parse(&c)
            .map_err(|v| violations.push(v))
            .ok()
    });
    if !violations.is_empty() {
        return Err(RestError::Validation(violations));
    }
    let page = kitchen
        .operations(caller.tenant.id, &filter, size, cursor.as_ref())
        .await?;
    Ok(axum::Json(OperationList {
        operations: page
            .operations
            .into_iter()
            .map(OperationItem::from)
            .collect(),
        next_cursor: page.next_cursor.map(|c| c.to_string()),
    }))
}

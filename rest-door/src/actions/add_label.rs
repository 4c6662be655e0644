//! `add_label`: `POST /v1/tickets/{id}/labels`, a label put on a ticket.

use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use kitchen::actions::AddLabel;
use kitchen::{LabelDraft, RetrySafeWrite, TicketAt};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::json_body;
use crate::problem::Problem;
use crate::routes::tickets::ticket_id;
use crate::routes::writes::{self, WriteDoor};
use crate::schema::{TicketBody, label_schema};
use crate::versions::{self, IfMatchHeader};

/// The body of `POST /v1/tickets/{id}/labels`. Read straight into the
/// kitchen's label draft; this type only describes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "never built: only its derived OpenAPI schema is used"
)]
pub(crate) struct LabelRequest {
    /// The label to put on the ticket.
    #[schema(schema_with = label_schema, required = true)]
    label: Option<String>,
}

/// Put a label on a ticket, at most once per Idempotency-Key.
///
/// Labels are kept alphabetical, each once, at most 20 per ticket. A label
/// the ticket already carries changes nothing (its version stays) and is
/// still a write: the key is used, and a retry replays this answer. A 21st
/// label is refused with `409 label-limit-reached` and leaves the key
/// unused. A retry with the same key and body gets the first answer again
/// (`Idempotent-Replayed: true`); past the key's replay window the same
/// request answers the ticket as it is now with `Idempotent-Replayed:
/// expired`. With `If-Match`, only if the ticket is still at that version.
/// A deployment that keeps its tickets in an external provider refuses it
/// (`409 not-supported-by-provider`, key unused).
#[utoipa::path(
    post,
    path = "/v1/tickets/{id}/labels",
    operation_id = "add_label",
    tag = "tickets",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        IdempotencyKeyHeader,
        IfMatchHeader,
    ),
    request_body(content = LabelRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Labelled (or it already carried the label: nothing changed), or replayed (`Idempotent-Replayed: true`: the body and ETag are the first answer's, byte for byte). Or the same request with a key past its replay window (`Idempotent-Replayed: expired`): the body and ETag are the ticket as it is now, `Location` its address.", body = TicketBody,
            headers(
                ("ETag" = String, description = "The ticket's version after the change; with `Idempotent-Replayed: expired`, its version now"),
                ("Location" = String, description = "With `Idempotent-Replayed: expired` only: the ticket, /v1/tickets/{id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), the body not JSON (`malformed-json`) or of the wrong shape (`invalid-body`), the label missing or not a label (`validation-failed`), If-Match malformed, or a header the server needs once sent twice or malformed (`bad-request`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant (`not-found`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The ticket already carries 20 labels (`label-limit-reached`; remove one first; nothing changed, key not used). Or this deployment keeps its tickets in an external provider, which keeps no labels (`not-supported-by-provider`; nothing written, key not used). Or an earlier attempt with this key is still running (`operation-in-progress`; retry the same request after Retry-After seconds).", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait (`operation-in-progress` only)"))),
        (status = 412, description = "If-Match named another version than the ticket's (`version-mismatch`). Nothing changed, key not used: GET it, decide again.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`idempotency-key-reused`; `original_operation` links its status resource). Nothing changed.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "For a reused key: the replay horizon of the original operation, the one that owns the key (RFC 3339)"),
            )),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn add(
    door: WriteDoor,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    door.write::<AddLabel>(
        |headers| {
            let expected_version = versions::expected_version(headers)?;
            let draft: LabelDraft = json_body::parse(headers, body, AddLabel::ACTION)?;
            Ok((TicketAt::new(ticket_id(&id)?, expected_version), draft))
        },
        writes::ticket_changed,
    )
    .await
}

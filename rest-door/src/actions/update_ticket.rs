//! `update_ticket`: `PATCH /v1/tickets/{id}`, a JSON merge patch.

use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use kitchen::actions::UpdateTicket;
use kitchen::{RetrySafeWrite, TicketPatch, TicketUpdate};

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::json_body;
use crate::problem::Problem;
use crate::routes::tickets::ticket_id;
use crate::routes::writes::{self, OutcomeUnknown, WriteDoor};
use crate::schema::{TicketBody, TicketPatchRequest};
use crate::versions::{self, IfMatchHeader};

/// Change a ticket's title, description, priority or assignee, at most once
/// per Idempotency-Key.
///
/// The body is a JSON merge patch: a field left out is kept, `null`
/// removes it (`description`, `assignee`), a value replaces it. With
/// `If-Match`, the change is made only if the ticket is still at that
/// version. The answer is the ticket as the change left it, with its
/// `ETag`. A retry with the same key and body gets that same answer again
/// (`Idempotent-Replayed: true`), even if the ticket changed since, and
/// changes nothing. A patch that changes nothing still uses its key. Past
/// the key's replay window (`Idempotency-Replayable-Until`) the same request
/// answers the ticket as it is now with `Idempotent-Replayed: expired`, and
/// still changes nothing.
#[utoipa::path(
    patch,
    path = "/v1/tickets/{id}",
    operation_id = "update_ticket",
    tag = "tickets",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        IdempotencyKeyHeader,
        IfMatchHeader,
    ),
    request_body(content(
        (TicketPatchRequest = "application/merge-patch+json"),
        (TicketPatchRequest = "application/json"),
    )),
    responses(
        (status = 200, description = "Changed, or replayed (then `Idempotent-Replayed: true` is set and the body and ETag are the first answer's, byte for byte). Or the same request with a key past its replay window (`Idempotent-Replayed: expired`): the first request made the change and nothing was changed now; the body and ETag are the ticket as it is now, `Location` its address.", body = TicketBody,
            headers(
                ("ETag" = String, description = "The ticket's version after the change (`\"4\"`); with `Idempotent-Replayed: expired`, its version now"),
                ("Location" = String, description = "With `Idempotent-Replayed: expired` only: the ticket, /v1/tickets/{id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 202, description = "With a ticket provider: its answer was lost, so the change may or may not have been made there; the service is reconciling. Retry the same request with the same key, or GET the Location. Never use a new key for this change.", body = OutcomeUnknown,
            headers(
                ("Location" = String, description = "The operation's status resource"),
                ("Retry-After" = u64, description = "Seconds to wait before asking again"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), If-Match malformed, `If-None-Match` or `If-Unmodified-Since` sent (refused: use If-Match), or a header the server needs once sent twice (`bad-request`), the body not JSON (`malformed-json`), not an object or with a field of the wrong type or unknown (`invalid-body`, naming it), or fields invalid (`validation-failed`; e.g. `title: null` is `not_removable`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant (`not-found`, as a GET would say). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An earlier attempt with this key is still running (`operation-in-progress`). Retry the same request later. Or, with a ticket provider, the ticket was made before this deployment kept its tickets there and exists only here (`ticket-not-at-provider`; nothing changed, key not used).", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 412, description = "If-Match named another version than the ticket's (`version-mismatch`; `expected_version`, `current_version`): someone changed it. Nothing changed, key not used: GET it, decide again.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is neither application/merge-patch+json nor application/json (`unsupported-media-type`), or compressed with a Content-Encoding other than gzip (`unsupported-content-encoding`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`idempotency-key-reused`; `original_operation` links its status resource). Nothing changed. Or the ticket provider refused the write (`provider-rejected`: an invalid field, a ticket it does not have, another version, a move its workflow forbids; its words in `detail`): nothing changed, the key is not used up.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "For a reused key: the replay horizon of the original operation, the one that owns the key (RFC 3339)"),
            )),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent, nothing changed, and the key is not used up; retry after Retry-After seconds. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"),
                ("Idempotency-Replayable-Until" = String, description = "The operation's replay horizon (RFC 3339; `provider-unavailable` only)"),
            )),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn update(
    door: WriteDoor,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    door.write::<UpdateTicket>(
        |headers| {
            let expected_version = versions::expected_version(headers)?;
            // Straight into the kitchen's patch: it knows "left out" from
            // `null`, and refuses unknown fields by name.
            let patch: TicketPatch =
                json_body::parse_as(headers, body, UpdateTicket::ACTION, json_body::MERGE_PATCH)?;
            Ok(TicketUpdate {
                ticket_id: ticket_id(&id)?,
                expected_version,
                patch,
            })
        },
        writes::ticket_changed,
    )
    .await
}

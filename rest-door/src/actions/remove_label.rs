//! `remove_label`: `DELETE /v1/tickets/{id}/labels/{label}`, a label
//! taken off a ticket.

use axum::extract::Path;
use axum::response::Response;
use kitchen::actions::RemoveLabel;
use kitchen::{LabelDraft, TicketAt};

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::problem::Problem;
use crate::routes::tickets::ticket_id;
use crate::routes::writes::{self, WriteDoor};
use crate::schema::TicketBody;
use crate::versions::{self, IfMatchHeader};

/// Take a label off a ticket, at most once per Idempotency-Key.
///
/// No body: the label is the last segment of the path. A label the ticket
/// does not carry changes nothing (its version stays) and is still a
/// write: the key is used, and a retry replays this answer. Retries, the
/// replay window and `If-Match` work as for adding a label; so does the
/// refusal on a deployment that keeps its tickets in an external provider.
#[utoipa::path(
    delete,
    path = "/v1/tickets/{id}/labels/{label}",
    operation_id = "remove_label",
    tag = "tickets",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        ("label" = String, Path, description = "The label to take off: 1 to 50 of lowercase a-z, digits and '-'", pattern = "^[a-z0-9-]{1,50}$", min_length = 1, max_length = 50),
        IdempotencyKeyHeader,
        IfMatchHeader,
    ),
    responses(
        (status = 200, description = "Unlabelled (or it did not carry the label: nothing changed), or replayed (`Idempotent-Replayed: true`: the body and ETag are the first answer's, byte for byte). Or the same request with a key past its replay window (`Idempotent-Replayed: expired`): the body and ETag are the ticket as it is now, `Location` its address.", body = TicketBody,
            headers(
                ("ETag" = String, description = "The ticket's version after the change; with `Idempotent-Replayed: expired`, its version now"),
                ("Location" = String, description = "With `Idempotent-Replayed: expired` only: the ticket, /v1/tickets/{id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), the label not a label (`validation-failed`), If-Match malformed, or a header the server needs once sent twice or malformed (`bad-request`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant (`not-found`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "This deployment keeps its tickets in an external provider, which keeps no labels (`not-supported-by-provider`; nothing written, key not used). Or an earlier attempt with this key is still running (`operation-in-progress`; retry the same request after Retry-After seconds).", body = Problem, content_type = "application/problem+json",
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
pub(crate) async fn remove(
    door: WriteDoor,
    Path((id, label)): Path<(String, String)>,
) -> Result<Response, RestError> {
    door.write::<RemoveLabel>(
        |headers| {
            let expected_version = versions::expected_version(headers)?;
            let draft = LabelDraft { label: Some(label) };
            Ok((TicketAt::new(ticket_id(&id)?, expected_version), draft))
        },
        writes::ticket_changed,
    )
    .await
}

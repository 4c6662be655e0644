//! `GET /v1/operations/{action}/{key}`: how a caller who lost an answer
//! finds out what happened.

use axum::Extension;
use axum::extract::{Path, State};
use kitchen::{Action, EffectAttempt, Kitchen, OperationKey, OperationState, Tenant};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::RestError;
use crate::links;
use crate::problem::Problem;

/// What the service recorded for one operation key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationStatus {
    /// The action, e.g. `create_ticket`.
    action: String,
    /// The operation key.
    key: String,
    /// `succeeded`: the ticket exists and the key replays it. With a ticket
    /// provider also: `in_progress` (being sent), `unknown` (the provider's
    /// answer was lost; being reconciled) and `failed_before_effect` (the
    /// provider made nothing; the key is not used up).
    #[schema(example = "succeeded")]
    state: &'static str,
    /// The ticket made, once there is one.
    ticket_id: Option<String>,
    /// Where to GET it.
    ticket_location: Option<String>,
    /// Versioned fingerprint of the request that first used the key.
    fingerprint: String,
    /// When the key was first used (RFC 3339).
    #[schema(format = DateTime)]
    created_at: String,
    /// Until when the record, and the protection it gives, is kept.
    #[schema(format = DateTime)]
    retained_until: String,
    /// Whether sending the same request with this key again is safe.
    retry_safe: bool,
    /// What a caller should do now.
    next_step: String,
    /// Why the provider made nothing, or why the outcome is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// With a ticket provider: the effect and every call made for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    effect: Option<EffectBody>,
}

/// A ticket made in a provider: its name there and every call made for it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EffectBody {
    /// Sent as the provider's idempotency key and stored on its ticket.
    external_reference: String,
    /// Until when the provider itself deduplicates a re-send with that key;
    /// `null` when it does not (then only a search decides).
    #[schema(format = DateTime)]
    downstream_key_trusted_until: Option<String>,
    /// When it was first sent.
    #[schema(format = DateTime)]
    first_dispatched_at: Option<String>,
    /// When it was last sent.
    #[schema(format = DateTime)]
    last_dispatched_at: Option<String>,
    /// Every dispatch and lookup, oldest first. A retry adds attempts,
    /// never a second ticket.
    attempts: Vec<AttemptBody>,
    /// The latest lookup by external reference, if any.
    last_reconciliation: Option<AttemptBody>,
}

/// One call to the provider.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct AttemptBody {
    /// 1, 2, …
    number: i32,
    /// `dispatch` or `lookup`.
    kind: &'static str,
    /// `request`, `retry`, `status`, `background` or `startup`.
    trigger: &'static str,
    /// When it started.
    #[schema(format = DateTime)]
    started_at: String,
    /// When its answer was recorded; `null` if none was (it runs, or the
    /// server stopped during it).
    #[schema(format = DateTime)]
    finished_at: Option<String>,
    /// e.g. `created`, `ambiguous`, `found`, `absent`, `absent_too_soon`.
    result: Option<String>,
    /// The provider's words, or ours.
    detail: Option<String>,
}

impl From<&EffectAttempt> for AttemptBody {
    fn from(a: &EffectAttempt) -> Self {
        Self {
            number: a.number,
            kind: a.kind.as_str(),
            trigger: a.trigger.as_str(),
            started_at: links::rfc3339(a.started_at),
            finished_at: a.finished_at.map(links::rfc3339),
            result: a.result.clone(),
            detail: a.detail.clone(),
        }
    }
}

/// What to do next, by state.
pub(crate) fn next_step(state: OperationState) -> &'static str {
    match state {
        OperationState::Succeeded => {
            "The ticket exists. Sending the same request with this key again returns it again \
             and creates nothing; a different request with this key is refused."
        }
        OperationState::InProgress => {
            "The ticket is being sent to the ticket provider. GET this again shortly, or retry \
             the same request with the same key. Do not use a new key for this ticket."
        }
        OperationState::Unknown => {
            "The provider's answer was lost, so the ticket may or may not exist; the service is \
             reconciling with the provider's records. Retry the same request with the same key, \
             or GET this again: either returns the ticket once it is known. Never use a new key \
             for this ticket: that could create a duplicate."
        }
        OperationState::FailedBeforeEffect => {
            "The provider made nothing, and the key was not used up: send the request again \
             (corrected, if the provider refused it) with the same key."
        }
    }
}

impl From<kitchen::OperationStatus> for OperationStatus {
    fn from(status: kitchen::OperationStatus) -> Self {
        let record = status.record;
        let detail = status.effect.as_ref().and_then(|e| e.state_detail.clone());
        let effect = status.effect.map(|e| EffectBody {
            external_reference: e.external_ref.as_str().into(),
            downstream_key_trusted_until: e.key_trusted_until.map(links::rfc3339),
            first_dispatched_at: e.first_dispatched_at.map(links::rfc3339),
            last_dispatched_at: e.last_dispatched_at.map(links::rfc3339),
            last_reconciliation: e.last_reconciliation().map(AttemptBody::from),
            attempts: e.attempts.iter().map(AttemptBody::from).collect(),
        });
        Self {
            action: record.action.as_str().into(),
            key: record.key.as_str().into(),
            state: record.state.as_str(),
            ticket_id: record.ticket_id.map(|id| id.to_string()),
            ticket_location: record.ticket_id.map(links::ticket),
            fingerprint: record.fingerprint.to_string(),
            created_at: links::rfc3339(record.created_at),
            retained_until: links::rfc3339(record.retained_until),
            retry_safe: true,
            next_step: next_step(record.state).into(),
            detail: match record.state {
                OperationState::Succeeded => None,
                _ => detail,
            },
            effect,
        }
    }
}

/// Look an operation up by its key.
///
/// `404` means nothing was recorded for this key: the create did not
/// happen, and a retry with the same key is safe.
#[utoipa::path(
    get,
    path = "/v1/operations/{action}/{key}",
    operation_id = "get_operation",
    tag = "operations",
    params(
        ("action" = String, Path, description = "The action: `create_ticket` (anything else is not found)", example = "create_ticket"),
        ("key" = String, Path, description = "The Idempotency-Key (percent-encoded): 8 to 255 printable ASCII characters without spaces, the RFC 8941 quotes of a quoted key left out. Anything else cannot be a key (`400 idempotency-key-malformed`).",
            min_length = 8, max_length = 255, pattern = "^[!-~]{8,255}$"),
    ),
    responses(
        (status = 200, description = "The operation record (with a ticket provider: the effect, its attempts and the last reconciliation; an unsettled one is reconciled before answering).", body = OperationStatus),
        (status = 400, description = "The key cannot be an Idempotency-Key (`idempotency-key-malformed`: not 8 to 255 printable ASCII), so nothing can have been recorded under it; or the path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 404, description = "Nothing recorded for this key (`operation-not-found`): a retry with the same key is safe. Or an unknown action (`not-found`).", body = Problem, content_type = "application/problem+json"),
        (status = 500, description = "Something failed on our side (`internal`; logged). Retry.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn get(
    State(kitchen): State<Kitchen>,
    Extension(tenant): Extension<Tenant>,
    Path((action, key)): Path<(String, String)>,
) -> Result<axum::Json<OperationStatus>, RestError> {
    let action = Action::parse(&action).ok_or_else(|| {
        RestError::NotFound(format!("Action {action:?} (the only one is create_ticket)"))
    })?;
    // A string that is not a valid key can never have been recorded, and a
    // create with it would be refused: saying "not found, retrying is safe"
    // would send the caller into that refusal.
    let key = OperationKey::parse(key).map_err(|e| {
        RestError::MalformedIdempotencyKey(format!(
            "{e} Nothing can have been recorded under this key."
        ))
    })?;
    // With a ticket provider, an unsettled operation is reconciled first.
    let status = kitchen
        .operation_status(tenant.id, action, &key)
        .await?
        .ok_or(RestError::OperationNotFound)?;
    Ok(axum::Json(status.into()))
}

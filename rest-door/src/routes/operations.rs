//! `GET /v1/operations/{action}/{key}`: how a caller who lost an answer
//! finds out what happened.

use axum::Extension;
use axum::extract::{Path, State};
use kitchen::{Action, Kitchen, OperationKey, OperationRecord, Tenant};
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
    /// `succeeded`: the ticket exists and the key replays it.
    #[schema(example = "succeeded")]
    state: String,
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
}

impl From<OperationRecord> for OperationStatus {
    fn from(record: OperationRecord) -> Self {
        Self {
            action: record.action.as_str().into(),
            key: record.key.as_str().into(),
            state: record.state.as_str().into(),
            ticket_id: record.ticket_id.map(|id| id.to_string()),
            ticket_location: record.ticket_id.map(links::ticket),
            fingerprint: record.fingerprint.to_string(),
            created_at: links::rfc3339(record.created_at),
            retained_until: links::rfc3339(record.retained_until),
            retry_safe: true,
            next_step: "The ticket exists. Sending the same request with this key again returns \
                        it again and creates nothing; a different request with this key is refused."
                .into(),
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
    tag = "operations",
    params(
        ("action" = String, Path, description = "The action: `create_ticket`"),
        ("key" = String, Path, description = "The Idempotency-Key (percent-encoded)"),
    ),
    responses(
        (status = 200, description = "The operation record.", body = OperationStatus),
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Nothing recorded for this key: a retry with the same key is safe.", body = Problem, content_type = "application/problem+json"),
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
    // A string that is not a valid key was never recorded.
    let Ok(key) = OperationKey::parse(key) else {
        return Err(RestError::OperationNotFound);
    };
    let record = kitchen
        .operation(tenant.id, action, &key)
        .await?
        .ok_or(RestError::OperationNotFound)?;
    Ok(axum::Json(record.into()))
}

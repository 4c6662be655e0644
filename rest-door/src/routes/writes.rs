//! What every write route has in common, written once: the attempt it is
//! measured as, the `Idempotency-Key` it names, and the one translation of
//! the kitchen's [`Outcome`] into an answer. The routes only say how their
//! request becomes a kitchen call and how a result is shown.

use std::future::Future;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use kitchen::whole_seconds;
use kitchen::{
    Action, Actor, Caller, Comment, EarlierWrite, Expired, Kitchen, KitchenWrite, NotCreatedReason,
    OperationKey, OperationRef, OperationState, Outcome, Receipt, Ticket, WriteOptions,
};
use serde::Serialize;
use telemetry::{Attempt, ContractFailure, Door, Metrics};
use time::OffsetDateTime;
use tracing::Instrument;
use utoipa::ToSchema;

use crate::error::RestError;
use crate::schema::{CommentBody, TicketBody};
use crate::state::DoorState;
use crate::{idempotency_key, links, versions};

/// Response header that marks an answer to a key used before: `true` for a
/// replay of the first answer (within the key's replay window), `expired`
/// for the resource as it is now (after it; nothing new was made).
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Response header that advertises until when a retry with the answer's
/// key replays the first answer (RFC 3339), on every write answer that has
/// an operation. No registered name exists; the IETF httpapi idempotency
/// draft discusses one (ietf-wg-httpapi/idempotency#35, "Idempotency Key
/// Validity and Expiry").
pub const IDEMPOTENCY_REPLAYABLE_UNTIL: HeaderName =
    HeaderName::from_static("idempotency-replayable-until");

/// Response header of a write the likely-duplicate guard warns about (it
/// was made: its content matches a recent write under another key): a
/// structured-field dictionary (RFC 9651) naming that write's status
/// resource (`operation`), what it made (`resource`, once it did) and when
/// (`created_at`).
pub const POSSIBLE_DUPLICATE_OF: HeaderName = HeaderName::from_static("possible-duplicate-of");

/// Request header by which a create or a comment says it means a new one
/// even if it looks like a repeat (`Confirm-New: true`), as the body's
/// `confirm_new` does.
pub const CONFIRM_NEW: HeaderName = HeaderName::from_static("confirm-new");

/// The [`POSSIBLE_DUPLICATE_OF`] value for `earlier`.
fn duplicate_of(earlier: &EarlierWrite) -> String {
    // Every member is a path or a timestamp: no quote or backslash to
    // escape.
    let mut members = vec![format!(
        "operation=\"{}\"",
        links::operation(earlier.action, &earlier.key)
    )];
    if let Some(resource) = links::earlier_resource(earlier) {
        members.push(format!("resource=\"{resource}\""));
    }
    members.push(format!(
        "created_at=\"{}\"",
        links::rfc3339(earlier.created_at)
    ));
    members.join(", ")
}

/// One write request as it arrived.
struct WriteRequest<'a> {
    /// Where the attempt is measured.
    metrics: &'a Metrics,
    /// Who is writing.
    caller: &'a Caller,
    /// The request's headers (the key, the request id).
    headers: &'a HeaderMap,
    /// The write.
    action: Action,
}

/// What a write route is handed besides its own path and body: the
/// kitchen, the metrics, the caller and the request's headers.
pub(crate) struct WriteDoor {
    kitchen: Kitchen,
    metrics: Metrics,
    caller: Caller,
    headers: HeaderMap,
}

impl FromRequestParts<DoorState> for WriteDoor {
    type Rejection = RestError;

    async fn from_request_parts(parts: &mut Parts, state: &DoorState) -> Result<Self, RestError> {
        let caller =
            parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
                RestError::Internal("a write route ran before authentication".into())
            })?;
        Ok(Self {
            kitchen: state.kitchen.clone(),
            metrics: state.metrics.clone(),
            caller,
            headers: parts.headers.clone(),
        })
    }
}

impl WriteDoor {
    /// The whole of a write route: the key first ([`attempt`]), then the
    /// request, as `read` makes it from the headers (and whatever the
    /// route took from its path and body), then the kitchen's write `W`,
    /// whose result `success` answers.
    pub(crate) async fn write<W>(
        self,
        read: impl FnOnce(&HeaderMap) -> Result<W::Request, RestError>,
        success: impl FnOnce(&Receipt<W::Result>, bool) -> Response,
    ) -> Result<Response, RestError>
    where
        W: KitchenWrite,
        W::Result: Current,
    {
        self.write_with::<W>(
            |headers| Ok((read(headers)?, WriteOptions::default())),
            success,
        )
        .await
    }

    /// [`WriteDoor::write`] for a create or a comment, which the
    /// likely-duplicate guard looks at: `read` also says whether the body
    /// asked for a new one (`confirm_new`), as the `Confirm-New` header may.
    pub(crate) async fn write_with<W>(
        self,
        read: impl FnOnce(&HeaderMap) -> Result<(W::Request, WriteOptions), RestError>,
        success: impl FnOnce(&Receipt<W::Result>, bool) -> Response,
    ) -> Result<Response, RestError>
    where
        W: KitchenWrite,
        W::Result: Current,
    {
        let Self {
            kitchen,
            metrics,
            caller,
            headers,
        } = self;
        let request = WriteRequest {
            metrics: &metrics,
            caller: &caller,
            headers: &headers,
            action: W::ACTION,
        };
        let (kitchen, caller, headers) = (&kitchen, &caller, &headers);
        attempt(
            request,
            |key| async move {
                let (request, mut options) = read(headers)?;
                options.confirm_new |= confirm_new_header(headers)?;
                Ok(kitchen
                    .write_with::<W>(Actor::from(caller), &key, &request, options)
                    .await?)
            },
            success,
        )
        .await
    }
}

/// Whether `Confirm-New: true` was sent (`false` also when it is absent);
/// any other value is refused by name.
fn confirm_new_header(headers: &HeaderMap) -> Result<bool, RestError> {
    let mut values = headers.get_all(CONFIRM_NEW).iter();
    let Some(value) = values.next() else {
        return Ok(false);
    };
    match (value.to_str().map(str::trim), values.next()) {
        (Ok("true"), None) => Ok(true),
        (Ok("false"), None) => Ok(false),
        _ => Err(RestError::BadRequest(
            "The Confirm-New header must be sent once, as `true` or `false`. Nothing was \
             written and the key was not used."
                .into(),
        )),
    }
}

/// Runs one write attempt: reads the key, hands it to `perform` (which
/// reads the rest of the request and calls the kitchen), and answers the
/// outcome, a result through `success` (`true` when it is a replay). The
/// attempt is measured with the kitchen's name for the outcome and, when
/// the kitchen calls it the caller's mistake, what the caller has to fix.
async fn attempt<T, Fut>(
    request: WriteRequest<'_>,
    perform: impl FnOnce(OperationKey) -> Fut,
    success: impl FnOnce(&Receipt<T>, bool) -> Response,
) -> Result<Response, RestError>
where
    T: Current,
    Fut: Future<Output = Result<Outcome<T>, RestError>>,
{
    let WriteRequest {
        metrics,
        caller,
        headers,
        action,
    } = request;
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let attempt = Attempt::start(
        metrics,
        Door::Rest,
        action.as_str(),
        &caller.tenant,
        request_id,
        None,
    );
    let outcome = async {
        // The key first: without one, nothing about the rest matters yet.
        let key = idempotency_key::from_headers(headers, action)?;
        attempt.record_key(key.as_str());
        // One rule for the conditions a write may carry, for every route.
        versions::refuse_unsupported_preconditions(headers, action)?;
        perform(key).await
    }
    .instrument(attempt.span().clone())
    .await;
    match outcome {
        Ok(outcome) => {
            let name = outcome.name();
            let (response, failure) = respond(action, outcome, success);
            attempt.finish(name, failure);
            Ok(response)
        }
        Err(e) => {
            let (outcome, failure) = e.outcome();
            attempt.finish(outcome, failure);
            Err(e)
        }
    }
}

/// The answer to one outcome, with its replay horizon advertised, and what
/// the attempt failed for when the kitchen calls it the caller's mistake.
fn respond<T: Current>(
    action: Action,
    outcome: Outcome<T>,
    success: impl FnOnce(&Receipt<T>, bool) -> Response,
) -> (Response, Option<ContractFailure>) {
    let failure = ContractFailure::of(&outcome);
    let duplicate_of = match &outcome {
        Outcome::Created(receipt) => receipt.possible_duplicate_of.as_ref().map(duplicate_of),
        _ => None,
    };
    let (answer, replayable_until) = answer(action, outcome, success);
    let mut response = match answer {
        Ok(response) => response,
        Err(e) => e.into_response(),
    };
    // Every answer that has an operation says until when its key replays,
    // so that a caller knows how long a retry is a replay (for a conflict:
    // the original operation's horizon, the one that owns the key).
    if let Some(until) = replayable_until
        && let Ok(value) = HeaderValue::from_str(&links::rfc3339(until))
    {
        response
            .headers_mut()
            .insert(IDEMPOTENCY_REPLAYABLE_UNTIL, value);
    }
    // The guard's warning: made, but it looks like a retry under a new key.
    if let Some(value) = duplicate_of.and_then(|v| HeaderValue::from_str(&v).ok()) {
        response.headers_mut().insert(POSSIBLE_DUPLICATE_OF, value);
    }
    (response, failure)
}

/// The one translation of a kitchen outcome into an answer, and the replay
/// horizon of the operation it has, if any. How long to wait is the
/// kitchen's to say ([`Outcome::retry_after`]), never ours.
fn answer<T: Current>(
    action: Action,
    outcome: Outcome<T>,
    success: impl FnOnce(&Receipt<T>, bool) -> Response,
) -> (Result<Response, RestError>, Option<OffsetDateTime>) {
    // The kitchen gives a wait for every outcome that waiting resolves; the
    // default is never used (a zero is shown as the shortest wait, 1 s).
    let retry_after = outcome.retry_after().unwrap_or_default();
    match outcome {
        Outcome::Created(receipt) => (
            Ok(success(&receipt, false)),
            Some(receipt.operation.replayable_until),
        ),
        Outcome::Replayed(receipt) => (
            Ok(success(&receipt, true)),
            Some(receipt.operation.replayable_until),
        ),
        Outcome::Expired(expired) => {
            let until = expired.operation.replayable_until;
            (Ok(expired_answer(expired)), Some(until))
        }
        Outcome::Conflict { original } => {
            let until = original.replayable_until;
            (Err(RestError::KeyReused(original)), Some(until))
        }
        Outcome::Invalid { violations } => (Err(RestError::Validation(violations)), None),
        Outcome::Refused(refusal) => (Err(RestError::refused(refusal)), None),
        Outcome::InProgress { .. } => (
            Err(RestError::InProgress {
                action,
                retry_after,
            }),
            None,
        ),
        Outcome::NotCreated { operation, reason } => (
            Err(match reason {
                NotCreatedReason::Rejected(why) => RestError::ProviderRejected { action, why },
                NotCreatedReason::Unavailable(why) => RestError::ProviderUnavailable {
                    action,
                    why,
                    retry_after,
                },
            }),
            Some(operation.replayable_until),
        ),
        Outcome::Unknown {
            operation,
            reason,
            gave_up,
        } => {
            let until = operation.replayable_until;
            // Given up on: waiting does not help, so no Retry-After.
            let retry_after = (!gave_up).then_some(retry_after);
            (
                Ok(outcome_unknown(&operation, reason, retry_after, gave_up)),
                Some(until),
            )
        }
    }
}

/// What a write makes (a ticket, or a comment), as the door shows it when
/// the first answer is no longer kept.
pub(crate) trait Current {
    /// `200` with the resource as it is now as the body (its usual JSON,
    /// as a GET shows it), its `Location`, and for a ticket its `ETag`.
    fn current(self) -> Response;
}

impl Current for Ticket {
    fn current(self) -> Response {
        let location = HeaderValue::from_str(&links::ticket(self.id));
        let etag = versions::etag(self.version);
        let mut response = (
            StatusCode::OK,
            [(header::ETAG, etag)],
            axum::Json(TicketBody::from(self)),
        )
            .into_response();
        if let Ok(location) = location {
            response.headers_mut().insert(header::LOCATION, location);
        }
        response
    }
}

impl Current for Comment {
    fn current(self) -> Response {
        let location = HeaderValue::from_str(&links::comment(self.ticket_id, self.id));
        let mut response = (StatusCode::OK, axum::Json(CommentBody::from(self))).into_response();
        if let Ok(location) = location {
            response.headers_mut().insert(header::LOCATION, location);
        }
        response
    }
}

/// The same request with a key whose replay window is over: `200`, the
/// resource as it is now and `Idempotent-Replayed: expired`. Not the first
/// answer (it is no longer kept), and not a problem: the effect exists and
/// nothing new was made, which is what the caller's retry wanted.
fn expired_answer<T: Current>(expired: Expired<T>) -> Response {
    let mut response = expired.current.current();
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("expired"));
    response
}

/// The body of a `202`: the outcome is not known yet.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OutcomeUnknown {
    /// Always `unknown`.
    #[schema(example = "unknown")]
    state: &'static str,
    /// The action, `create_ticket`.
    action: &'static str,
    /// The Idempotency-Key.
    key: String,
    /// The operation's status resource (also in `Location`).
    status_location: String,
    /// What is known.
    detail: String,
    /// Always true: retrying the same request with the same key is safe.
    retry_safe: bool,
    /// What to do now.
    next_step: &'static str,
}

/// `202 Accepted`: the ticket provider's answer was lost and the service is
/// reconciling. `Location` is the operation's status resource.
fn outcome_unknown(
    operation: &OperationRef,
    reason: String,
    retry_after: Option<std::time::Duration>,
    gave_up: bool,
) -> Response {
    let location = links::operation(operation.action, &operation.key);
    let body = OutcomeUnknown {
        state: "unknown",
        action: operation.action.as_str(),
        key: operation.key.as_str().into(),
        status_location: location.clone(),
        detail: reason,
        retry_safe: true,
        next_step: if gave_up {
            crate::routes::operations::gave_up_next_step(operation.action)
        } else {
            crate::routes::operations::next_step(operation.action, OperationState::Unknown)
        },
    };
    let mut response = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&location) {
        headers.insert(header::LOCATION, location);
    }
    if let Some(retry_after) = retry_after {
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from(whole_seconds(retry_after)),
        );
    }
    response
}

/// `status` with the frozen snapshot as the body: a replay is
/// byte-identical to the first answer because both send the stored bytes.
fn snapshot<T>(status: StatusCode, receipt: &Receipt<T>, replayed: bool) -> Response {
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        receipt.snapshot.as_str().to_owned(),
    )
        .into_response();
    if replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}

/// A ticket made: `201`, its `Location` and its `ETag`.
pub(crate) fn ticket_created(receipt: &Receipt<Ticket>, replayed: bool) -> Response {
    let mut response = snapshot(StatusCode::CREATED, receipt, replayed);
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&links::ticket(receipt.result.id)) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(header::ETAG, versions::etag(receipt.result.version));
    response
}

/// A ticket changed: `200` and the `ETag` of the version the write left it
/// at (a replay's too: the snapshot's, whatever the ticket is at now).
pub(crate) fn ticket_changed(receipt: &Receipt<Ticket>, replayed: bool) -> Response {
    let mut response = snapshot(StatusCode::OK, receipt, replayed);
    response
        .headers_mut()
        .insert(header::ETAG, versions::etag(receipt.result.version));
    response
}

/// A comment added: `201` and its `Location`.
pub(crate) fn comment_added(receipt: &Receipt<Comment>, replayed: bool) -> Response {
    let mut response = snapshot(StatusCode::CREATED, receipt, replayed);
    let comment = &receipt.result;
    if let Ok(location) = HeaderValue::from_str(&links::comment(comment.ticket_id, comment.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

#[cfg(test)]
mod tests;

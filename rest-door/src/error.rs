//! [`RestError`]: every way a REST request fails, and its one translation
//! into a status code and a problem body.

use std::time::Duration;

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};
use kitchen::{FieldViolation, KitchenError, OperationRef};

use crate::links;
use crate::problem::{FieldError, Problem, ProblemKind};

/// A failed REST request: either the caller's to fix, or ours (logged in
/// full, answered opaquely).
#[derive(Debug)]
pub enum RestError {
    /// No `Authorization: Bearer` header.
    MissingCredentials,
    /// A bearer token that is unknown or revoked.
    InvalidToken,
    /// A write without `Idempotency-Key`.
    MissingIdempotencyKey,
    /// An `Idempotency-Key` that is not a valid key; says why.
    MalformedIdempotencyKey(String),
    /// The key was used for a different request.
    KeyReused(OperationRef),
    /// Another attempt holds the key.
    InProgress(Duration),
    /// Field-level validation failed.
    Validation(Vec<FieldViolation>),
    /// The ticket provider refused the ticket; its words.
    ProviderRejected(String),
    /// The ticket provider could not be reached; what happened.
    ProviderUnavailable(String),
    /// The body is not JSON.
    MalformedJson(String),
    /// The body is JSON of the wrong shape.
    InvalidBody(String),
    /// The body is not `application/json`.
    UnsupportedMediaType,
    /// The body is over the limit.
    PayloadTooLarge,
    /// The body is compressed in a way the server cannot decode; says how.
    UnsupportedContentEncoding(String),
    /// A path segment, query parameter or header is not valid, or the body
    /// could not be read; says which, in the words of what refused it.
    BadRequest(String),
    /// Nothing at this address for this tenant; says what was looked for.
    NotFound(String),
    /// No route has this path.
    NoRoute,
    /// Nothing recorded for this operation key.
    OperationNotFound,
    /// The database does not answer (readiness).
    NotReady,
    /// Anything else: a bug or an infrastructure failure.
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

impl From<KitchenError> for RestError {
    fn from(e: KitchenError) -> Self {
        Self::Internal(Box::new(e))
    }
}

impl RestError {
    /// The kind of problem; the one place that decides status codes.
    pub fn kind(&self) -> ProblemKind {
        match self {
            Self::MissingCredentials | Self::InvalidToken => ProblemKind::UNAUTHORIZED,
            Self::MissingIdempotencyKey => ProblemKind::IDEMPOTENCY_KEY_MISSING,
            Self::MalformedIdempotencyKey(_) => ProblemKind::IDEMPOTENCY_KEY_MALFORMED,
            Self::KeyReused(_) => ProblemKind::IDEMPOTENCY_KEY_REUSED,
            Self::InProgress(_) => ProblemKind::OPERATION_IN_PROGRESS,
            Self::Validation(_) => ProblemKind::VALIDATION_FAILED,
            Self::ProviderRejected(_) => ProblemKind::PROVIDER_REJECTED,
            Self::ProviderUnavailable(_) => ProblemKind::PROVIDER_UNAVAILABLE,
            Self::MalformedJson(_) => ProblemKind::MALFORMED_JSON,
            Self::InvalidBody(_) => ProblemKind::INVALID_BODY,
            Self::UnsupportedMediaType => ProblemKind::UNSUPPORTED_MEDIA_TYPE,
            Self::PayloadTooLarge => ProblemKind::PAYLOAD_TOO_LARGE,
            Self::UnsupportedContentEncoding(_) => ProblemKind::UNSUPPORTED_CONTENT_ENCODING,
            Self::BadRequest(_) => ProblemKind::BAD_REQUEST,
            Self::NotFound(_) | Self::NoRoute => ProblemKind::NOT_FOUND,
            Self::OperationNotFound => ProblemKind::OPERATION_NOT_FOUND,
            Self::NotReady => ProblemKind::NOT_READY,
            Self::Internal(_) => ProblemKind::INTERNAL,
        }
    }

    /// How a write attempt that failed this way is counted: its outcome
    /// and, when the caller broke the contract, how.
    pub fn outcome(&self) -> (&'static str, Option<&'static str>) {
        match self {
            Self::MissingIdempotencyKey => ("invalid", Some("idempotency_key_missing")),
            Self::MalformedIdempotencyKey(_) => ("invalid", Some("idempotency_key_malformed")),
            Self::KeyReused(_) => ("conflict", Some("idempotency_key_reused")),
            Self::InProgress(_) => ("in_progress", None),
            Self::ProviderRejected(_) | Self::ProviderUnavailable(_) => ("not_created", None),
            Self::Validation(_)
            | Self::MalformedJson(_)
            | Self::InvalidBody(_)
            | Self::UnsupportedMediaType
            | Self::PayloadTooLarge
            | Self::UnsupportedContentEncoding(_)
            | Self::BadRequest(_) => ("invalid", Some("validation_failed")),
            Self::MissingCredentials | Self::InvalidToken => ("invalid", Some("unauthenticated")),
            Self::NotFound(_)
            | Self::NoRoute
            | Self::OperationNotFound
            | Self::NotReady
            | Self::Internal(_) => ("error", None),
        }
    }

    fn detail(&self) -> String {
        match self {
            Self::MissingCredentials => {
                "This endpoint needs `Authorization: Bearer <token>`. Get a token with \
                 `tickets token issue <tenant>`."
                    .into()
            }
            Self::InvalidToken => "The bearer token is unknown or revoked.".into(),
            Self::MissingIdempotencyKey => format!(
                "POST /v1/tickets needs an Idempotency-Key header naming the ticket you intend, \
                 for example `Idempotency-Key: {}`. Make a fresh UUID for each new ticket and send \
                 the same key again when you retry. Nothing was created.",
                EXAMPLE_KEY
            ),
            Self::MalformedIdempotencyKey(why) => format!("{why} Nothing was created."),
            Self::KeyReused(original) => {
                let made = original.resource.map_or_else(
                    || "has not made a ticket yet".to_owned(),
                    |id| format!("made the ticket {}", links::ticket(id)),
                );
                format!(
                    "Idempotency-Key {:?} was first used at {} for a different request, which {made}. \
                     Nothing was created by this request. If you meant the same ticket, do not send \
                     it again: GET {} to see it. Only for a genuinely different ticket use a new key.",
                    original.key.as_str(),
                    links::rfc3339(original.created_at),
                    links::operation(original.action, &original.key)
                )
            }
            Self::InProgress(after) => format!(
                "Another attempt with this Idempotency-Key is still running. Nothing was created \
                 by this one. Retry the same request with the same key in {} s.",
                after.as_secs().max(1)
            ),
            Self::Validation(v) => format!(
                "{} field(s) are not valid; see errors. Nothing was changed and no Idempotency-Key \
                 was used up: correct the input and send it again.",
                v.len()
            ),
            Self::ProviderRejected(why) => format!(
                "The ticket provider refused the ticket: {why}. Nothing was created and the \
                 Idempotency-Key was not used up: correct the request and send it again."
            ),
            Self::ProviderUnavailable(why) => format!(
                "{why} Nothing was created and the Idempotency-Key was not used up: retry the \
                 same request with the same key in {} s.",
                PROVIDER_RETRY_AFTER.as_secs()
            ),
            Self::MalformedJson(why) => {
                format!("The body is not valid JSON: {why}. Nothing was created.")
            }
            Self::InvalidBody(why) => {
                format!("The body has the wrong shape: {why}. Nothing was created.")
            }
            Self::UnsupportedMediaType => {
                "Send the body as JSON with `Content-Type: application/json`. Nothing was created."
                    .into()
            }
            Self::PayloadTooLarge => format!(
                "The body is larger than {} KiB. Nothing was created.",
                crate::BODY_LIMIT_BYTES / 1024
            ),
            Self::UnsupportedContentEncoding(why) | Self::BadRequest(why) => why.clone(),
            Self::NotFound(what) => format!("{what} was not found."),
            Self::NoRoute => {
                "Nothing is served at this address; /openapi.json lists every route.".into()
            }
            Self::OperationNotFound => {
                "Nothing was recorded for this Idempotency-Key: the create did not happen (or its \
                 record is past retention). A retry with the same key is safe."
                    .into()
            }
            Self::NotReady => "The database is not reachable.".into(),
            Self::Internal(_) => {
                "Something failed on our side and was logged. A write may or may not have \
                 happened: retry with the same Idempotency-Key, or GET the operation by key."
                    .into()
            }
        }
    }
}

/// How long to wait before retrying when the provider was unreachable.
pub(crate) const PROVIDER_RETRY_AFTER: Duration = Duration::from_secs(5);

/// What a good key looks like, in messages.
pub(crate) const EXAMPLE_KEY: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79";

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        if let Self::Internal(cause) = &self {
            // The caller sees an opaque 500; the log gets the whole chain.
            tracing::error!(error = %error_chain(cause.as_ref()), "request failed");
        }
        let mut problem = Problem::new(self.kind(), self.detail());
        match &self {
            Self::Validation(violations) => {
                problem.errors = Some(
                    violations
                        .iter()
                        .map(|v| FieldError {
                            field: v.field.clone(),
                            code: v.code.into(),
                            message: v.message.clone(),
                        })
                        .collect(),
                );
            }
            Self::KeyReused(original) => {
                problem.original_operation = Some(links::operation(original.action, &original.key));
                problem.original_created_at = Some(links::rfc3339(original.created_at));
                problem.original_resource = original.resource.map(links::ticket);
            }
            _ => {}
        }
        let mut response = problem.into_response();
        let headers = response.headers_mut();
        match &self {
            Self::MissingCredentials => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(
                        r#"Bearer realm="tickets", error_description="send Authorization: Bearer <token> (a static token from tickets token issue)""#,
                    ),
                );
            }
            Self::InvalidToken => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(
                        r#"Bearer realm="tickets", error="invalid_token", error_description="the bearer token is unknown or revoked""#,
                    ),
                );
            }
            Self::InProgress(after) => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(after.as_secs().max(1)),
                );
            }
            Self::ProviderUnavailable(_) => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(PROVIDER_RETRY_AFTER.as_secs()),
                );
            }
            Self::KeyReused(original) => {
                let link = format!(
                    "<{}>; rel=\"original\"",
                    links::operation(original.action, &original.key)
                );
                if let Ok(value) = HeaderValue::from_str(&link) {
                    headers.insert(header::LINK, value);
                }
            }
            _ => {}
        }
        response
    }
}

/// `error: cause: cause…`, for logs.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

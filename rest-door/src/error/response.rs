//! How a [`RestError`] is written: its problem document (RFC 9457) with
//! the fields its kind adds, and the headers it carries (`Retry-After`,
//! `WWW-Authenticate`, `Link`). Which status each error has is
//! [`RestError::kind`]'s, in `error.rs`.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, header};
use kitchen::{error_chain, whole_seconds};

use super::RestError;
use crate::links;
use crate::problem::{FieldError, Problem};

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
            Self::VersionMismatch { expected, current } => {
                problem.expected_version = Some(expected.get());
                problem.current_version = Some(current.get());
            }
            Self::PossibleDuplicate(earlier) => {
                problem.original_operation = Some(links::operation(earlier.action, &earlier.key));
                problem.original_created_at = Some(links::rfc3339(earlier.created_at));
                problem.original_resource = links::earlier_resource(earlier);
            }
            Self::TransitionNotAllowed { from, to, allowed } => {
                problem.from = Some(from.as_str());
                problem.to = Some(to.as_str());
                problem.allowed_moves = Some(allowed.iter().map(|s| s.as_str()).collect());
            }
            _ => {}
        }
        let mut response = problem.into_response();
        let headers = response.headers_mut();
        match &self {
            Self::MissingCredentials { challenge, .. }
            | Self::InvalidToken { challenge, .. }
            | Self::InsufficientScope { challenge, .. } => {
                // Built from quoted printable ASCII only (see `access`).
                if let Ok(value) = HeaderValue::from_str(challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, value);
                }
            }
            Self::InProgress { retry_after, .. }
            | Self::ProviderUnavailable { retry_after, .. }
            | Self::AuthUnavailable { retry_after, .. } => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(whole_seconds(*retry_after)),
                );
            }
            Self::DatabaseUnavailable { fault, .. } => {
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(whole_seconds(fault.retry_after())),
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

//! The bearer middleware in front of `/mcp`: the same authentication as
//! the REST door's (`rest_door::auth::authenticate`), answered in the
//! dialect `/mcp` speaks: a `401` keeps the REST door's status and
//! `WWW-Authenticate` (what an MCP client acts on) with a JSON-RPC body; an identity provider
//! that cannot be reached and a database that cannot be used (`503`, with
//! `Retry-After`), and any other failure, are JSON-RPC errors, like every
//! other refusal of `/mcp`.

use access::Authenticator;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use rest_door::RestError;

/// Puts the caller into the request, or refuses it.
pub(crate) async fn require_tenant(
    State(access): State<Authenticator>,
    mut request: Request,
    next: Next,
) -> Response {
    match rest_door::auth::authenticate(&access, &mut request).await {
        Ok(()) => next.run(request).await,
        Err(e @ (RestError::MissingCredentials { .. } | RestError::InvalidToken { .. })) => {
            // The status and `WWW-Authenticate` are what an MCP client acts
            // on (they are the REST door's, so both doors challenge alike);
            // the body is JSON-RPC, which an MCP SDK shows its user, where a
            // problem document would reach them as "an error response".
            let detail = e.detail();
            let rest = e.into_response();
            let mut response = mcp_door::http_edge::error_response(
                rest.status(),
                serde_json::Value::Null,
                mcp_door::http_edge::TRANSPORT_REFUSED,
                &detail,
            );
            if let Some(challenge) = rest.headers().get(header::WWW_AUTHENTICATE) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, challenge.clone());
            }
            response
        }
        Err(RestError::AuthUnavailable { why, retry_after }) => {
            let mut response = mcp_door::http_edge::refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "The identity provider's signing keys could not be fetched ({why}), so the \
                     token can be neither accepted nor refused now. Nothing was done: retry in \
                     {} s.",
                    retry_after.as_secs().max(1)
                ),
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after.as_secs().max(1)),
            );
            response
        }
        Err(RestError::DatabaseUnavailable { fault, written }) => {
            // Logged when the kitchen's error became this one.
            let mut response = mcp_door::http_edge::error_response(
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::Value::Null,
                mcp_door::http_edge::DATABASE_UNAVAILABLE,
                &mcp_door::contract::database_unavailable(fault, written),
            );
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(fault.retry_after().as_secs().max(1)),
            );
            response
        }
        Err(other) => {
            // Logged in full by the REST error; the client gets JSON-RPC.
            let status = other.kind().status;
            drop(other.into_response());
            mcp_door::http_edge::refusal(
                status,
                "The server failed and logged why; nothing was done. Retry the call.",
            )
        }
    }
}

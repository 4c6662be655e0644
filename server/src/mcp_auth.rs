//! The bearer middleware in front of `/mcp`: the same authentication as
//! the REST door's ([`access::Authenticator`]), answered in the dialect
//! `/mcp` speaks. A `401` keeps the status and `WWW-Authenticate` both
//! doors challenge with (what an MCP client acts on) under a JSON-RPC body;
//! an identity provider that cannot be reached and a database that cannot
//! be used are `503` with `Retry-After`; anything else is logged here and
//! answered opaquely. Every body is JSON-RPC, like every other refusal of
//! `/mcp`.

use access::{Authenticator, Refusal};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use kitchen::{error_chain, whole_seconds};
use mcp_door::http_edge;

/// Puts the caller into the request, or refuses it.
pub(crate) async fn require_tenant(
    State(access): State<Authenticator>,
    mut request: Request,
    next: Next,
) -> Response {
    // Read the token out before awaiting: a request body is not Sync.
    let token = access::bearer_token(request.headers()).map(str::to_owned);
    match access.authenticate(token.as_deref()).await {
        Ok(caller) => {
            tracing::Span::current().record("tenant", tracing::field::display(&caller.tenant.name));
            request.extensions_mut().insert(caller.tenant.clone());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => refused(&access, refusal),
    }
}

/// A refusal as `/mcp` answers it.
fn refused(access: &Authenticator, refusal: Refusal) -> Response {
    match refusal {
        Refusal::Missing | Refusal::Invalid(_) => {
            // The words and the challenge are the REST door's, so that both
            // doors challenge alike; the body is JSON-RPC, which an MCP SDK
            // shows its user, where a problem document would reach them as
            // "an error response".
            let rest = rest_door::auth::refused(access, refusal);
            let detail = rest.detail();
            let rest = rest.into_response();
            let mut response = http_edge::error_response(
                rest.status(),
                serde_json::Value::Null,
                http_edge::TRANSPORT_REFUSED,
                &detail,
            );
            if let Some(challenge) = rest.headers().get(header::WWW_AUTHENTICATE) {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, challenge.clone());
            }
            response
        }
        Refusal::Unavailable { why, retry_after } => with_retry_after(
            http_edge::refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                &Refusal::unavailable_detail(&why, retry_after),
            ),
            whole_seconds(retry_after),
        ),
        Refusal::Failed(error) => match error.storage_fault() {
            Some((fault, written)) => {
                tracing::warn!(error = %error_chain(&error), %fault, "the database is unavailable");
                with_retry_after(
                    http_edge::error_response(
                        StatusCode::SERVICE_UNAVAILABLE,
                        serde_json::Value::Null,
                        http_edge::DATABASE_UNAVAILABLE,
                        &mcp_door::contract::database_unavailable(fault, written),
                    ),
                    whole_seconds(fault.retry_after()),
                )
            }
            None => {
                tracing::error!(error = %error_chain(&error), "authenticating /mcp failed");
                http_edge::refusal(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The server failed and logged why; nothing was done. Retry the call.",
                )
            }
        },
    }
}

fn with_retry_after(mut response: Response, seconds: u64) -> Response {
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

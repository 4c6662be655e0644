//! Bearer-token authentication, as axum middleware.
//!
//! The tenant comes from here and only here: the middleware resolves the
//! token through the kitchen and puts the [`Caller`] (the tenant and the
//! token's id, which history records) and its [`Tenant`](kitchen::Tenant) into the request's
//! extensions, where the REST handlers and the MCP door read them. No body
//! field or tool argument can name a tenant.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;
use kitchen::{Caller, Kitchen};

use crate::error::RestError;

/// Resolves `Authorization: Bearer <token>` to a [`Caller`] (and its
/// [`Tenant`](kitchen::Tenant)), or answers `401` with `WWW-Authenticate: Bearer`.
pub async fn require_tenant(
    State(kitchen): State<Kitchen>,
    mut request: Request,
    next: Next,
) -> Response {
    // Read the token out before awaiting: a request body is not Sync, so a
    // borrow of the request must not live across the await.
    let token = bearer_token(&request).map(str::to_owned);
    match authenticate(&kitchen, token).await {
        Ok(caller) => {
            tracing::Span::current().record("tenant", tracing::field::display(&caller.tenant.name));
            request.extensions_mut().insert(caller.tenant.clone());
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

/// The token of an `Authorization: Bearer <token>` header, if there is one.
fn bearer_token(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

async fn authenticate(kitchen: &Kitchen, token: Option<String>) -> Result<Caller, RestError> {
    let token = token.ok_or(RestError::MissingCredentials)?;
    kitchen
        .authenticate(&token)
        .await?
        .ok_or(RestError::InvalidToken)
}

//! Bearer authentication and the scope check, as axum middleware.
//!
//! The tenant comes from here and only here: [`require_tenant`] resolves the
//! token through the [`Authenticator`] (an API token through the kitchen, or
//! with OAuth on, an identity provider's access token verified and mapped
//! to a tenant by the kitchen) and puts the [`Caller`] (the tenant, how it
//! authenticated, its scopes) and its [`Tenant`](kitchen::Tenant) into the
//! request's extensions, where the REST handlers and the MCP door read them.
//! No body field or tool argument can name a tenant.
//!
//! [`require_scope`] then checks the caller's scopes against the one policy
//! ([`access::policy`]) for the route matched; `/mcp` checks them in its
//! own edge, where the message says which tool is called.

use std::collections::HashMap;
use std::sync::Arc;

use access::{Authenticator, Refusal};
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::Method;
use kitchen::Caller;
use utoipa::openapi::OpenApi;

use crate::error::RestError;

/// Resolves `Authorization: Bearer <token>` to a [`Caller`] (and its
/// [`Tenant`](kitchen::Tenant)), or answers `401` with `WWW-Authenticate:
/// Bearer` (`503` when an identity provider's keys cannot be fetched).
pub async fn require_tenant(
    State(access): State<Authenticator>,
    mut request: Request,
    next: Next,
) -> Response {
    match authenticate(&access, &mut request).await {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

/// Authenticates `request`: puts its [`Caller`] and tenant into its
/// extensions, or says why not, in the REST door's words.
async fn authenticate(access: &Authenticator, request: &mut Request) -> Result<(), RestError> {
    // Read the token out before awaiting: a request body is not Sync, so a
    // borrow of the request must not live across the await.
    let token = access::bearer_token(request.headers()).map(str::to_owned);
    let caller = access
        .authenticate(token.as_deref())
        .await
        .map_err(|refusal| refused(access, refusal))?;
    tracing::Span::current().record("tenant", tracing::field::display(&caller.tenant.name));
    request.extensions_mut().insert(caller.tenant.clone());
    request.extensions_mut().insert(caller);
    Ok(())
}

/// What the scope check needs: the authenticator (for the challenge) and
/// each route's OpenAPI `operationId` by method and path template, which
/// names the route in the policy.
#[derive(Clone)]
pub(crate) struct ScopeCheck {
    pub(crate) access: Authenticator,
    operations: Arc<HashMap<(Method, String), String>>,
}

impl ScopeCheck {
    /// The check for the routes `doc` describes.
    pub(crate) fn new(access: Authenticator, doc: &OpenApi) -> Self {
        let mut operations = HashMap::new();
        for (path, item) in &doc.paths.paths {
            for (method, operation) in [
                (Method::GET, &item.get),
                (Method::POST, &item.post),
                (Method::PATCH, &item.patch),
                (Method::PUT, &item.put),
                (Method::DELETE, &item.delete),
            ] {
                if let Some(id) = operation.as_ref().and_then(|o| o.operation_id.clone()) {
                    operations.insert((method, path.clone()), id);
                }
            }
        }
        Self {
            access,
            operations: Arc::new(operations),
        }
    }
}

/// Refuses a caller whose scopes do not cover what the matched route needs:
/// `403` with `WWW-Authenticate: Bearer error="insufficient_scope"`. Runs
/// after [`require_tenant`], on the REST routes only.
pub(crate) async fn require_scope(
    State(check): State<ScopeCheck>,
    request: Request,
    next: Next,
) -> Response {
    let path = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
        .unwrap_or_default();
    let operation = check
        .operations
        .get(&(request.method().clone(), path.to_owned()))
        .map(String::as_str);
    let needed = access::policy::rest(operation);
    let Some(caller) = request.extensions().get::<Caller>() else {
        return RestError::Internal("the scope check ran before authentication".into())
            .into_response();
    };
    let missing = caller.scopes.missing_from(needed);
    if missing.is_empty() {
        return next.run(request).await;
    }
    RestError::InsufficientScope {
        needed: missing,
        has: caller.scopes,
        challenge: check.access.challenges().insufficient(missing),
    }
    .into_response()
}

/// A refusal in the REST door's words, with its challenge (also the
/// words of `/mcp`'s `401`s, so that both doors challenge alike).
pub fn refused(access: &Authenticator, refusal: Refusal) -> RestError {
    match refusal {
        Refusal::Missing => RestError::MissingCredentials {
            challenge: access.challenges().missing(),
            metadata: access.metadata_url().map(str::to_owned),
        },
        Refusal::Invalid(why) => {
            tracing::info!(reason = %why, "bearer token refused");
            RestError::InvalidToken {
                challenge: access.challenges().invalid(&why),
                why,
            }
        }
        Refusal::Unavailable { why, retry_after } => {
            RestError::AuthUnavailable { why, retry_after }
        }
        Refusal::Failed(e) => e.into(),
    }
}

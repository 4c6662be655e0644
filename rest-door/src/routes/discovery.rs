//! `GET /.well-known/oauth-protected-resource` (and its `/mcp` form): this
//! server as an OAuth protected resource (RFC 9728).
//!
//! An MCP client that follows the MCP authorization spec reads this after
//! a `401` (the challenge names it in `resource_metadata`), signs in with an
//! authorization server it lists, asks for a token for `resource`, and comes
//! back. The document is the same at both addresses: the root form serves
//! clients that look there, the path-suffixed form is where RFC 9728 puts
//! the metadata of a resource whose URL is `…/mcp`. One resource, one
//! audience, both doors. With OAuth off both answer `404`, saying to send a
//! static token.

use access::Authenticator;
use axum::extract::State;
use kitchen::Scope;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::RestError;
use crate::problem::Problem;

/// This server's protected resource metadata (RFC 9728 section 2).
#[derive(Debug, Serialize, ToSchema)]
pub struct ResourceMetadata {
    /// The canonical URL of this resource: the audience (`aud`) its access
    /// tokens must carry, and the `resource` to ask them for (RFC 8707).
    pub resource: String,
    /// The issuers of the identity providers whose tokens are accepted.
    pub authorization_servers: Vec<String>,
    /// `tickets:read` (reads, status lookups, previews) and `tickets:write`
    /// (the four writes).
    pub scopes_supported: Vec<String>,
    /// Tokens go in the `Authorization` header only.
    pub bearer_methods_supported: Vec<String>,
    /// A name for people.
    pub resource_name: String,
}

impl ResourceMetadata {
    /// The document `access` describes; `None` with OAuth off.
    pub fn of(access: &Authenticator) -> Option<Self> {
        let oauth = access.oauth()?;
        Some(Self {
            resource: oauth.resource().to_owned(),
            authorization_servers: oauth
                .issuers()
                .iter()
                .map(|i| i.as_str().to_owned())
                .collect(),
            scopes_supported: Scope::ALL.iter().map(|s| s.as_str().to_owned()).collect(),
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: "Retry-safe tickets".to_owned(),
        })
    }
}

/// This server as an OAuth protected resource.
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource",
    operation_id = "protected_resource_metadata", tag = "auth",
    responses(
        (status = 200, description = "The protected resource metadata (RFC 9728): the identity providers whose access tokens are accepted, the scopes, and the resource (audience) to ask tokens for.", body = ResourceMetadata),
        (status = 400, description = "A header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "This server does not use OAuth (no identity provider is configured): send a static API token (`not-found`, saying how).", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn metadata(
    State(access): State<Authenticator>,
) -> Result<axum::Json<ResourceMetadata>, RestError> {
    ResourceMetadata::of(&access)
        .map(axum::Json)
        .ok_or(RestError::OAuthNotOffered)
}

/// The same document, where RFC 9728 puts the metadata of the resource
/// `…/mcp` (the MCP endpoint's URL).
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource/mcp",
    operation_id = "protected_resource_metadata_mcp", tag = "auth",
    responses(
        (status = 200, description = "The protected resource metadata (RFC 9728), as at `/.well-known/oauth-protected-resource`.", body = ResourceMetadata),
        (status = 400, description = "A header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "This server does not use OAuth: send a static API token (`not-found`, saying how).", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn metadata_mcp(
    state: State<Authenticator>,
) -> Result<axum::Json<ResourceMetadata>, RestError> {
    metadata(state).await
}

/// Addresses an OAuth client guesses on a server that names no metadata
/// (the 2025-03-26 MCP authorization fallbacks): with OAuth off they
/// answer a `404` that says to send a static token, so the client's error
/// does.
pub(crate) const GUESSED_OAUTH_PATHS: &[&str] = &[
    "/.well-known/oauth-authorization-server",
    "/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
];

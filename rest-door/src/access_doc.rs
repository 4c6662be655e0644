//! What the access policy adds to the OpenAPI document: the two kinds of
//! bearer token as security schemes, and for every operation behind a
//! token the scope it needs (read from `access::policy`, the table the
//! middleware enforces, so the document cannot drift from it), the `403`
//! of a token without that scope, and the `503` of an identity provider
//! that cannot be reached.

use std::collections::BTreeMap;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{OpenApi, RefOr, Response};

use crate::shared_responses::{problem, secured_operations, string_header};

/// The security schemes: `bearer` (a static API token) and `oauth` (an
/// identity provider's access token).
pub(crate) struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let mut api_token = Http::new(HttpAuthScheme::Bearer);
        api_token.description = Some(
            "A static API token (`tkt_…`), issued by `tickets token issue <tenant> [--scope …]`; \
             it carries both scopes unless issued with fewer."
                .into(),
        );
        components.add_security_scheme("bearer", SecurityScheme::Http(api_token));
        let mut oauth = Http::new(HttpAuthScheme::Bearer);
        oauth.bearer_format = Some("JWT".into());
        oauth.description = Some(
            "With OAuth on: an access token (a JWT) from an identity provider this server trusts, \
             for its canonical resource URL (`aud`), granting the scope each operation lists \
             (`tickets:read`, `tickets:write`). The identity providers and the resource are in \
             `GET /.well-known/oauth-protected-resource`."
                .into(),
        );
        components.add_security_scheme("oauth", SecurityScheme::Http(oauth));
    }
}

/// `doc` with the access policy applied to every secured operation.
pub(crate) fn with_access_policy(mut doc: OpenApi) -> OpenApi {
    for operation in secured_operations(&mut doc) {
        let needed = access::policy::rest(operation.operation_id.as_deref());
        let scopes: Vec<String> = needed.iter().map(|s| s.as_str().to_owned()).collect();
        operation.security = Some(vec![
            SecurityRequirement::new("bearer", Vec::<String>::new()),
            SecurityRequirement::new("oauth", scopes),
        ]);
        let responses = &mut operation.responses.responses;
        responses.insert("403".into(), RefOr::T(forbidden(&needed.to_string())));
        add_auth_unavailable(responses);
    }
    doc
}

/// The `403` of a token without `scope`.
fn forbidden(scope: &str) -> Response {
    problem(&format!(
        "The token does not carry `{scope}`, which this operation needs \
         (`insufficient-scope`). Nothing was done and no key was used."
    ))
    .header(
        "WWW-Authenticate",
        string_header(&format!(
            "Bearer error=\"insufficient_scope\", scope=\"{scope}\" (and, with OAuth on, \
             resource_metadata)"
        )),
    )
    .build()
}

/// Adds `auth-unavailable` to the operation's `503` (making one if it has
/// none), with its `Retry-After`.
fn add_auth_unavailable(responses: &mut BTreeMap<String, RefOr<Response>>) {
    const SAYS: &str = "With OAuth on, the identity provider's signing keys could not be \
                        fetched in time (`auth-unavailable`): nothing was done and no key was \
                        used; retry after Retry-After seconds.";
    let retry_after = HeaderBuilder::new()
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::Integer))
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .minimum(Some(0)),
        ))
        .description(Some("Seconds to wait"))
        .build();
    match responses.get_mut("503") {
        Some(RefOr::T(existing)) => {
            existing.description = format!("{} Or: {SAYS}", existing.description);
            existing
                .headers
                .entry("Retry-After".into())
                .or_insert(RefOr::T(retry_after));
        }
        _ => {
            let response = problem(SAYS).header("Retry-After", retry_after).build();
            responses.insert("503".into(), RefOr::T(response));
        }
    }
}

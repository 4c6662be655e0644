//! The REST door: the ticket service over HTTP, speaking `Idempotency-Key`.
//!
//! The door translates; it decides nothing. A request becomes a kitchen
//! call, and the kitchen's [`Outcome`](kitchen::Outcome) becomes a status
//! code, headers and a body. Every error answer is a problem document
//! (RFC 9457, `application/problem+json`) with a stable `type` URI and a
//! `detail` that says what to do next. This crate writes no SQL.
//!
//! # Layout
//!
//! - [`router`]: the routes, with authentication on `/v1`.
//! - [`openapi`]: the OpenAPI 3.1 document, generated from the same route
//!   definitions as the router.
//! - [`auth`]: bearer token to caller, as middleware (its 401 words are
//!   also `/mcp`'s), and the scope check of each route (the policy is `access::policy`).
//! - `routes::discovery`: the protected resource metadata (RFC 9728), when
//!   OAuth is on; [`openapi`] documents both kinds of bearer token and the
//!   scope each route needs, from the same policy.
//! - [`error`]: [`RestError`], the one enum of failures and its one status
//!   match; [`problem`]: the problem document and its kinds.
//! - `actions`: one file per write route, mirroring the kitchen's actions
//!   (`actions/add_comment.rs`: `POST /v1/tickets/{id}/comments`): its
//!   OpenAPI definition, the body it reads, the kitchen call, which answer
//!   its success is.
//! - `routes`: the reads, one module per resource (tickets, comments,
//!   history, operations), and the service's own routes (health, problems,
//!   discovery, telemetry: `/metrics` and `/v1/stats`); `routes::writes` is
//!   what every write shares (the attempt, the key, the one translation of
//!   an outcome), `routes::pages` how lists are paged.
//! - `idempotency_key`, `json_body`, `versions`: reading the key header,
//!   the body, and `If-Match` (and writing `ETag`).
//! - `schema`: the bodies as the OpenAPI document describes them, their
//!   limits taken from the kitchen's constants.
//! - `links`: every address the door hands out.
//! - `shared_responses`: the answers many operations share (`401`, `500`,
//!   a write's `413` and `415`), added to the OpenAPI document once.
//! - `vocabulary`: what each write is called in the door's words (its
//!   request, what a caller intends by it, each status's next step): the
//!   door's one per-action table of prose, a leaf.

use access::Authenticator;
use access_doc::BearerAuth;
use axum::Router;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header;
use kitchen::Kitchen;
use telemetry::Metrics;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

mod access_doc;
mod actions;
pub mod auth;
pub mod error;
mod idempotency_key;
mod json_body;
pub mod links;
pub mod problem;
mod routes;
mod schema;
mod shared_responses;
mod state;
mod versions;
mod vocabulary;

pub use error::RestError;
pub use idempotency_key::IDEMPOTENCY_KEY;
pub use problem::{PROBLEM_JSON, Problem, ProblemKind};
pub use routes::discovery::ResourceMetadata;
pub use routes::writes::{
    CONFIRM_NEW, IDEMPOTENCY_REPLAYABLE_UNTIL, IDEMPOTENT_REPLAYED, POSSIBLE_DUPLICATE_OF,
};
pub use state::DoorState;

/// Largest request body accepted, in bytes (64 KiB).
pub const BODY_LIMIT_BYTES: usize = 64 * 1024;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Retry-safe tickets",
        description = "A ticket service where a retried write never happens twice: a retried \
            create makes no second ticket, a retried change, move or comment is not applied again. \
            Every write carries an Idempotency-Key; a lost answer can be recovered with \
            GET /v1/operations/{action}/{key}. Ticket answers carry the version as an ETag, and \
            If-Match makes a change conditional on it. Errors are RFC 9457 problem documents.\n\n\
            A key's lifecycle: within its replay window (30 days by default) the same request \
            with the key replays the first answer byte for byte (`Idempotent-Replayed: true`). \
            After it, until the key's retained_until (400 days after first use by default), only \
            a tombstone is kept: the same request answers 200 with the resource as it is now \
            (`Idempotent-Replayed: expired`) and makes nothing new, and the status lookup \
            answers phase `expired`. After retained_until the key is forgotten and free again: \
            the status lookup answers 404 and a request with it is a new write. A different \
            request with a used key is refused (422) in both phases.\n\n\
            Every write answer that has an operation (created, replayed, expired, a reused key, \
            with a ticket provider also unknown and not created) carries \
            `Idempotency-Replayable-Until: <RFC 3339>`, the end of the replay window (for a \
            reused key: the original operation's). No header for this is registered; the IETF \
            httpapi idempotency draft discusses one in ietf-wg-httpapi/idempotency#35 \
            (\"Idempotency Key Validity and Expiry\", \
            https://github.com/ietf-wg-httpapi/idempotency/issues/35).",
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "tickets", description = "Create, read, change and move tickets, and read their history"),
        (name = "comments", description = "Comment on tickets and read the comments"),
        (name = "operations", description = "Find out what happened to a write"),
        (name = "health", description = "Liveness and readiness"),
        (name = "auth", description = "This server as an OAuth protected resource"),
        (name = "problems", description = "What each problem type means"),
    ),
)]
struct ApiDoc;

/// Routes that need a tenant.
fn v1_routes() -> OpenApiRouter<DoorState> {
    OpenApiRouter::new()
        .merge(actions::routes())
        .routes(routes!(routes::tickets::list))
        .routes(routes!(routes::tickets::get))
        .routes(routes!(routes::comments::list))
        .routes(routes!(routes::comments::get))
        .routes(routes!(routes::history::list))
        .routes(routes!(routes::operation_list::list))
        .routes(routes!(routes::operations::get))
        .routes(routes!(routes::telemetry::stats))
}

/// Routes anyone may call.
fn public_routes() -> OpenApiRouter<DoorState> {
    OpenApiRouter::new()
        .routes(routes!(routes::health::healthz))
        .routes(routes!(routes::health::readyz))
        .routes(routes!(routes::problems::describe))
        .routes(routes!(routes::telemetry::metrics))
        .routes(routes!(routes::discovery::metadata))
        .routes(routes!(routes::discovery::metadata_mcp))
}

/// The OpenAPI 3.1 document of every REST route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    shared_responses::with_shared_responses(access_doc::with_access_policy(
        OpenApiRouter::with_openapi(ApiDoc::openapi())
            .merge(public_routes())
            .merge(v1_routes())
            .into_openapi(),
    ))
}

/// The REST door over `kitchen`: `/v1/…` behind bearer authentication
/// (`access` turns tokens into callers) and the scope each route needs,
/// plus `/healthz`, `/readyz`, `/metrics`, `/problems/{slug}`,
/// `/openapi.json` and the protected resource metadata. Write attempts are
/// measured into `metrics`.
pub fn router(kitchen: Kitchen, metrics: Metrics, access: Authenticator) -> Router {
    // Layers run outside in: the tenant first, then its scopes.
    let scopes = auth::ScopeCheck::new(access.clone(), &openapi());
    let v1 = v1_routes()
        .route_layer(middleware::from_fn_with_state(scopes, auth::require_scope))
        .route_layer(middleware::from_fn_with_state(
            access.clone(),
            auth::require_tenant,
        ));
    let (router, openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(public_routes())
        .merge(v1)
        .split_for_parts();
    let openapi = std::sync::Arc::new(shared_responses::with_shared_responses(
        access_doc::with_access_policy(openapi),
    ));
    router
        .route(
            "/openapi.json",
            get(move || {
                let openapi = openapi.clone();
                async move { axum::Json(openapi.as_ref().clone()) }
            }),
        )
        .fallback(no_route)
        .method_not_allowed_fallback(|| async { problem_for(ProblemKind::METHOD_NOT_ALLOWED) })
        .with_state(DoorState {
            kitchen,
            metrics,
            access,
        })
}

/// Nothing here; on a server without OAuth, the addresses an OAuth client
/// guesses say to send a static token instead.
async fn no_route(
    axum::extract::State(access): axum::extract::State<Authenticator>,
    uri: http::Uri,
) -> RestError {
    if access.oauth().is_none() && routes::discovery::GUESSED_OAUTH_PATHS.contains(&uri.path()) {
        RestError::OAuthNotOffered
    } else {
        RestError::NoRoute
    }
}

fn problem_for(kind: ProblemKind) -> Response {
    Problem::new(kind, kind.description).into_response()
}

/// Longest plain-text error body kept as a problem's `detail`.
const BARE_DETAIL_LIMIT: usize = 4096;

/// Turns an error answer that has no problem body (made by a tower layer:
/// a body-limit `413`, a timeout; or by an axum extractor: a path or query
/// that does not parse) into a problem document, so that every error a
/// REST client sees has the same envelope. The original words stay in
/// `detail` where they say more than the kind (a `400` from an extractor
/// names the parameter), and the original headers stay (`Allow` on a
/// `405`). Use with [`axum::middleware::map_response`] on the REST routes
/// only: `/mcp` answers in JSON-RPC.
pub async fn problem_for_bare_errors<B>(response: http::Response<B>) -> Response
where
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    let response = response.map(axum::body::Body::new);
    let status = response.status();
    let bare = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_none_or(|ct| ct.as_bytes().starts_with(b"text/plain"));
    if !(status.is_client_error() || status.is_server_error()) || !bare {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let said = axum::body::to_bytes(body, BARE_DETAIL_LIMIT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let kind = ProblemKind::for_status(status);
    let mut answer = if kind == ProblemKind::INTERNAL {
        // Same words and the same log line as every other 500.
        RestError::Internal(format!("a layer answered {status} without a cause: {said:?}").into())
            .into_response()
    } else {
        let detail = if kind == ProblemKind::BAD_REQUEST && !said.is_empty() {
            format!("{said}. Nothing was created and no Idempotency-Key was used up.")
        } else {
            kind.description.to_owned()
        };
        let mut problem = Problem::new(kind, detail);
        problem.status = status.as_u16();
        problem.into_response()
    };
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    answer.headers_mut().extend(parts.headers);
    answer
}

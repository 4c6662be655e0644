//! Problem details (RFC 9457): the one envelope of every error answer.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use utoipa::ToSchema;

/// Media type of every error body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A kind of problem: a stable `type` URI, a title, and what it means.
/// The table of kinds is [`ProblemKind::ALL`]; `GET /problems/{slug}`
/// serves each description, so a `type` URI always dereferences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProblemKind {
    /// Last segment of the `type` URI.
    pub slug: &'static str,
    /// Short, stable summary.
    pub title: &'static str,
    /// HTTP status.
    pub status: StatusCode,
    /// What it means and what to do, for the documentation page.
    pub description: &'static str,
}

macro_rules! kinds {
    ($($name:ident = $slug:literal, $status:ident, $title:literal, $description:literal;)*) => {
        impl ProblemKind {
            $(
                #[doc = $title]
                pub const $name: ProblemKind = ProblemKind {
                    slug: $slug,
                    title: $title,
                    status: StatusCode::$status,
                    description: $description,
                };
            )*
            /// Every kind, for documentation and the OpenAPI document.
            pub const ALL: &'static [ProblemKind] = &[$(Self::$name),*];
        }
    };
}

kinds! {
    UNAUTHORIZED = "unauthorized", UNAUTHORIZED, "Missing or invalid bearer token",
        "Send `Authorization: Bearer <token>` with a static API token issued by `tickets token issue`, or, where the server names an identity provider (`WWW-Authenticate: Bearer resource_metadata=...`), an access token from it for this server's audience. `detail` says why a token was refused.";
    INSUFFICIENT_SCOPE = "insufficient-scope", FORBIDDEN, "The token lacks a scope this request needs",
        "Reads need `tickets:read`, writes `tickets:write`. `WWW-Authenticate: Bearer error=\"insufficient_scope\", scope=...` names the missing scope: get a token that carries it (an API token's scopes are chosen at issue, `tickets token issue <tenant> --scope ...`). Nothing was done and no Idempotency-Key was used.";
    AUTH_UNAVAILABLE = "auth-unavailable", SERVICE_UNAVAILABLE, "The identity provider could not be reached",
        "The signing keys of the identity provider that issued the token could not be fetched in time, so the token can be neither accepted nor refused. Nothing was done and no Idempotency-Key was used: retry after Retry-After seconds.";
    IDEMPOTENCY_KEY_MISSING = "idempotency-key-missing", BAD_REQUEST, "Idempotency-Key header is required",
        "Every write needs an `Idempotency-Key` header naming the intended effect (a ticket to create, an edit, a move, a comment): a fresh UUID per new effect, reused unchanged on every retry.";
    IDEMPOTENCY_KEY_MALFORMED = "idempotency-key-malformed", BAD_REQUEST, "Idempotency-Key header is malformed",
        "The key must be 8 to 255 printable ASCII characters without spaces, sent bare or as an RFC 8941 quoted string. A UUID is a good key.";
    IDEMPOTENCY_KEY_REUSED = "idempotency-key-reused", UNPROCESSABLE_ENTITY, "Idempotency-Key was used for a different request",
        "The key already names another request, so nothing was written by this one. If you meant the same effect, it happened: `original_resource` is its ticket and `original_operation` its status resource. Only a genuinely different effect takes a new key.";
    OPERATION_IN_PROGRESS = "operation-in-progress", CONFLICT, "An earlier attempt with this key is still running",
        "Nothing was written by this attempt. Retry the same request with the same key after Retry-After seconds.";
    VALIDATION_FAILED = "validation-failed", BAD_REQUEST, "The request is not valid",
        "`errors` lists each field and why. Nothing was written and the key was not used: correct the input and send it again, with the same key if you like.";
    MALFORMED_JSON = "malformed-json", BAD_REQUEST, "The body is not valid JSON",
        "Send a JSON object. Nothing was written and the key was not used.";
    INVALID_BODY = "invalid-body", BAD_REQUEST, "The body does not have the expected shape",
        "The JSON parsed but is not an object, or a field has the wrong type or is unknown (detail names it). Nothing was written and the key was not used.";
    UNSUPPORTED_MEDIA_TYPE = "unsupported-media-type", UNSUPPORTED_MEDIA_TYPE, "Body must be application/json",
        "Send the body with `Content-Type: application/json` (a PATCH may also use `application/merge-patch+json`). Nothing was written and the key was not used.";
    PAYLOAD_TOO_LARGE = "payload-too-large", PAYLOAD_TOO_LARGE, "The body is too large",
        "Bodies are limited to 64 KiB. Nothing was written and the key was not used.";
    UNSUPPORTED_CONTENT_ENCODING = "unsupported-content-encoding", UNSUPPORTED_MEDIA_TYPE, "Content-Encoding not supported",
        "Send the body uncompressed, or gzip-compressed with `Content-Encoding: gzip`. Nothing was written and the key was not used.";
    BAD_REQUEST = "bad-request", BAD_REQUEST, "The request could not be understood",
        "A path segment, query parameter or header (such as If-Match) is not valid, or the body could not be read; detail says which. Nothing was written and the key was not used.";
    VERSION_MISMATCH = "version-mismatch", PRECONDITION_FAILED, "The ticket is not at the version you expected",
        "If-Match named a version the ticket is no longer at: someone changed it since you read it. `expected_version` is what you sent, `current_version` what it is now. Nothing was written and the key was not used: GET the ticket, decide again on what it says now, and send the change with its new ETag.";
    TRANSITION_NOT_ALLOWED = "transition-not-allowed", CONFLICT, "The ticket cannot move to that status",
        "The status machine does not allow this move from where the ticket is (staying put is not a move). `from` is its status, `to` where you asked to go, `allowed_moves` where it may go from here. Nothing was written and the key was not used; waiting does not help, so there is no Retry-After.";
    LABEL_LIMIT_REACHED = "label-limit-reached", CONFLICT, "The ticket carries as many labels as it may",
        "A ticket carries at most 20 labels, and this one has 20. Nothing was written and the key was not used: remove a label first, then add this one again (with the same key if you like).";
    TICKET_NOT_AT_PROVIDER = "ticket-not-at-provider", CONFLICT, "The ticket has no copy at the ticket provider",
        "This deployment keeps its tickets in an external provider, and this ticket was made before it did: it exists only in this service's own database, so a change to it has nowhere to go. Nothing was written and the key was not used.";
    POSSIBLE_DUPLICATE = "possible-duplicate", CONFLICT, "This looks like a retry under a new key",
        "A write with the same content was made under another Idempotency-Key minutes ago (`original_operation` is its status resource, `original_resource` what it made, `original_created_at` when), and this deployment asks callers to confirm a second one. Nothing was written and the key was not used. If this is a retry, the write already happened: retry with its key, or read `original_operation`. If you mean a second one, send the request again with `\"confirm_new\": true` in the body or the header `Confirm-New: true`.";
    NOT_SUPPORTED_BY_PROVIDER = "not-supported-by-provider", CONFLICT, "The ticket provider cannot do this write",
        "This deployment keeps its tickets in an external provider, and the write asked for (detail names it) has no counterpart there. Nothing was read or written and the key was not used; waiting or retrying will not change this.";
    PROVIDER_REJECTED = "provider-rejected", UNPROCESSABLE_ENTITY, "The ticket provider refused the write",
        "The system that keeps the tickets refused this write on its merits (its words are in detail: an invalid field, a ticket it does not have, another version, a move its workflow forbids). Nothing was written and the key was not used up: correct the request, or read the ticket again, and send it again, with the same key if you like.";
    PROVIDER_UNAVAILABLE = "provider-unavailable", SERVICE_UNAVAILABLE, "The ticket provider could not be reached",
        "The system that keeps the tickets could not be reached, so nothing was sent and nothing was written. The key was not used up: retry the same request with the same key after Retry-After seconds.";
    NOT_FOUND = "not-found", NOT_FOUND, "Not found",
        "Nothing exists at this address for your tenant. A write to a ticket your tenant does not have wrote nothing and left its key unused.";
    OPERATION_NOT_FOUND = "operation-not-found", NOT_FOUND, "Nothing was recorded for this key",
        "No attempt with this key was recorded for your tenant (or it was used more than the tombstone horizon ago: keys are remembered until their retained_until): a retry with the same key is safe.";
    METHOD_NOT_ALLOWED = "method-not-allowed", METHOD_NOT_ALLOWED, "Method not allowed",
        "This address does not accept this method; see /openapi.json.";
    BODY_TIMEOUT = "body-timeout", REQUEST_TIMEOUT, "The request body did not arrive in time",
        "The body did not arrive within the server's request timeout, so no handler ran and nothing was done; the key was not used. Send the whole request again, with the same key.";
    TIMEOUT = "timeout", SERVICE_UNAVAILABLE, "The request took too long",
        "The server stopped waiting. A write may or may not have happened: retry with the same Idempotency-Key, or look the operation up by key.";
    DATABASE_UNAVAILABLE = "database-unavailable", SERVICE_UNAVAILABLE, "The database is unavailable",
        "The service's database cannot be used right now: it is not reachable (down, restarting, or every connection was busy), it cannot store anything (a full disk, a read-only server), or another program holds its file locked. None of it is the request's fault and it passes without a restart. detail says whether anything was written: usually nothing, and the Idempotency-Key was not used up. Retry the same request, with the same key, after Retry-After seconds.";
    NOT_READY = "not-ready", SERVICE_UNAVAILABLE, "The database is not reachable",
        "The service is up but cannot reach its database. Retry later.";
    INTERNAL = "internal", INTERNAL_SERVER_ERROR, "Internal error",
        "Something failed on our side; it is logged. A write may or may not have happened: retry with the same Idempotency-Key, or look the operation up by key.";
}

impl ProblemKind {
    /// The `type` URI, relative to the service.
    pub fn type_uri(&self) -> String {
        format!("/problems/{}", self.slug)
    }

    /// The kind with this slug.
    pub fn by_slug(slug: &str) -> Option<ProblemKind> {
        Self::ALL.iter().copied().find(|k| k.slug == slug)
    }

    /// The kind a bare status code (one that reached the client without a
    /// problem body, e.g. from a tower layer or an axum extractor) stands
    /// for. `invalid-body` is never guessed: only the body parser says it.
    pub fn for_status(status: StatusCode) -> ProblemKind {
        match status {
            StatusCode::NOT_FOUND => Self::NOT_FOUND,
            StatusCode::METHOD_NOT_ALLOWED => Self::METHOD_NOT_ALLOWED,
            StatusCode::PAYLOAD_TOO_LARGE => Self::PAYLOAD_TOO_LARGE,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UNSUPPORTED_MEDIA_TYPE,
            StatusCode::REQUEST_TIMEOUT => Self::BODY_TIMEOUT,
            StatusCode::SERVICE_UNAVAILABLE => Self::TIMEOUT,
            s if s.is_client_error() => Self::BAD_REQUEST,
            _ => Self::INTERNAL,
        }
    }
}

/// One field's problem, inside a `validation-failed` problem.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FieldError {
    /// The field, as the request named it.
    pub field: String,
    /// Stable machine-readable reason, e.g. `too_long`.
    pub code: String,
    /// What is wrong and what a valid value looks like.
    pub message: String,
}

/// The error body: RFC 9457 members plus this service's extensions.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// Stable URI of the kind of problem; `GET` it for its description.
    #[serde(rename = "type")]
    #[schema(schema_with = problem_types)]
    pub type_uri: String,
    /// Short summary of the kind.
    pub title: String,
    /// HTTP status code.
    pub status: u16,
    /// What happened here and what to do next.
    pub detail: String,
    /// For `validation-failed`: every field and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// For `idempotency-key-reused`: the original operation's status
    /// resource (never its payload). For `possible-duplicate`: the status
    /// resource of the earlier write with the same content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_operation: Option<String>,
    /// For `idempotency-key-reused`: when the key was first used (RFC 3339).
    /// For `possible-duplicate`: when the earlier write was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_created_at: Option<String>,
    /// For `idempotency-key-reused`: the ticket the key's first use made,
    /// once there is one. A caller that lost that first answer and retried
    /// with a reworded body finds its ticket here instead of making another.
    /// For `possible-duplicate`: what the earlier write made (its ticket, or
    /// its comment), once it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_resource: Option<String>,
    /// For `version-mismatch`: the version `If-Match` named.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub expected_version: Option<i64>,
    /// For `version-mismatch`: the ticket's version now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub current_version: Option<i64>,
    /// For `transition-not-allowed`: the ticket's status now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::schema::status_schema)]
    pub from: Option<&'static str>,
    /// For `transition-not-allowed`: the status asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::schema::status_schema)]
    pub to: Option<&'static str>,
    /// For `transition-not-allowed`: where the ticket may move from its
    /// status now (never empty: every status has a way out).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::schema::statuses_schema)]
    pub allowed_moves: Option<Vec<&'static str>>,
}

/// The `type` member's schema: one of the documented problem types.
fn problem_types() -> impl Into<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>> {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    let described = ProblemKind::ALL
        .iter()
        .map(|k| format!("`{}` ({}): {}", k.type_uri(), k.status.as_u16(), k.title))
        .collect::<Vec<_>>()
        .join("; ");
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .enum_values(Some(ProblemKind::ALL.iter().map(ProblemKind::type_uri)))
        .description(Some(format!(
            "Stable URI of the kind of problem; GET it for its description. {described}."
        )))
}

impl Problem {
    /// A problem of `kind` with `detail`.
    pub fn new(kind: ProblemKind, detail: impl Into<String>) -> Self {
        Self {
            type_uri: kind.type_uri(),
            title: kind.title.to_owned(),
            status: kind.status.as_u16(),
            detail: detail.into(),
            errors: None,
            original_operation: None,
            original_created_at: None,
            original_resource: None,
            expected_version: None,
            current_version: None,
            from: None,
            to: None,
            allowed_moves: None,
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self).unwrap_or_default();
        (
            status,
            [(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON))],
            body,
        )
            .into_response()
    }
}

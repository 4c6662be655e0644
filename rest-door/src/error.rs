//! [`RestError`]: every way a REST request fails, and its one translation
//! into a status code and a problem kind ([`RestError::kind`]);
//! `error/response.rs` writes it as a problem document with its headers.

use std::time::Duration;

use kitchen::{
    Action, EarlierWrite, FieldViolation, KitchenError, OperationRef, Refusal, Scopes,
    StorageFault, TicketId, TicketStatus, Version, Written,
};
use kitchen::{error_chain, whole_seconds};
use telemetry::ContractFailure;

use crate::links;
use crate::problem::ProblemKind;
use crate::vocabulary::{nothing_done, words};

mod response;

/// A failed REST request: either the caller's to fix, or ours (logged in
/// full, answered opaquely).
#[derive(Debug)]
pub enum RestError {
    /// No `Authorization: Bearer` header.
    MissingCredentials {
        /// The `WWW-Authenticate` value.
        challenge: String,
        /// Where the protected resource metadata is, with OAuth on.
        metadata: Option<String>,
    },
    /// A bearer token that is not accepted: unknown or revoked, or an
    /// access token that failed verification or names no tenant here.
    InvalidToken {
        /// Why, in words safe to show.
        why: String,
        /// The `WWW-Authenticate` value.
        challenge: String,
    },
    /// A valid token without a scope this request needs.
    InsufficientScope {
        /// The scopes needed that the token lacks.
        needed: Scopes,
        /// The token's scopes.
        has: Scopes,
        /// The `WWW-Authenticate` value.
        challenge: String,
    },
    /// An identity provider's keys could not be fetched: the token can be
    /// neither accepted nor refused now.
    AuthUnavailable {
        /// What failed.
        why: String,
        /// When to try again.
        retry_after: Duration,
    },
    /// An OAuth endpoint a client guessed (the protected resource metadata,
    /// an authorization server's), on a server that does not use OAuth.
    OAuthNotOffered,
    /// A write without `Idempotency-Key`; the write it was.
    MissingIdempotencyKey(Action),
    /// An `Idempotency-Key` that is not a valid key: the whole detail, why
    /// and what was not done.
    MalformedIdempotencyKey(String),
    /// The key was used for a different request.
    KeyReused(OperationRef),
    /// Another attempt holds the key.
    InProgress {
        /// The write attempted.
        action: Action,
        /// How long to wait, as the kitchen decided.
        retry_after: Duration,
    },
    /// Field-level validation failed.
    Validation(Vec<FieldViolation>),
    /// `If-Match` named another version than the ticket's.
    VersionMismatch {
        /// The version `If-Match` named.
        expected: Version,
        /// The ticket's version now.
        current: Version,
    },
    /// The status machine does not allow this move.
    TransitionNotAllowed {
        /// The ticket's status now.
        from: TicketStatus,
        /// The status asked for.
        to: TicketStatus,
        /// Where it may go from `from`.
        allowed: &'static [TicketStatus],
    },
    /// The ticket carries as many labels as a ticket may.
    LabelLimitReached {
        /// The ticket.
        ticket: TicketId,
        /// How many a ticket may carry.
        limit: usize,
    },
    /// The ticket has no copy at the provider this deployment keeps its
    /// tickets in (it was made before): a change has nowhere to go.
    NotAtProvider(TicketId),
    /// This deployment keeps its tickets in a provider that has no
    /// counterpart for the write.
    NotSupportedByProvider(Action),
    /// The likely-duplicate guard (`confirm`) refused a create or a comment
    /// whose content matches a recent one under another key.
    PossibleDuplicate(EarlierWrite),
    /// The ticket provider refused the write; its words.
    ProviderRejected {
        /// The write refused.
        action: Action,
        /// The provider's words.
        why: String,
    },
    /// The ticket provider could not be reached.
    ProviderUnavailable {
        /// The write that was not sent.
        action: Action,
        /// What happened.
        why: String,
        /// How long to wait, as the kitchen decided.
        retry_after: Duration,
    },
    /// The body is not JSON.
    MalformedJson {
        /// The parser's words.
        why: String,
        /// The write refused.
        action: Action,
    },
    /// The body is JSON of the wrong shape.
    InvalidBody {
        /// The parser's words (they name the field).
        why: String,
        /// The write refused.
        action: Action,
    },
    /// The body is not of a JSON media type this write takes.
    UnsupportedMediaType(Action),
    /// The body is over the limit.
    PayloadTooLarge(Action),
    /// The body is compressed in a way the server cannot decode; says how.
    UnsupportedContentEncoding(String),
    /// A path segment, query parameter or header is not valid, or the body
    /// could not be read; says which, in the words of what refused it.
    BadRequest(String),
    /// Nothing at this address for this tenant; says what was looked for.
    /// In a write, that is always its ticket.
    NotFound(String),
    /// No route has this path.
    NoRoute,
    /// Nothing recorded for this operation key of this action.
    OperationNotFound(Action),
    /// The request body did not arrive within the request timeout (a
    /// client that trickled it): no handler ran, nothing was done.
    BodyTimeout(Duration),
    /// The database cannot be used right now (a storage fault): retry
    /// later, with the same key.
    DatabaseUnavailable {
        /// Which fault.
        fault: StorageFault,
        /// Whether anything of the request was written.
        written: Written,
    },
    /// Readiness: the database does not answer, or cannot store anything
    /// while writes are failing; which.
    NotReady(StorageFault),
    /// Anything else: a bug or an infrastructure failure.
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

impl From<KitchenError> for RestError {
    fn from(e: KitchenError) -> Self {
        match e.storage_fault() {
            Some((fault, written)) => {
                // Expected now and then, and passing: a warning, with the
                // database's words (the caller gets the fault's).
                tracing::warn!(error = %error_chain(&e), %fault, "the database is unavailable");
                Self::DatabaseUnavailable { fault, written }
            }
            None => Self::Internal(Box::new(e)),
        }
    }
}

impl RestError {
    /// A ticket the tenant does not have, read or written: the same answer
    /// either way, so that it reveals nothing (another tenant's ticket
    /// included).
    pub(crate) fn ticket_not_found(shown: impl std::fmt::Display) -> Self {
        Self::NotFound(format!("Ticket {:?}", bounded(&shown.to_string())))
    }

    /// A write the kitchen refused: the ticket it names does not allow it
    /// now. Nothing was written and the key is unused.
    pub(crate) fn refused(refusal: Refusal) -> Self {
        match refusal {
            Refusal::TicketNotFound { ticket_id } => Self::ticket_not_found(ticket_id),
            Refusal::VersionMismatch { expected, current } => {
                Self::VersionMismatch { expected, current }
            }
            Refusal::TransitionNotAllowed { from, to, allowed } => {
                Self::TransitionNotAllowed { from, to, allowed }
            }
            Refusal::LabelLimitReached { ticket_id, limit } => Self::LabelLimitReached {
                ticket: ticket_id,
                limit,
            },
            Refusal::NotAtProvider { ticket_id } => Self::NotAtProvider(ticket_id),
            Refusal::NotSupportedByProvider { action } => Self::NotSupportedByProvider(action),
            Refusal::PossibleDuplicate { of } => Self::PossibleDuplicate(of),
        }
    }

    /// The kind of problem; the one place that decides status codes.
    pub fn kind(&self) -> ProblemKind {
        match self {
            Self::MissingCredentials { .. } | Self::InvalidToken { .. } => {
                ProblemKind::UNAUTHORIZED
            }
            Self::InsufficientScope { .. } => ProblemKind::INSUFFICIENT_SCOPE,
            Self::AuthUnavailable { .. } => ProblemKind::AUTH_UNAVAILABLE,
            Self::OAuthNotOffered => ProblemKind::NOT_FOUND,
            Self::MissingIdempotencyKey(_) => ProblemKind::IDEMPOTENCY_KEY_MISSING,
            Self::MalformedIdempotencyKey(_) => ProblemKind::IDEMPOTENCY_KEY_MALFORMED,
            Self::KeyReused(_) => ProblemKind::IDEMPOTENCY_KEY_REUSED,
            Self::InProgress { .. } => ProblemKind::OPERATION_IN_PROGRESS,
            Self::Validation(_) => ProblemKind::VALIDATION_FAILED,
            Self::VersionMismatch { .. } => ProblemKind::VERSION_MISMATCH,
            Self::TransitionNotAllowed { .. } => ProblemKind::TRANSITION_NOT_ALLOWED,
            Self::LabelLimitReached { .. } => ProblemKind::LABEL_LIMIT_REACHED,
            Self::NotAtProvider(_) => ProblemKind::TICKET_NOT_AT_PROVIDER,
            Self::NotSupportedByProvider(_) => ProblemKind::NOT_SUPPORTED_BY_PROVIDER,
            Self::PossibleDuplicate(_) => ProblemKind::POSSIBLE_DUPLICATE,
            Self::ProviderRejected { .. } => ProblemKind::PROVIDER_REJECTED,
            Self::ProviderUnavailable { .. } => ProblemKind::PROVIDER_UNAVAILABLE,
            Self::MalformedJson { .. } => ProblemKind::MALFORMED_JSON,
            Self::InvalidBody { .. } => ProblemKind::INVALID_BODY,
            Self::UnsupportedMediaType(_) => ProblemKind::UNSUPPORTED_MEDIA_TYPE,
            Self::PayloadTooLarge(_) => ProblemKind::PAYLOAD_TOO_LARGE,
            Self::UnsupportedContentEncoding(_) => ProblemKind::UNSUPPORTED_CONTENT_ENCODING,
            Self::BadRequest(_) => ProblemKind::BAD_REQUEST,
            Self::NotFound(_) | Self::NoRoute => ProblemKind::NOT_FOUND,
            Self::OperationNotFound(_) => ProblemKind::OPERATION_NOT_FOUND,
            Self::DatabaseUnavailable { .. } => ProblemKind::DATABASE_UNAVAILABLE,
            Self::BodyTimeout(_) => ProblemKind::BODY_TIMEOUT,
            Self::NotReady(_) => ProblemKind::NOT_READY,
            Self::Internal(_) => ProblemKind::INTERNAL,
        }
    }

    /// How a write attempt that failed this way is counted: its outcome
    /// and, when the caller has something to fix, what.
    pub fn outcome(&self) -> (&'static str, Option<ContractFailure>) {
        match self {
            Self::MissingIdempotencyKey(_) => {
                ("invalid", Some(ContractFailure::IdempotencyKeyMissing))
            }
            Self::MalformedIdempotencyKey(_) => {
                ("invalid", Some(ContractFailure::IdempotencyKeyMalformed))
            }
            Self::KeyReused(_) => ("conflict", Some(ContractFailure::IdempotencyKeyReused)),
            Self::InProgress { .. } => ("in_progress", None),
            Self::VersionMismatch { .. } => ("refused", Some(ContractFailure::VersionMismatch)),
            Self::TransitionNotAllowed { .. } => {
                ("refused", Some(ContractFailure::TransitionNotAllowed))
            }
            Self::LabelLimitReached { .. } => ("refused", Some(ContractFailure::LabelLimitReached)),
            Self::NotAtProvider(_) => ("refused", Some(ContractFailure::TicketNotAtProvider)),
            Self::NotSupportedByProvider(_) => {
                ("refused", Some(ContractFailure::NotSupportedByProvider))
            }
            Self::PossibleDuplicate(_) => (
                "possible_duplicate",
                Some(ContractFailure::PossibleDuplicate),
            ),
            // In a write, the only thing that can be missing is its ticket.
            Self::NotFound(_) => ("refused", Some(ContractFailure::TicketNotFound)),
            Self::ProviderRejected { .. } | Self::ProviderUnavailable { .. } => {
                ("not_created", None)
            }
            Self::Validation(_)
            | Self::MalformedJson { .. }
            | Self::InvalidBody { .. }
            | Self::UnsupportedMediaType(_)
            | Self::PayloadTooLarge(_)
            | Self::UnsupportedContentEncoding(_)
            | Self::BadRequest(_)
            | Self::BodyTimeout(_) => ("invalid", Some(ContractFailure::ValidationFailed)),
            Self::MissingCredentials { .. } | Self::InvalidToken { .. } => {
                ("invalid", Some(ContractFailure::Unauthenticated))
            }
            Self::InsufficientScope { .. } => ("invalid", Some(ContractFailure::InsufficientScope)),
            Self::NoRoute
            | Self::OAuthNotOffered
            | Self::OperationNotFound(_)
            | Self::NotReady(_)
            | Self::DatabaseUnavailable { .. }
            | Self::AuthUnavailable { .. }
            | Self::Internal(_) => ("error", None),
        }
    }

    /// What went wrong and what to do, in words: the problem's `detail`
    /// (also what `/mcp` says in its JSON-RPC answers).
    pub fn detail(&self) -> String {
        match self {
            Self::MissingCredentials { metadata: None, .. } => {
                format!("This endpoint needs `Authorization: Bearer <token>`. {NO_OAUTH}")
            }
            Self::MissingCredentials {
                metadata: Some(url),
                ..
            } => format!(
                "This endpoint needs `Authorization: Bearer <token>`: an access token from the \
                 identity provider named in this server's resource metadata ({url}; MCP clients \
                 that follow the MCP authorization spec sign in on their own), or a static API \
                 token from `tickets token issue <tenant>`."
            ),
            Self::InvalidToken { why, .. } if why == access::UNKNOWN_TOKEN => {
                "The bearer token is unknown or revoked.".into()
            }
            Self::InvalidToken { why, .. } => format!(
                "The bearer token was not accepted: {why}. Nothing was done; sign in again or \
                 send another token."
            ),
            Self::InsufficientScope { needed, has, .. } => format!(
                "This request needs the scope {needed}, which the token does not carry (it has \
                 {}). Nothing was done. An API token's scopes are chosen when it is issued \
                 (`tickets token issue <tenant> --scope {needed}`); from an identity provider, \
                 get a token that includes {needed} (MCP clients ask for it on their own).",
                if has.is_empty() {
                    "none of this service's scopes".to_owned()
                } else {
                    has.to_string()
                }
            ),
            Self::AuthUnavailable { why, retry_after } => {
                access::Refusal::unavailable_detail(why, *retry_after)
            }
            Self::OAuthNotOffered => NO_OAUTH.into(),
            Self::MissingIdempotencyKey(action) => {
                let w = words(*action);
                format!(
                    "{} needs an Idempotency-Key header naming the {} you intend, for example \
                     `Idempotency-Key: {EXAMPLE_KEY}`. Make a fresh UUID for each new {} and send \
                     the same key again when you retry. {}.",
                    w.request, w.intent, w.intent, w.nothing
                )
            }
            Self::MalformedIdempotencyKey(detail) => detail.clone(),
            Self::KeyReused(original) => {
                let w = words(original.action);
                let (did, not_yet) = w.did;
                let made = original.resource.map_or_else(
                    || not_yet.to_owned(),
                    |id| format!("{did}{}", links::ticket(id)),
                );
                format!(
                    "Idempotency-Key {:?} was first used at {} for a different request, which {made}. \
                     {} by this request. If you meant the same {}, do not send it again: GET {} to \
                     see it. Only for a genuinely different {} use a new key.",
                    original.key.as_str(),
                    links::rfc3339(original.created_at),
                    w.nothing,
                    w.intent,
                    links::operation(original.action, &original.key),
                    w.intent,
                )
            }
            Self::InProgress {
                action,
                retry_after,
            } => format!(
                "Another attempt with this Idempotency-Key is still running. {} by this one. \
                 Retry the same request with the same key in {} s.",
                words(*action).nothing,
                whole_seconds(*retry_after)
            ),
            Self::Validation(v) => format!(
                "{} field(s) are not valid; see errors. Nothing was changed and no Idempotency-Key \
                 was used up: correct the input and send it again.",
                v.len()
            ),
            Self::VersionMismatch { expected, current } => format!(
                "If-Match expected version {expected}, but the ticket is at version {current}: \
                 someone changed it since you read it. Nothing was changed and the \
                 Idempotency-Key was not used up. GET the ticket to see it as it is now, decide \
                 again, and send your change with `If-Match: \"{current}\"` if it still applies."
            ),
            Self::TransitionNotAllowed { from, to, allowed } => format!(
                "A ticket that is {} cannot move to {}; from {} it may move to {}. Nothing was \
                 changed and the Idempotency-Key was not used up: send a move that is allowed \
                 (with the same key if you like). Waiting will not change this.",
                from.as_str(),
                to.as_str(),
                from.as_str(),
                allowed
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            Self::LabelLimitReached { ticket, limit } => format!(
                "Ticket {ticket} already carries {limit} labels, as many as a ticket may. \
                 Nothing was changed and the Idempotency-Key was not used up: remove a label \
                 first (DELETE /v1/tickets/{ticket}/labels/{{label}}), then add this one again."
            ),
            Self::NotAtProvider(ticket) => format!(
                "Ticket {ticket} was made before this deployment kept its tickets in an external \
                 provider: it exists only in this service's own database, so a change to it has \
                 nowhere to go. Nothing was written and the Idempotency-Key was not used up."
            ),
            Self::NotSupportedByProvider(action) => format!(
                "This deployment keeps its tickets in an external provider, which has nothing \
                 like {action}: the service cannot do it here. Nothing was written and the \
                 Idempotency-Key was not used up; waiting or retrying will not change this."
            ),
            Self::PossibleDuplicate(earlier) => {
                let w = words(earlier.action);
                format!(
                    "A {} with the same content was made under Idempotency-Key {:?} at {} \
                     (`original_operation`, `original_resource`). {} and this key was not used. \
                     If this request is a retry of that one, it already happened: use that key, \
                     or GET `original_operation`. If you mean a second one, send this request \
                     again with `\"confirm_new\": true` in the body (or the header \
                     `Confirm-New: true`).",
                    w.intent,
                    bounded(earlier.key.as_str()),
                    links::rfc3339(earlier.created_at),
                    w.nothing
                )
            }
            Self::ProviderRejected { action, why } => {
                let w = words(*action);
                let (intent, nothing) = (w.intent, w.nothing);
                let fix = if w.makes_its_ticket {
                    "correct the request"
                } else {
                    "correct the request (or GET the ticket and decide again)"
                };
                format!(
                    "The ticket provider refused the {intent}: {why}. {nothing} and the \
                     Idempotency-Key was not used up: {fix} and send it again."
                )
            }
            Self::ProviderUnavailable {
                action,
                why,
                retry_after,
            } => format!(
                "{why} {} and the Idempotency-Key was not used up: retry the same request with \
                 the same key in {} s.",
                words(*action).nothing,
                whole_seconds(*retry_after)
            ),
            Self::MalformedJson { why, action } => {
                format!(
                    "The body is not valid JSON: {why}. {}",
                    nothing_done(*action)
                )
            }
            Self::InvalidBody { why, action } => {
                format!(
                    "The body has the wrong shape: {why}. {}",
                    nothing_done(*action)
                )
            }
            Self::UnsupportedMediaType(action) => {
                format!("{} {}", words(*action).media_type, nothing_done(*action))
            }
            Self::PayloadTooLarge(action) => format!(
                "The body is larger than {} KiB. {}",
                crate::BODY_LIMIT_BYTES / 1024,
                nothing_done(*action)
            ),
            Self::UnsupportedContentEncoding(why) | Self::BadRequest(why) => why.clone(),
            Self::NotFound(what) => format!("{what} was not found."),
            Self::NoRoute => {
                "Nothing is served at this address; /openapi.json lists every route.".into()
            }
            Self::OperationNotFound(action) => format!(
                "Nothing was recorded for this Idempotency-Key: the {} did not happen (or it was \
                 used more than the tombstone horizon ago: keys are remembered until their \
                 retained_until). A retry with the same key is safe.",
                words(*action).noun
            ),
            Self::BodyTimeout(after) => format!(
                "The request body did not arrive within {} s, so nothing was done and no \
                 Idempotency-Key was used up: send the whole request again (with the same key).",
                whole_seconds(*after)
            ),
            Self::DatabaseUnavailable { fault, written } => {
                let wait = whole_seconds(fault.retry_after());
                match written {
                    Written::Nothing => format!(
                        "{} Nothing was written and no Idempotency-Key was used up: retry the \
                         same request (with the same key, for a write) in {wait} s.",
                        fault.sentence()
                    ),
                    Written::Unknown => format!(
                        "{} A write may or may not have happened: retry the same request with \
                         the same Idempotency-Key in {wait} s (it is made at most once), or GET \
                         the operation by key.",
                        fault.sentence()
                    ),
                }
            }
            Self::NotReady(fault) => format!("{} Not ready; ask again shortly.", fault.sentence()),
            Self::Internal(_) => {
                "Something failed on our side and was logged. A write may or may not have \
                 happened: retry with the same Idempotency-Key, or GET the operation by key."
                    .into()
            }
        }
    }
}

/// What to do on a server without an identity provider, in messages.
const NO_OAUTH: &str = "This server signs nobody in with OAuth (no identity provider is \
     configured), so an MCP client's sign-in cannot succeed here: get a static API token with \
     `tickets token issue <tenant>` and send it as `Authorization: Bearer <token>` (in an MCP \
     client, set that header in its configuration for this server).";

/// Longest piece of a caller's input an answer echoes, in characters: a
/// ticket id is 36, and a 60 KiB "id" need not come back whole.
const MAX_ECHO_CHARS: usize = 80;

/// `text`, cut to [`MAX_ECHO_CHARS`] with how much was left out.
fn bounded(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_ECHO_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(MAX_ECHO_CHARS).collect();
    format!("{kept}… ({} more characters)", total - MAX_ECHO_CHARS)
}

/// What a good key looks like, in messages.
pub(crate) const EXAMPLE_KEY: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79";

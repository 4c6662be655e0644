//! `GET /v1/operations/{action}/{key}`: how a caller who lost an answer
//! finds out what happened.

use axum::Extension;
use axum::extract::{Path, State};
use kitchen::{
    Action, Caller, Comment, EffectAttempt, KeyPhase, Kitchen, MAX_KEY_LEN, MIN_KEY_LEN,
    OperationKey, OperationState, Settlement,
};
use serde::{Deserialize, Serialize};
use utoipa::openapi::path::{Parameter, ParameterIn};
use utoipa::{IntoParams, ToSchema};

use crate::error::RestError;
use crate::problem::Problem;
use crate::vocabulary::{Resource, words};
use crate::{links, schema};

/// What the service recorded for one operation key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OperationStatus {
    /// The action, e.g. `create_ticket`.
    #[schema(schema_with = crate::schema::action_schema)]
    action: String,
    /// The operation key.
    key: String,
    /// `succeeded`: the write happened and the key replays it. With a ticket
    /// provider also: `in_progress` (being sent), `unknown` (the provider's
    /// answer was lost; being reconciled) and `failed_before_effect` (the
    /// provider made nothing; the key is not used up).
    #[schema(example = "succeeded")]
    state: &'static str,
    /// Where the key is in its lifecycle: `replayable` or `expired` (the
    /// document's words are in `phase_schema`).
    #[schema(schema_with = phase_schema)]
    phase: &'static str,
    /// The ticket made or acted on, once there is one.
    ticket_id: Option<String>,
    /// What the operation made or acted on, once there is one: the ticket's
    /// id, or for `add_comment` the comment's.
    resource_id: Option<String>,
    /// Where to GET it.
    ticket_location: Option<String>,
    /// For `add_comment`: where to GET the comment it added.
    #[serde(skip_serializing_if = "Option::is_none")]
    comment_location: Option<String>,
    /// Versioned fingerprint of the request that first used the key.
    fingerprint: String,
    /// When the key was first used (RFC 3339).
    #[schema(format = DateTime)]
    created_at: String,
    /// Until when the same request with this key replays the first answer
    /// byte for byte (RFC 3339; the `Idempotency-Replayable-Until` of every
    /// answer to it).
    #[schema(format = DateTime)]
    replayable_until: String,
    /// Until when the key is remembered, at least as a tombstone (RFC 3339):
    /// until then no request with it makes a second effect. After it the
    /// key is free again.
    #[schema(format = DateTime)]
    retained_until: String,
    /// Whether sending the same request with this key again is safe.
    retry_safe: bool,
    /// What a caller should do now.
    next_step: String,
    /// Why the provider made nothing, or why the outcome is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// With a ticket provider: the effect and every call made for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    effect: Option<EffectBody>,
}

/// A write done in a provider: its name there and every call made for it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EffectBody {
    /// Sent as the provider's idempotency key and stored on what the write
    /// made there (the ticket, the changelog entry or the comment).
    external_reference: String,
    /// Until when the provider itself deduplicates a re-send with that key;
    /// `null` when it does not (then only a search decides).
    #[schema(format = DateTime)]
    downstream_key_trusted_until: Option<String>,
    /// When it was first sent.
    #[schema(format = DateTime)]
    first_dispatched_at: Option<String>,
    /// When it was last sent.
    #[schema(format = DateTime)]
    last_dispatched_at: Option<String>,
    /// Every dispatch and lookup, oldest first. A retry adds attempts,
    /// never a second effect.
    attempts: Vec<AttemptBody>,
    /// The latest lookup by external reference, if any.
    last_reconciliation: Option<AttemptBody>,
    /// The provider's ids of the copies a search found besides the
    /// original: the provider holds this effect more than once (something
    /// there, or before it, made it twice), for an operator to resolve.
    /// Absent when it holds it once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    duplicates_at_provider: Vec<String>,
    /// Every time an operator settled it by hand, oldest first: who, when,
    /// why and what they decided. Absent when nobody did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    settled_by_hand: Vec<SettlementBody>,
}

/// An operator's decision about an effect whose outcome reconciliation
/// could not learn: the audit entry.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SettlementBody {
    /// When it was settled.
    #[schema(format = DateTime)]
    settled_at: String,
    /// `made` (the provider holds it as `provider_reference`; the operation
    /// succeeded with it), `not_made` (the provider never made it; a retry
    /// with the same key sends it) or `kept` (the provider held it more
    /// than once; the copies were removed there, keeping
    /// `provider_reference`).
    #[schema(example = "made")]
    decision: &'static str,
    /// For `made` and `kept`: the provider's id of the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_reference: Option<String>,
    /// Who decided.
    by: String,
    /// Why.
    reason: String,
    /// What a search of the provider found when it was settled.
    provider_check: String,
    /// Whether the operator overrode what that search found.
    forced: bool,
}

impl From<Settlement> for SettlementBody {
    fn from(s: Settlement) -> Self {
        Self {
            settled_at: links::rfc3339(s.settled_at),
            decision: s.decision.as_str(),
            provider_reference: s.decision.reference().map(|r| r.as_str().into()),
            by: s.by.as_str().into(),
            reason: s.reason.as_str().into(),
            provider_check: s.provider_check,
            forced: s.forced,
        }
    }
}

/// One call to the provider.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct AttemptBody {
    /// 1, 2, …
    number: i32,
    /// `dispatch` or `lookup`.
    kind: &'static str,
    /// `request`, `retry`, `status`, `background` or `startup`.
    trigger: &'static str,
    /// When it started.
    #[schema(format = DateTime)]
    started_at: String,
    /// When its answer was recorded; `null` if none was (it runs, or the
    /// server stopped during it).
    #[schema(format = DateTime)]
    finished_at: Option<String>,
    /// e.g. `created`, `ambiguous`, `found`, `absent`, `absent_too_soon`.
    result: Option<String>,
    /// The provider's words, or ours.
    detail: Option<String>,
}

impl From<&EffectAttempt> for AttemptBody {
    fn from(a: &EffectAttempt) -> Self {
        Self {
            number: a.number,
            kind: a.kind.as_str(),
            trigger: a.trigger.as_str(),
            started_at: links::rfc3339(a.started_at),
            finished_at: a.finished_at.map(links::rfc3339),
            result: a.result.map(|r| r.as_str().to_owned()),
            detail: a.detail.clone(),
        }
    }
}

/// The phases a lookup can show (a forgotten key has no status), with the
/// field's words (a `schema_with` schema does not take the doc comment).
fn phase_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .description(Some(
            "Where the key is in its lifecycle. `replayable`: within its replay window, the same \
             request with this key replays the first answer. `expired`: past it (until \
             `retained_until`) only a tombstone is kept; the key is spent, and the same request \
             answers the resource as it is now (`Idempotent-Replayed: expired`) and makes \
             nothing new. After `retained_until` the key is forgotten: this lookup answers `404`.",
        ))
        .enum_values(Some(
            [KeyPhase::Replayable, KeyPhase::Expired].map(KeyPhase::as_str),
        ))
        .build()
}

/// What to do next with a key whose replay window is over: it is spent
/// until `retained_until`, and a retry with it makes nothing new.
fn expired_next_step(
    action: Action,
    created_at: &str,
    retained_until: &str,
    resource: Option<&str>,
) -> String {
    let (what, it) = words(action).expired;
    let read = resource.map_or_else(String::new, |at| format!(" GET {at} to see it."));
    format!(
        "{what} at {created_at}; its first answer is no longer kept, only a record that the key \
         was used. The key is spent until {retained_until} (after that it is free again): sending \
         the same request with it again makes nothing new and returns {it} as it is now, and a different request with it \
         is refused.{read} Do not retry with a new key: that would make the effect again."
    )
}

/// What to do next with an effect reconciliation gave up on: only an
/// operator settles it now.
pub(crate) fn gave_up_next_step(action: Action) -> &'static str {
    words(action).gave_up
}

/// What to do next, by action and state.
pub(crate) fn next_step(action: Action, state: OperationState) -> &'static str {
    let words = words(action);
    match state {
        OperationState::Succeeded => words.succeeded,
        OperationState::InProgress => words.in_progress,
        OperationState::Unknown => words.unknown,
        OperationState::FailedBeforeEffect => {
            "The provider made nothing, and the key was not used up: send the request again \
             (corrected, if the provider refused it) with the same key."
        }
    }
}

impl From<kitchen::OperationStatus> for OperationStatus {
    fn from(status: kitchen::OperationStatus) -> Self {
        let record = status.record;
        let detail = status.effect.as_ref().and_then(|e| e.state_detail.clone());
        let given_up = status.effect.as_ref().is_some_and(|e| e.given_up);
        let effect = status.effect.map(|e| EffectBody {
            external_reference: e.external_ref.as_str().into(),
            downstream_key_trusted_until: e.key_trusted_until.map(links::rfc3339),
            first_dispatched_at: e.first_dispatched_at.map(links::rfc3339),
            last_dispatched_at: e.last_dispatched_at.map(links::rfc3339),
            last_reconciliation: e.last_reconciliation().map(AttemptBody::from),
            attempts: e.attempts.iter().map(AttemptBody::from).collect(),
            duplicates_at_provider: e.duplicates_at_provider,
            settled_by_hand: e
                .settled_by_hand
                .into_iter()
                .map(SettlementBody::from)
                .collect(),
        });
        // A comment's address: its ticket and the resource the record
        // keeps (a tombstone too), else the frozen result; an unreadable
        // one only leaves the link out (the ticket's comments list it too).
        let comment_location = match words(record.action).resource {
            Resource::Comment => match (record.ticket_id, record.resource_id) {
                (Some(ticket), Some(comment)) => Some(links::comment_resource(ticket, comment)),
                (None, _) | (_, None) => record
                    .result
                    .as_ref()
                    .and_then(|snapshot| snapshot.parse::<Comment>().ok())
                    .map(|c| links::comment(c.ticket_id, c.id)),
            },
            Resource::Ticket => None,
        };
        let ticket_location = record.ticket_id.map(links::ticket);
        let created_at = links::rfc3339(record.created_at);
        let retained_until = links::rfc3339(record.retained_until);
        let next_step = match status.phase {
            KeyPhase::Replayable if given_up => gave_up_next_step(record.action).to_owned(),
            KeyPhase::Replayable => next_step(record.action, record.state).to_owned(),
            // A forgotten key is answered 404 before it gets here.
            KeyPhase::Expired | KeyPhase::Forgotten => expired_next_step(
                record.action,
                &created_at,
                &retained_until,
                comment_location.as_deref().or(ticket_location.as_deref()),
            ),
        };
        Self {
            action: record.action.as_str().into(),
            key: record.key.as_str().into(),
            state: record.state.as_str(),
            phase: status.phase.as_str(),
            ticket_id: record.ticket_id.map(|id| id.to_string()),
            resource_id: record.resource_id.map(|id| id.to_string()),
            ticket_location,
            comment_location,
            fingerprint: record.fingerprint.to_string(),
            created_at,
            replayable_until: links::rfc3339(record.replayable_until),
            retained_until,
            retry_safe: true,
            next_step,
            detail: match record.state {
                OperationState::Succeeded => None,
                _ => detail,
            },
            effect,
        }
    }
}

/// The path of an operation: its action and key. Both are read as text so
/// that each bad one gets its own answer.
#[derive(Debug, Deserialize)]
pub(crate) struct OperationPath {
    action: String,
    key: String,
}

impl IntoParams for OperationPath {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![
            schema::parameter(
                "action",
                ParameterIn::Path,
                true,
                "The write's action; anything else is not found.",
                schema::action_schema(),
            ),
            schema::parameter(
                "key",
                ParameterIn::Path,
                true,
                "The Idempotency-Key (percent-encoded), the RFC 8941 quotes of a quoted key left \
                 out. Anything that cannot be a key is `400 idempotency-key-malformed`.",
                key_path_schema(),
            ),
        ]
    }
}

/// A key as a path segment: printable ASCII without spaces, its lengths
/// from the kitchen's.
fn key_path_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .min_length(Some(MIN_KEY_LEN))
        .max_length(Some(MAX_KEY_LEN))
        .pattern(Some(format!("^[!-~]{{{MIN_KEY_LEN},{MAX_KEY_LEN}}}$")))
        .build()
}

/// Look an operation up by its action and key.
///
/// `404 operation-not-found` means nothing was recorded for this key: the
/// write did not happen (or the key was used more than the tombstone
/// horizon ago: keys are remembered until their `retained_until`), and a
/// retry with the same key is safe. A key past its replay window but within
/// that horizon answers `200` with `phase: expired`: it is spent, and a
/// retry with it makes nothing new.
#[utoipa::path(
    get,
    path = "/v1/operations/{action}/{key}",
    operation_id = "get_operation",
    tag = "operations",
    params(OperationPath),
    responses(
        (status = 200, description = "The operation record (with a ticket provider: the effect, its attempts and the last reconciliation; an unsettled one is first searched for at the provider, never sent there again: a read never writes). `phase` says where the key is: `replayable` (a retry replays the first answer) or `expired` (past `replayable_until`, until `retained_until`: the key is spent, a retry with it makes nothing new and answers the resource as it is now).", body = OperationStatus),
        (status = 400, description = "The key cannot be an Idempotency-Key (`idempotency-key-malformed`: not printable ASCII of a key's length), so nothing can have been recorded under it; or the path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Nothing recorded for this key (`operation-not-found`): the write did not happen, or the key was used more than the tombstone horizon ago (keys are remembered until their `retained_until`); a retry with the same key is safe. Or an unknown action (`not-found`, naming the actions).", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry. Or the database cannot be used right now (`database-unavailable`): retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn get(
    State(kitchen): State<Kitchen>,
    Extension(caller): Extension<Caller>,
    Path(OperationPath { action, key }): Path<OperationPath>,
) -> Result<axum::Json<OperationStatus>, RestError> {
    let action = Action::parse(&action).ok_or_else(|| {
        RestError::NotFound(format!(
            "Action {action:?} (the actions are {})",
            Action::names()
        ))
    })?;
    // A string that is not a valid key can never have been recorded, and a
    // write with it would be refused: saying "not found, retrying is safe"
    // would send the caller into that refusal.
    let key = OperationKey::parse(key).map_err(|e| {
        RestError::MalformedIdempotencyKey(format!(
            "{e} Nothing can have been recorded under this key."
        ))
    })?;
    // With a ticket provider, an unsettled operation is first searched for
    // at the provider (never sent again: a read never writes).
    let status = kitchen
        .operation_status(caller.tenant.id, action, &key)
        .await?
        .ok_or(RestError::OperationNotFound(action))?;
    match status.phase {
        KeyPhase::Replayable | KeyPhase::Expired => Ok(axum::Json(status.into())),
        // The kitchen answers no status for a forgotten key; should one
        // come, it is what 404 means: nothing remembered, the key is free.
        KeyPhase::Forgotten => Err(RestError::OperationNotFound(action)),
    }
}

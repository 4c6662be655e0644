//! What results say: each `next_step` (one sentence that names the safe
//! move first), the field errors this door writes itself, and what a task
//! says while it works. It is what a model reads at the moment it decides
//! whether to retry or to invent a new key; not hashed (it is not part of
//! `tools/list`), pinned by the response snapshots.

use std::borrow::Cow;

use kitchen::{Action, MAX_KEY_LEN, MIN_KEY_LEN, OperationState, TicketStatus, Version};

use crate::vocabulary::{Words, words};

/// A write answered `created` (for the ticket writes: `updated`).
pub(crate) fn done(action: Action) -> String {
    let thing = words(action).thing;
    format!(
        "Done. If you retry this call, keep the same operation_id and arguments; for another \
         {thing}, invent a new operation_id."
    )
}

/// A write made under a new operation_id although a call with the same
/// arguments was made under another one minutes before (the guard's
/// `warn`): most likely a retry that invented a new operation_id. Says
/// plainly what exists now, and what to do either way.
pub(crate) fn possible_duplicate_made(action: Action, earlier_id: &str, at: &str) -> String {
    let Words { thing, made, .. } = words(action);
    format!(
        "Done, but an identical {thing} was already {made} at {at} under operation_id \
         {earlier_id}. If this call was a retry of that one, a second {thing} now exists: next \
         time retry with the first operation_id. If you meant a second {thing}, nothing to do."
    )
}

/// A write refused by the guard's `confirm`: the same arguments were sent
/// minutes before under another operation_id. Nothing was made and the
/// key is unused.
pub(crate) fn possible_duplicate_refused(action: Action, earlier_id: &str, at: &str) -> String {
    let Words {
        thing,
        made,
        nothing,
        ..
    } = words(action);
    format!(
        "{nothing}: an identical {thing} was already {made} at {at} under operation_id \
         {earlier_id}. If this is a retry, that {thing} is the one you wanted: check it with \
         {} using operation_id {earlier_id}. Only if you really mean a second {thing}, call \
         again with the same arguments and confirm_new: true.",
        status_lookup(action)
    )
}

/// A write answered `replayed`.
pub(crate) fn replayed(action: Action) -> Cow<'static, str> {
    words(action).replayed.into()
}

/// A write answered `expired`: the same call as the first one with this
/// operation_id, after its replay window. The effect exists and nothing new
/// was made; the first answer is gone, so what is shown is the resource as
/// it is now, and the way to read it comes first. The one move that makes a
/// duplicate (a new operation_id for the same effect) is named last, as a
/// prohibition.
pub(crate) fn expired(action: Action, ticket_id: Option<&str>, first_used_at: &str) -> String {
    let words = words(action);
    let Words { thing, made, .. } = words;
    let on = words.on(ticket_id);
    let (shown, read) = words.lasting;
    format!(
        "This operation_id already {made} this {thing}{on} at {first_used_at}; nothing new was \
         {made}. Its first answer is no longer kept, so the {shown} shown is as it is now: read \
         it again with {read}. Do not retry this {thing} with a new operation_id: that would \
         make it a second time."
    )
}

/// A write answered `conflict`. A model that retried with reworded
/// arguments meant the same effect, so the way back to it comes first, and
/// a new operation_id only for an effect that is genuinely different:
/// leading with "invent a new operation_id" is the one step that makes the
/// duplicate the service exists to prevent.
pub(crate) fn conflict(action: Action, ticket_id: Option<&str>) -> String {
    let words = words(action);
    let Words {
        thing,
        made,
        did_nothing,
        ..
    } = words;
    let original = match ticket_id {
        Some(id) if words.makes_its_ticket => {
            format!("it already exists (ticket_id {id}): read it")
        }
        Some(id) => format!("it was already {made} (ticket_id {id}): check it"),
        None => "it was already requested with this operation_id: check it".into(),
    };
    let lookup = status_lookup(action);
    format!(
        "If you meant the same {thing}, {original} with {lookup} using this same operation_id; \
         only for a genuinely different {thing} invent a new operation_id (this call {did_nothing}: \
         its arguments differ from the first call with this operation_id)."
    )
}

/// A write answered `invalid`.
pub(crate) fn invalid(action: Action) -> String {
    let nothing = words(action).nothing;
    format!(
        "{nothing} and the operation_id was not used: correct the arguments listed in errors and \
         call again (keeping the same operation_id, if it was valid)."
    )
}

/// A write answered `in_progress`.
pub(crate) fn in_progress(action: Action) -> String {
    let did_nothing = words(action).did_nothing;
    format!(
        "Another call with this operation_id is still running and this one {did_nothing}: call \
         again with the same operation_id and arguments after retry_after_seconds."
    )
}

/// A write named a ticket the caller does not have (or an id that is no
/// ticket id): the same answer either way, revealing nothing.
pub(crate) fn ticket_not_found(action: Action) -> String {
    let nothing = words(action).nothing;
    format!(
        "No ticket has this ticket_id. {nothing} and the operation_id was not used: take ticket \
         ids from create_ticket or list_tickets results, and call again."
    )
}

/// A write with an `expected_version` the ticket has moved on from.
pub(crate) fn version_mismatch(action: Action, expected: Version, current: Version) -> String {
    let Words { thing, nothing, .. } = words(action);
    format!(
        "{nothing} and the operation_id was not used: the ticket is at version {current}, not \
         {expected}. Read it with get_ticket, decide whether your {thing} still applies, and if \
         so call again with expected_version {current}."
    )
}

/// `transition_ticket` to a status the ticket cannot move to from its own.
pub(crate) fn transition_not_allowed(from: TicketStatus, allowed: &[TicketStatus]) -> String {
    let allowed = allowed
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(" or ");
    format!(
        "Nothing was changed and the operation_id was not used: the ticket is {from} and can only \
         move to {allowed}. Call again with one of allowed_moves, if that is what you mean.",
        from = from.as_str()
    )
}

/// A change to a ticket that exists only here, on a deployment that keeps
/// its tickets in a provider.
pub(crate) fn not_at_provider(action: Action) -> String {
    let nothing = words(action).nothing;
    format!(
        "This ticket was made before this service kept its tickets in an external ticket \
         provider: it exists only here, so it cannot be changed there. {nothing} and the \
         operation_id was not used; retrying will not help."
    )
}

/// A label added to a ticket that carries as many as it may.
pub(crate) fn label_limit_reached(limit: usize) -> String {
    format!(
        "Nothing was changed and the operation_id was not used: the ticket already carries \
         {limit} labels, as many as a ticket may. Remove one with remove_label first, then call \
         again."
    )
}

/// A write the provider has no counterpart for, on a deployment that keeps
/// its tickets in a provider.
pub(crate) fn not_supported_by_provider(action: Action) -> String {
    let nothing = words(action).nothing;
    format!(
        "This service keeps its tickets in an external ticket provider, which has nothing like \
         {action}, so it cannot be done here. {nothing} and the operation_id was not used; \
         retrying will not help."
    )
}

/// A write answered `not_created`: the provider refused it.
pub(crate) fn not_created_rejected(action: Action) -> String {
    let words = words(action);
    let Words { thing, nothing, .. } = words;
    let correct = if words.makes_its_ticket {
        "correct the arguments"
    } else {
        "correct the arguments (or read the ticket with get_ticket and decide again)"
    };
    format!(
        "{nothing}: the ticket provider refused this {thing} (see reason). The operation_id is \
         not used up: {correct} and call {action} again with the same operation_id."
    )
}

/// A write answered `not_created`: the provider was not reached, or a
/// search proved that what was sent never arrived (`reason` says which).
pub(crate) fn not_created_unavailable(action: Action) -> String {
    let Words { thing, nothing, .. } = words(action);
    format!(
        "{nothing}: the ticket provider does not have this {thing} (see reason: it could not be \
         reached, or what was sent never arrived). The operation_id is not used up: call \
         {action} again later (after retry_after_seconds) with the same operation_id and \
         arguments."
    )
}

/// A write answered `unknown`.
pub(crate) fn unknown(action: Action) -> String {
    let Words {
        thing, made, twice, ..
    } = words(action);
    let lookup = status_lookup(action);
    format!(
        "Whether the {thing} was {made} is not known yet; it is being reconciled with the ticket \
         provider. After retry_after_seconds, call {action} again with the same operation_id and \
         arguments, or call {lookup} with it; do not invent a new operation_id for this {thing} \
         (it could {twice})."
    )
}

/// A write answered `unknown` that reconciliation gave up on: only an
/// operator settles it now.
pub(crate) fn gave_up(action: Action) -> String {
    let Words {
        thing, made, twice, ..
    } = words(action);
    format!(
        "Whether the {thing} was {made} is still unknown, and the service has stopped asking the \
         ticket provider (see reason): a person must check the provider. Calling {action} again \
         with this operation_id answers the same; do not invent a new operation_id for this \
         {thing} (it could {twice})."
    )
}

/// How to look up `action`'s operation: `get_operation_status`, naming
/// the action unless it is the default one (the create).
fn status_lookup(action: Action) -> String {
    if words(action).makes_its_ticket {
        "get_operation_status".to_owned()
    } else {
        format!("get_operation_status (action {action})")
    }
}

/// The field error of a write without an operation_id.
pub(crate) fn operation_id_required(action: Action) -> String {
    let thing = words(action).thing;
    format!(
        "operation_id is required: invent a fresh UUID for this {thing} and reuse it on every \
         retry"
    )
}

/// What `get_operation_status` says for a record in `state` (`None`:
/// nothing recorded) under `action`.
pub(crate) fn status_next_step(action: Action, state: Option<OperationState>) -> String {
    let words = words(action);
    let Words {
        thing,
        made,
        did_nothing,
        nothing,
        ..
    } = words;
    match state {
        Some(OperationState::Succeeded) => match action {
            _ if words.makes_its_ticket => "The ticket was created; do not create it again. \
                Retrying create_ticket with this operation_id and the same arguments returns this \
                ticket."
                .into(),
            other => format!(
                "The {thing} was {made}; do not repeat it. Retrying {other} with this \
                 operation_id and the same arguments returns this result."
            ),
        },
        Some(OperationState::InProgress) => format!(
            "The {thing} is being sent to the ticket provider: check again shortly, or retry \
             {action} with the same operation_id and arguments; do not invent a new operation_id \
             for this {thing}."
        ),
        Some(OperationState::Unknown) => format!(
            "Whether the {thing} was {made} is not known yet; it is being reconciled with the \
             ticket provider. Retry {action} with the same operation_id and arguments, or check \
             again shortly; never invent a new operation_id for this {thing} (it could create a \
             duplicate)."
        ),
        Some(OperationState::FailedBeforeEffect) => format!(
            "{nothing} and this operation_id is not used up: call {action} again with the same \
             operation_id (if detail says the provider refused the {thing}, correct the arguments \
             first)."
        ),
        // Only "nothing under this id": a mistyped or made-up id finds
        // nothing either, which says nothing about the call the model meant.
        // An operation_id is remembered until its retained_until (the
        // tombstone horizon), then forgotten: "nothing recorded" is only
        // safe advice within it, and the answer says so.
        None => format!(
            "Nothing is recorded under this operation_id yet: if it is exactly the one you sent \
             to {action}, that call has {did_nothing} so far (a call still on its way may yet \
             record it; or the id was used more than the tombstone horizon ago: operation_ids \
             are remembered until their retained_until), and calling {action} again with the \
             same operation_id and arguments is safe."
        ),
    }
}

/// What `get_operation_status` says for a key past its replay window: the
/// effect happened, the key is spent until `retained_until`, and a retry
/// with it makes nothing new. `ticket_id` is the ticket the operation made
/// or acted on (for add_comment, the ticket commented on).
pub(crate) fn status_expired(
    action: Action,
    ticket_id: Option<&str>,
    created_at: &str,
    retained_until: &str,
) -> String {
    let words = words(action);
    let Words { thing, made, .. } = words;
    let on = words.on(ticket_id);
    let (shown, read) = words.lasting;
    format!(
        "The {thing} was {made}{on} at {created_at}; its first answer is no longer kept. This \
         operation_id is spent until {retained_until}: calling {action} again with it and the \
         same arguments makes nothing new and returns the {shown} as it is now (read it with \
         {read}). Do not retry with a new operation_id: that would make it a second time."
    )
}

/// The field error of `get_operation_status` without an operation_id.
pub(crate) const STATUS_OPERATION_ID_REQUIRED: &str =
    "operation_id is required: the one you gave the call you want to check";

/// `get_operation_status` without an operation_id.
pub(crate) const STATUS_MISSING: &str =
    "Pass the operation_id (and action) of the call you want to check.";

/// The field error of `get_operation_status` with a string that cannot be
/// a key. No retry advice: every write would refuse this id too.
pub(crate) fn not_an_operation_id() -> String {
    format!(
        "This is not a valid operation_id (those are {MIN_KEY_LEN} to {MAX_KEY_LEN} printable \
         ASCII characters without spaces, such as 0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79), so \
         nothing can have been recorded under it."
    )
}

/// `get_operation_status` with a string that cannot be a key.
pub(crate) const STATUS_NOT_AN_OPERATION_ID: &str = "Nothing can have been recorded under an \
invalid operation_id: pass the exact operation_id you gave the call you want to check.";

/// The field error of `get_operation_status` with an action that is none.
pub(crate) fn unknown_action(raw: &str) -> String {
    format!(
        "action must be the name of a write tool, one of {}; got {raw:?}",
        Action::names()
    )
}

/// `preview_ticket`: valid.
pub(crate) const PREVIEW_VALID: &str = "To create it, call create_ticket with these arguments and \
a new operation_id you invent (a UUID).";

/// `preview_ticket`: not valid.
pub(crate) const PREVIEW_INVALID: &str =
    "Correct the arguments listed in errors, then preview or create again.";

/// `get_ticket` or `list_comments` found no such ticket.
pub(crate) const TICKET_NOT_FOUND: &str = "No ticket has this id; take ticket ids from \
create_ticket, get_operation_status or list_tickets results.";

/// The field error of a missing ticket_id.
pub(crate) const TICKET_ID_REQUIRED: &str = "ticket_id is required: take it from a create_ticket, \
get_operation_status or list_tickets result";

/// A read tool's arguments are invalid.
pub(crate) const READ_INVALID: &str = "Correct the arguments listed in errors and call again.";

/// An infrastructure failure (a JSON-RPC internal error).
pub(crate) const INTERNAL: &str = "The server failed and logged why; whether a write took effect \
is unknown. Call get_operation_status with the same operation_id and action, or retry the write \
with the same operation_id and arguments.";

/// Arguments that passed their schema but could not be read: a bug, before
/// anything was done with them.
pub(crate) const ARGUMENTS_UNREADABLE: &str =
    "The server failed to read these arguments and logged why; nothing was done with them.";

/// The field error of an argument of the wrong JSON type: what it must be,
/// what came instead, and what to send.
pub(crate) fn wrong_type(argument: &str, expected: &str, got: &str) -> String {
    match expected {
        "integer" => format!(
            "{argument} must be an integer; got {got}. Send a whole number, without quotes."
        ),
        "string" => {
            format!("{argument} must be a string; got {got}. Send it as text in double quotes.")
        }
        other => format!("{argument} must be of type {other}; got {got}."),
    }
}

/// The field error of an argument the tool does not have.
pub(crate) fn unknown_argument(argument: &str, known: &[&str]) -> String {
    format!(
        "{argument} is not an argument of this tool, whose arguments are {}. Remove it, or correct \
         its name.",
        known.join(", ")
    )
}

// What tasks say (the tasks extension: `statusMessage` and the errors of
// `tasks/*`). A `statusMessage` may be shown to the model, so it names the
// safe move too.

/// A task's `statusMessage` while its write runs (or another call with its
/// operation_id does) and nothing more is known.
pub(crate) fn task_working(action: Action) -> String {
    let Words { thing, twice, .. } = words(action);
    format!(
        "The {thing} is being sent to the ticket provider: poll tasks/get with this taskId for \
         the result; do not call {action} again with a new operation_id (it could {twice})."
    )
}

/// `tasks/get`, `tasks/cancel` or `tasks/update` (`verb`: retrieve, cancel,
/// update) for an id that names nothing the caller's tenant recorded. The
/// start is the wording of the spec (and of rmcp's own task store).
pub(crate) fn task_not_found(verb: &str) -> String {
    format!(
        "Failed to {verb} task: Task not found. A taskId is the action and the operation_id of a \
         write, as its tools/call answered it ({{action}}/{{operation_id}}), and only the tenant \
         that made the write can use it. To find out what a write did, call get_operation_status \
         with its operation_id and action."
    )
}

/// `tasks/*` for a write whose answer is past its replay window (the
/// task's ttlMs): what it did is still known, through the status tool.
pub(crate) fn task_expired(
    verb: &str,
    action: Action,
    key: &str,
    replayable_until: &str,
) -> String {
    format!(
        "Failed to {verb} task: the answer of this write is no longer kept (its replay window \
         ended at {replayable_until}). Call get_operation_status with operation_id {key} and \
         action {action}: it tells what the write did."
    )
}

//! The tool contract's wording. On this door the descriptions *are* the
//! mechanism that makes an agent invent a key and reuse it on retry, so they
//! live in one place, are snapshotted, linted (provenance of identifiers, a
//! token budget) and hashed: each tool's contract hash is published in its
//! `_meta` and recorded on every call's span and metrics, so a change in
//! agent behaviour can be traced to a change in wording.
//!
//! The results' wording (each `next_step`, and the field errors this door
//! writes itself) lives here too, below the descriptions: it is what a model
//! reads at the moment it decides whether to retry or to invent a new key.
//! It is not hashed (it is not part of `tools/list`); the response snapshots
//! pin it.

use rmcp::model::Tool;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The `_meta` key under which each tool publishes its contract hash.
pub const CONTRACT_HASH_META: &str = "retry-safe-tickets/contract-sha256";

/// SHA-256 (hex) over the tool's name, description, input schema and
/// annotations, in canonical JSON (object keys sorted at every level).
pub fn contract_hash(tool: &Tool) -> String {
    let contract = serde_json::json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": Value::Object((*tool.input_schema).clone()),
        "annotations": tool.annotations,
    });
    let mut canonical = String::new();
    write_canonical(&contract, &mut canonical);
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `create_ticket`.
pub const CREATE_TICKET: &str = "Create one ticket. operation_id makes retries safe: invent a fresh \
unique value (a UUID) for each new ticket you intend, and reuse the same value with the same \
arguments when retrying after an error, timeout or lost reply; the retry returns the original \
ticket instead of making a second one. If unsure whether a ticket was created, call \
get_operation_status first.";

/// `get_operation_status`.
pub const GET_OPERATION_STATUS: &str = "Find out what happened to a create_ticket call, by its \
operation_id. Returns the ticket if it was created. If nothing was recorded under that \
operation_id, that call created nothing and calling create_ticket again with the same operation_id \
and arguments is safe. When create_ticket answered status unknown, this checks with the ticket \
provider.";

/// `preview_ticket`.
pub const PREVIEW_TICKET: &str = "Check a ticket without creating it: validates the arguments and \
shows what create_ticket would make. Creates nothing and uses no operation_id.";

/// `get_ticket`.
pub const GET_TICKET: &str = "Read one ticket by its id.";

/// `list_tickets`.
pub const LIST_TICKETS: &str =
    "List tickets, newest first, a page at a time, optionally of one project.";

/// The `operation_id` argument.
pub const OPERATION_ID_ARG: &str = "Invented by you: a fresh UUID for each new ticket you intend, \
sent unchanged on every retry of it. 8 to 255 printable ASCII characters, no spaces.";

/// The `operation_id` argument of `get_operation_status`.
pub const OPERATION_ID_LOOKUP_ARG: &str = "Taken from the create_ticket call you want to check: the \
operation_id you invented for it.";

/// The `project_id` argument.
pub const PROJECT_ID_ARG: &str = "Project slug such as billing-api (lowercase letters, digits, '-', \
'_'). Taken from the user's request or from an earlier ticket's project_id.";

/// The `ticket_id` argument.
pub const TICKET_ID_ARG: &str = "Taken from an earlier result: the id of a ticket returned by \
create_ticket, get_operation_status or list_tickets.";

/// The `cursor` argument.
pub const CURSOR_ARG: &str = "Taken from next_cursor of the previous list_tickets result; omit for \
the first page.";

/// How the server introduces itself to a model.
pub const INSTRUCTIONS: &str = "Retry-safe tickets. Every create_ticket call carries an operation_id \
you invent (a UUID) for the ticket you intend. After an error, timeout or lost reply, retry with the \
same operation_id and arguments: you get the original ticket back, never a duplicate. When unsure \
whether a ticket was created, call get_operation_status.";

// What results say. Every `next_step` is one sentence that names the safe
// move first.

/// `create_ticket` answered `created`.
pub(crate) const CREATED: &str = "Done. If you retry this call, keep the same operation_id and \
arguments; for another ticket, invent a new operation_id.";

/// `create_ticket` answered `replayed`.
pub(crate) const REPLAYED: &str = "This operation_id had already created this ticket; nothing new \
was created. For a different ticket, invent a new operation_id.";

/// `create_ticket` answered `conflict`. A model that retried with reworded
/// arguments meant the same ticket, so the way back to it comes first, and
/// a new operation_id only for a ticket that is genuinely different:
/// leading with "invent a new operation_id" is the one step that makes the
/// duplicate the service exists to prevent.
pub(crate) fn conflict(ticket_id: Option<&str>) -> String {
    let original = match ticket_id {
        Some(id) => format!("it already exists (ticket_id {id}): read it"),
        None => "it was already requested with this operation_id: check it".into(),
    };
    format!(
        "If you meant the same ticket, {original} with get_operation_status using this same \
         operation_id; only for a genuinely different ticket invent a new operation_id (this call \
         created nothing: its arguments differ from the first call with this operation_id)."
    )
}

/// `create_ticket` answered `invalid`.
pub(crate) const INVALID_CREATE: &str = "Nothing was created and the operation_id was not used: \
correct the arguments listed in errors and call again (keeping the same operation_id, if it was \
valid).";

/// `create_ticket` answered `in_progress`.
pub(crate) const IN_PROGRESS: &str = "Another call with this operation_id is still running and \
nothing was created by this one: call again with the same operation_id and arguments after \
retry_after_seconds.";

/// `create_ticket` answered `not_created`: the provider refused the ticket.
pub(crate) const NOT_CREATED_REJECTED: &str = "Nothing was created: the ticket provider refused \
this ticket (see reason). The operation_id is not used up: correct the arguments and call \
create_ticket again with the same operation_id.";

/// `create_ticket` answered `not_created`: the provider was not reached.
pub(crate) const NOT_CREATED_UNAVAILABLE: &str = "Nothing was created: the ticket provider could \
not be reached. The operation_id is not used up: call create_ticket again later (after \
retry_after_seconds) with the same operation_id and arguments.";

/// `create_ticket` answered `unknown`.
pub(crate) const UNKNOWN: &str = "Whether the ticket was created is not known yet; it is being \
reconciled with the ticket provider. After retry_after_seconds, call create_ticket again with the \
same operation_id and arguments, or call get_operation_status with it; do not invent a new \
operation_id for this ticket (it could create a duplicate).";

/// The field error of a create without an operation_id.
pub(crate) const OPERATION_ID_REQUIRED: &str = "operation_id is required: invent a fresh UUID for \
this ticket and reuse it on every retry";

/// `get_operation_status`: `succeeded`.
pub(crate) const STATUS_SUCCEEDED: &str = "The ticket was created; do not create it again. \
Retrying create_ticket with this operation_id and the same arguments returns this ticket.";

/// `get_operation_status`: `in_progress`.
pub(crate) const STATUS_IN_PROGRESS: &str = "The ticket is being sent to the ticket provider: \
check again shortly, or retry create_ticket with the same operation_id and arguments; do not \
invent a new operation_id for this ticket.";

/// `get_operation_status`: `unknown`.
pub(crate) const STATUS_UNKNOWN: &str = "Whether the ticket was created is not known yet; it is \
being reconciled with the ticket provider. Retry create_ticket with the same operation_id and \
arguments, or check again shortly; never invent a new operation_id for this ticket (it could \
create a duplicate).";

/// `get_operation_status`: `failed_before_effect`.
pub(crate) const STATUS_FAILED_BEFORE_EFFECT: &str = "Nothing was created and this operation_id is \
not used up: call create_ticket again with the same operation_id (if detail says the provider \
refused the ticket, correct the arguments first).";

/// `get_operation_status`: `not_found`. Only "nothing under this id": a
/// mistyped or made-up id finds nothing either, which says nothing about
/// the call the model meant.
pub(crate) const STATUS_NOT_FOUND: &str = "Nothing was recorded under this operation_id: if it is \
exactly the one you sent to create_ticket, that call created nothing, and calling create_ticket \
again with the same operation_id and arguments is safe.";

/// The field error of `get_operation_status` without an operation_id.
pub(crate) const STATUS_OPERATION_ID_REQUIRED: &str =
    "operation_id is required: the one you gave the create_ticket call you want to check";

/// `get_operation_status` without an operation_id.
pub(crate) const STATUS_MISSING: &str =
    "Pass the operation_id of the create_ticket call you want to check.";

/// The field error of `get_operation_status` with a string that cannot be
/// a key. No retry advice: create_ticket would refuse this id too.
pub(crate) const NOT_AN_OPERATION_ID: &str = "This is not a valid operation_id (those are 8 to 255 \
printable ASCII characters without spaces, such as 0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79), so \
nothing can have been recorded under it.";

/// `get_operation_status` with a string that cannot be a key.
pub(crate) const STATUS_NOT_AN_OPERATION_ID: &str = "Nothing can have been recorded under an \
invalid operation_id: pass the exact operation_id you gave the create_ticket call you want to \
check.";

/// `preview_ticket`: valid.
pub(crate) const PREVIEW_VALID: &str = "To create it, call create_ticket with these arguments and \
a new operation_id you invent (a UUID).";

/// `preview_ticket`: not valid.
pub(crate) const PREVIEW_INVALID: &str =
    "Correct the arguments listed in errors, then preview or create again.";

/// `get_ticket` found nothing.
pub(crate) const TICKET_NOT_FOUND: &str = "No ticket has this id; take ticket ids from \
create_ticket, get_operation_status or list_tickets results.";

/// The field error of `get_ticket` without a ticket_id.
pub(crate) const TICKET_ID_REQUIRED: &str = "ticket_id is required: take it from a create_ticket, \
get_operation_status or list_tickets result";

/// A read tool's arguments are invalid.
pub(crate) const READ_INVALID: &str = "Correct the arguments listed in errors and call again.";

/// An infrastructure failure (a JSON-RPC internal error).
pub(crate) const INTERNAL: &str = "The server failed and logged why; whether a ticket was created \
is unknown. Call get_operation_status with the same operation_id, or retry create_ticket with the \
same operation_id and arguments.";

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

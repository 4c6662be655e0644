//! The tool contract's wording. On this door the descriptions *are* the
//! mechanism that makes an agent invent a key and reuse it on retry, so they
//! are snapshotted, linted (provenance of identifiers, a token budget) and
//! hashed together, whichever file holds them (the read tools' here, each
//! write tool's in its own file under `actions/`, with everything else
//! that tool says): each tool's contract hash is published in its
//! `_meta` and recorded on every call's span and metrics, so a change in
//! agent behaviour can be traced to a change in wording.
//!
//! The results' wording (each `next_step`, and the field errors this door
//! writes itself) is `result_text.rs`: what a model reads at the moment it
//! decides whether to retry or to invent a new key. It is not hashed (it is
//! not part of `tools/list`); the response snapshots pin it. The JSON-RPC
//! error of a storage fault stays here: its code is part of the contract.

use kitchen::whole_seconds;
use kitchen::{StorageFault, Written};
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

/// `get_operation_status`.
pub const GET_OPERATION_STATUS: &str = "Find out what happened to a write call, by its \
operation_id and tool. Returns its result if it happened; if nothing was recorded, that call \
changed nothing and repeating it with the same operation_id and arguments is safe.";

/// `preview_ticket`.
pub const PREVIEW_TICKET: &str = "Check a ticket without creating it: validates the arguments and \
shows what create_ticket would make. Creates nothing and uses no operation_id.";

/// `get_ticket`.
pub const GET_TICKET: &str = "Read one ticket by its id, with its current version.";

/// `list_tickets`.
pub const LIST_TICKETS: &str =
    "List tickets, newest first, a page at a time, optionally of one project.";

/// `list_comments`.
pub const LIST_COMMENTS: &str = "List a ticket's comments, oldest first, a page at a time.";

/// The `operation_id` argument of every write.
pub const OPERATION_ID_ARG: &str =
    "Invented by you: one fresh UUID per intended effect, reused on each retry of it.";

/// The `operation_id` argument of `get_operation_status`.
pub const OPERATION_ID_LOOKUP_ARG: &str =
    "Taken from the call you want to check: the operation_id you invented for it.";

/// `confirm_new`'s description (create_ticket, add_comment).
pub const CONFIRM_NEW_ARG: &str =
    "true: you mean a second one like a recent one (possible_duplicate).";

/// The `action` argument of `get_operation_status`.
pub const ACTION_ARG: &str = "The tool that call was sent to (default create_ticket).";

/// The `project_id` argument.
pub const PROJECT_ID_ARG: &str =
    "Taken from the user's request or a ticket: a slug such as billing-api.";

/// The `label` argument of `add_label` and `remove_label`.
pub const LABEL_ARG: &str = "Such as needs-triage.";

/// The `label` argument of `list_tickets`.
pub const LABEL_FILTER_ARG: &str = "Only tickets with this label.";

/// The `ticket_id` argument.
pub const TICKET_ID_ARG: &str = "Taken from a ticket in an earlier result.";

/// The `cursor` argument.
pub const CURSOR_ARG: &str =
    "Taken from next_cursor of the previous page; omit for the first page.";

/// The `expected_version` argument of every write to an existing ticket
/// (`update_ticket`, `transition_ticket`, `add_comment`).
pub const EXPECTED_VERSION_ARG: &str = "The version you read; omit to skip the check.";

/// The `description` argument of `update_ticket`.
pub const NEW_DESCRIPTION_ARG: &str = "Longer text; null removes it.";

/// The `assignee` argument of `update_ticket`.
pub const ASSIGNEE_ARG: &str = "Who works on it; null unassigns.";

/// How the server introduces itself to a model.
pub const INSTRUCTIONS: &str = "Retry-safe tickets. Every write carries an operation_id you \
invent (a UUID) for the effect you intend. After an error, timeout or lost reply, retry with the \
same operation_id and arguments: you get the original result back, never a duplicate. When unsure whether a write happened, call \
get_operation_status.";

/// The JSON-RPC error code of a storage fault: the database cannot be used
/// right now (down, full, locked by another program): retry later, with
/// the same `operation_id`; `data` says why, whether anything was written
/// and when.
pub const DATABASE_UNAVAILABLE: i64 = -32003;

/// A storage fault (a JSON-RPC error with code
/// [`DATABASE_UNAVAILABLE`]): what
/// happened, whether anything was written, and when to call again.
pub fn database_unavailable(fault: StorageFault, written: Written) -> String {
    let wait = whole_seconds(fault.retry_after());
    match written {
        Written::Nothing => format!(
            "{} Nothing was written and no operation_id was used up: make the same call again \
             (the same operation_id, for a write) in {wait} s.",
            fault.sentence()
        ),
        Written::Unknown => format!(
            "{} Whether the write took effect is unknown: make the same call with the same \
             operation_id in {wait} s (it takes effect at most once), or call \
             get_operation_status.",
            fault.sentence()
        ),
    }
}

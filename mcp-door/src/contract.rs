//! The tool contract's wording. On this door the descriptions *are* the
//! mechanism that makes an agent invent a key and reuse it on retry, so they
//! live in one place, are snapshotted, linted (provenance of identifiers, a
//! token budget) and hashed: each tool's contract hash is published in its
//! `_meta` and recorded on every call's span and metrics, so a change in
//! agent behaviour can be traced to a change in wording.

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
operation_id. Returns the ticket if it was created. If nothing was recorded, no ticket was created \
and calling create_ticket again with the same operation_id and arguments is safe. When create_ticket \
answered status unknown, this checks with the ticket provider.";

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

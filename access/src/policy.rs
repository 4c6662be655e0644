//! The one policy of which scope each request needs, for both doors.
//!
//! Reads, status lookups and previews need `tickets:read`; the writes need
//! `tickets:write`. A write is named after its kitchen action on both
//! doors (the REST route's OpenAPI `operationId`, the MCP tool's name), so
//! a new write needs no line here; every read is listed by name. A test
//! checks that no route or tool is missing, so a new read cannot slip
//! through unlisted. Something not listed needs both scopes (it fails
//! closed), except an MCP tool that does not exist, which needs only
//! `tickets:read` (the call can do nothing but say so).

use kitchen::{Action, Scope, Scopes};

/// The REST routes behind authentication that only read, by their OpenAPI
/// `operationId`: they need `tickets:read`. Every write route's
/// `operationId` is its kitchen action's name ([`kitchen::Action`]).
pub const READ_OPERATIONS: &[&str] = &[
    "list_tickets",
    "get_ticket",
    "list_comments",
    "get_comment",
    "get_ticket_history",
    "list_operations",
    "get_operation",
    "get_stats",
];

/// The MCP tools that only read: they need `tickets:read`. Every write
/// tool is named after its kitchen action ([`kitchen::Action`]) and needs
/// `tickets:write`, so a new write needs no line here.
pub const READ_TOOLS: &[&str] = &[
    "get_operation_status",
    "preview_ticket",
    "get_ticket",
    "list_tickets",
    "list_comments",
];

/// The scope a call of the MCP tool `name` needs; `None` for a tool that
/// does not exist.
pub fn tool(name: &str) -> Option<Scope> {
    if Action::parse(name).is_some() {
        Some(Scope::Write)
    } else if READ_TOOLS.contains(&name) {
        Some(Scope::Read)
    } else {
        None
    }
}

/// MCP methods other than `tools/call` that act on a write (a task is a
/// write in flight): they need `tickets:write`. Every other method
/// (`initialize`, `tools/list`, `tasks/get`, notifications…) reads.
const WRITE_METHODS: &[&str] = &["tasks/cancel", "tasks/update"];

/// The scopes a REST request needs: that of the route whose OpenAPI
/// `operationId` is `operation` (`None`: no route, so both).
pub fn rest(operation: Option<&str>) -> Scopes {
    match operation {
        Some(name) if Action::parse(name).is_some() => Scopes::only(Scope::Write),
        Some(name) if READ_OPERATIONS.contains(&name) => Scopes::only(Scope::Read),
        _ => Scopes::ALL,
    }
}

/// The scopes an MCP message needs: its `method`, and for `tools/call`
/// the tool's name.
pub fn mcp(method: &str, tool: Option<&str>) -> Scopes {
    match (method, tool) {
        ("tools/call", Some(name)) => Scopes::only(self::tool(name).unwrap_or(Scope::Read)),
        (method, _) if WRITE_METHODS.contains(&method) => Scopes::only(Scope::Write),
        _ => Scopes::only(Scope::Read),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_read_and_writes_need_write() {
        let read = Scopes::only(Scope::Read);
        let write = Scopes::only(Scope::Write);
        assert_eq!(rest(Some("get_ticket")), read);
        assert_eq!(rest(Some("create_ticket")), write);
        assert_eq!(rest(Some("remove_label")), write);
        assert_eq!(rest(Some("get_operation")), read);
        assert_eq!(rest(Some("list_operations")), read);
        assert_eq!(rest(Some("delete_ticket")), Scopes::ALL, "unlisted");
        assert_eq!(rest(None), Scopes::ALL, "no route");
        assert_eq!(mcp("tools/call", Some("create_ticket")), write);
        assert_eq!(mcp("tools/call", Some("get_operation_status")), read);
        assert_eq!(mcp("tools/call", Some("preview_ticket")), read);
        assert_eq!(mcp("tools/call", Some("no_such_tool")), read);
        assert_eq!(mcp("tools/list", None), read);
        assert_eq!(mcp("initialize", None), read);
        assert_eq!(mcp("tasks/get", None), read);
        assert_eq!(mcp("tasks/cancel", None), write);
    }
}

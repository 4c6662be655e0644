//! The one policy of which scope each request needs, for both doors.
//!
//! Reads, status lookups and previews need `tickets:read`; the writes need
//! `tickets:write`. Every REST route and every read tool is listed here by
//! name, and every write tool is named after its kitchen action; a test
//! checks that no route or tool is missing, so a new one cannot slip
//! through unlisted. Something not listed needs both
//! scopes (it fails closed), except an MCP tool that does not exist, which
//! needs only `tickets:read` (the call can do nothing but say so).

use http::Method;
use kitchen::{Action, Scope, Scopes};

/// Every REST route behind authentication: method, path template (as the
/// router and the OpenAPI document spell it), the scope it needs.
pub const ROUTES: &[(Method, &str, Scope)] = &[
    (Method::POST, "/v1/tickets", Scope::Write),
    (Method::GET, "/v1/tickets", Scope::Read),
    (Method::GET, "/v1/tickets/{id}", Scope::Read),
    (Method::PATCH, "/v1/tickets/{id}", Scope::Write),
    (Method::POST, "/v1/tickets/{id}/transitions", Scope::Write),
    (Method::POST, "/v1/tickets/{id}/labels", Scope::Write),
    (
        Method::DELETE,
        "/v1/tickets/{id}/labels/{label}",
        Scope::Write,
    ),
    (Method::POST, "/v1/tickets/{id}/comments", Scope::Write),
    (Method::GET, "/v1/tickets/{id}/comments", Scope::Read),
    (
        Method::GET,
        "/v1/tickets/{id}/comments/{comment_id}",
        Scope::Read,
    ),
    (Method::GET, "/v1/tickets/{id}/history", Scope::Read),
    (Method::GET, "/v1/operations", Scope::Read),
    (Method::GET, "/v1/operations/{action}/{key}", Scope::Read),
    (Method::GET, "/v1/stats", Scope::Read),
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

/// The scopes a REST request needs: `method` on the route whose template
/// is `path`.
pub fn rest(method: &Method, path: &str) -> Scopes {
    ROUTES
        .iter()
        .find(|(m, p, _)| m == method && *p == path)
        .map_or(Scopes::ALL, |(_, _, scope)| Scopes::only(*scope))
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
        assert_eq!(rest(&Method::GET, "/v1/tickets/{id}"), read);
        assert_eq!(rest(&Method::POST, "/v1/tickets"), write);
        assert_eq!(rest(&Method::GET, "/v1/operations/{action}/{key}"), read);
        assert_eq!(rest(&Method::GET, "/v1/operations"), read);
        assert_eq!(
            rest(&Method::DELETE, "/v1/tickets/{id}"),
            Scopes::ALL,
            "unlisted"
        );
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

//! The one policy of which scope each request needs, for both doors.
//!
//! Reads, status lookups and previews need `tickets:read`; the four writes
//! need `tickets:write`. Every REST route and every MCP tool is listed here
//! by name; tests in each door check that none is missing, so a new route
//! or tool cannot slip through unlisted. Something not listed needs both
//! scopes (it fails closed), except an MCP tool that does not exist, which
//! needs only `tickets:read` (the call can do nothing but say so).

use http::Method;
use kitchen::{Scope, Scopes};

/// Every REST route behind authentication: method, path template (as the
/// router and the OpenAPI document spell it), the scope it needs.
pub const ROUTES: &[(Method, &str, Scope)] = &[
    (Method::POST, "/v1/tickets", Scope::Write),
    (Method::GET, "/v1/tickets", Scope::Read),
    (Method::GET, "/v1/tickets/{id}", Scope::Read),
    (Method::PATCH, "/v1/tickets/{id}", Scope::Write),
    (Method::POST, "/v1/tickets/{id}/transitions", Scope::Write),
    (Method::POST, "/v1/tickets/{id}/comments", Scope::Write),
    (Method::GET, "/v1/tickets/{id}/comments", Scope::Read),
    (
        Method::GET,
        "/v1/tickets/{id}/comments/{comment_id}",
        Scope::Read,
    ),
    (Method::GET, "/v1/tickets/{id}/history", Scope::Read),
    (Method::GET, "/v1/operations/{action}/{key}", Scope::Read),
    (Method::GET, "/v1/stats", Scope::Read),
];

/// Every MCP tool and the scope a call of it needs.
pub const TOOLS: &[(&str, Scope)] = &[
    ("create_ticket", Scope::Write),
    ("update_ticket", Scope::Write),
    ("transition_ticket", Scope::Write),
    ("add_comment", Scope::Write),
    ("get_operation_status", Scope::Read),
    ("preview_ticket", Scope::Read),
    ("get_ticket", Scope::Read),
    ("list_tickets", Scope::Read),
    ("list_comments", Scope::Read),
];

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
        ("tools/call", Some(tool)) => TOOLS
            .iter()
            .find(|(name, _)| *name == tool)
            .map_or(Scopes::only(Scope::Read), |(_, scope)| Scopes::only(*scope)),
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

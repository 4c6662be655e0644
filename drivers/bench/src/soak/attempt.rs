//! One create attempt through either door, sorted by what it tells a
//! retrying client: acknowledged (a ticket id), unanswered (retry the same
//! key with the same request), or refused (a definite answer that is not a
//! ticket, which a soak of well-formed creates should never get).
//!
//! The soak needs its own sorting, not the double-fire driver's: here a
//! 5xx, an MCP internal or timeout error, a cut connection and
//! `in_progress` are all the same thing, "no answer yet".

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use super::keys;
use double_fire::Door;

/// JSON-RPC codes under which the outcome of the call is unknown: the
/// server's internal error and its request timeout (docs/contract.md).
const MCP_OUTCOME_UNKNOWN: [i64; 2] = [-32603, -32001];

/// What one attempt said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Created or replayed: the ticket the key stands for.
    Acknowledged(Uuid),
    /// No definite answer: a connection error or cut, a timeout, a 5xx, an
    /// MCP internal or timeout error, or another attempt holding the key.
    Unanswered(String),
    /// A definite answer that is not a ticket (a conflict, a validation
    /// or auth refusal).
    Refused(String),
}

/// Sends creates to one server through either door.
#[derive(Debug, Clone)]
pub(crate) struct DoorClient {
    http: reqwest::Client,
    base_url: String,
    token: String,
}

impl DoorClient {
    /// A client of the server at `base_url`, giving up on an attempt after
    /// `timeout` (the attempt is then unanswered).
    pub(crate) fn new(base_url: &str, token: &str, timeout: Duration) -> anyhow::Result<Self> {
        Ok(Self {
            http: reqwest::Client::builder().timeout(timeout).build()?,
            base_url: base_url.to_owned(),
            token: token.to_owned(),
        })
    }

    /// Creates the ticket titled `title` under `key` through `door`.
    pub(crate) async fn create(&self, door: Door, key: &str, title: &str) -> Attempt {
        let sent = match door {
            Door::Rest => self.create_rest(key, title).await,
            Door::Mcp => self.create_mcp(key, title).await,
        };
        // Every transport failure (refused or reset connection, timeout,
        // a body cut short) leaves the outcome unknown.
        sent.unwrap_or_else(|e| Attempt::Unanswered(e.to_string()))
    }

    async fn create_rest(&self, key: &str, title: &str) -> reqwest::Result<Attempt> {
        let response = self
            .http
            .post(format!("{}/v1/tickets", self.base_url))
            .bearer_auth(&self.token)
            .header("Idempotency-Key", key)
            .json(&json!({"project_id": keys::PROJECT, "title": title}))
            .send()
            .await?;
        let status = response.status();
        Ok(sort_rest(status, &json_of(&response.bytes().await?)))
    }

    async fn create_mcp(&self, key: &str, title: &str) -> reqwest::Result<Attempt> {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "create_ticket", "arguments":
                {"operation_id": key, "project_id": keys::PROJECT, "title": title}}});
        let response = self
            .http
            .post(format!("{}/mcp", self.base_url))
            .bearer_auth(&self.token)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&call)
            .send()
            .await?;
        let status = response.status();
        Ok(sort_mcp(status, &json_of(&response.bytes().await?)))
    }
}

/// A body read to its end, as JSON (`null` when it is not: a bare error
/// from a layer in front of the door). A body cut short never gets here:
/// reading it failed, and the attempt is unanswered.
fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

/// Sorts a REST answer: 201 (created or replayed) or 200 (an expired
/// replay) with the ticket, 409 `operation-in-progress` or a 5xx without.
fn sort_rest(status: StatusCode, body: &Value) -> Attempt {
    let problem = body["type"]
        .as_str()
        .map(|t| t.rsplit('/').next().unwrap_or(t))
        .unwrap_or_default();
    match status.as_u16() {
        200 | 201 => ticket_id(&body["id"], body),
        409 if problem == "operation-in-progress" => Attempt::Unanswered(problem.into()),
        s if status.is_server_error() => Attempt::Unanswered(format!("{s} {problem}")),
        s => Attempt::Refused(format!("{s} {problem}")),
    }
}

/// Sorts an MCP answer: `created`, `replayed` or `expired` with the
/// ticket; `in_progress`, an HTTP 5xx, an internal or timeout error
/// without.
fn sort_mcp(status: StatusCode, reply: &Value) -> Attempt {
    if status.is_server_error() {
        return Attempt::Unanswered(format!("HTTP {status}"));
    }
    if let Some(error) = reply.get("error") {
        return match error["code"].as_i64() {
            Some(code) if MCP_OUTCOME_UNKNOWN.contains(&code) => {
                Attempt::Unanswered(format!("JSON-RPC error {error}"))
            }
            _ => Attempt::Refused(format!("JSON-RPC error {error}")),
        };
    }
    let result = &reply["result"]["structuredContent"];
    match result["status"].as_str() {
        Some("created" | "replayed" | "expired") => ticket_id(&result["ticket"]["id"], reply),
        Some("in_progress") => Attempt::Unanswered("in_progress".into()),
        Some(other) => Attempt::Refused(other.to_owned()),
        None => Attempt::Refused(format!("HTTP {status}, no tool result: {reply}")),
    }
}

/// The ticket id of an answer that claims to carry one; an answer that
/// claims success without an id is refused (it cannot be checked).
fn ticket_id(id: &Value, answer: &Value) -> Attempt {
    match id.as_str().map(Uuid::parse_str) {
        Some(Ok(id)) => Attempt::Acknowledged(id),
        _ => Attempt::Refused(format!("a success without a ticket id: {answer}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0193a4f2-7c1e-7000-8000-000000000001";

    #[test]
    fn rest_answers_are_sorted_by_what_a_retrying_client_must_do() {
        let ticket = json!({"id": ID});
        let id = Uuid::parse_str(ID).expect("a uuid");
        assert_eq!(
            sort_rest(StatusCode::CREATED, &ticket),
            Attempt::Acknowledged(id)
        );
        let busy = json!({"type": "https://x/problems/operation-in-progress"});
        assert!(matches!(
            sort_rest(StatusCode::CONFLICT, &busy),
            Attempt::Unanswered(_)
        ));
        let timeout = json!({"type": "https://x/problems/timeout"});
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        assert!(matches!(
            sort_rest(unavailable, &timeout),
            Attempt::Unanswered(_)
        ));
        let reused = json!({"type": "https://x/problems/idempotency-key-reused"});
        let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
        assert!(matches!(
            sort_rest(unprocessable, &reused),
            Attempt::Refused(_)
        ));
    }

    #[test]
    fn mcp_answers_are_sorted_by_what_a_retrying_client_must_do() {
        let id = Uuid::parse_str(ID).expect("a uuid");
        let replayed = json!({"result": {"structuredContent":
            {"status": "replayed", "ticket": {"id": ID}}}});
        assert_eq!(
            sort_mcp(StatusCode::OK, &replayed),
            Attempt::Acknowledged(id)
        );
        let timeout = json!({"error": {"code": -32001, "message": "timeout"}});
        assert!(matches!(
            sort_mcp(StatusCode::OK, &timeout),
            Attempt::Unanswered(_)
        ));
        let conflict = json!({"result": {"structuredContent": {"status": "conflict"}}});
        assert!(matches!(
            sort_mcp(StatusCode::OK, &conflict),
            Attempt::Refused(_)
        ));
    }
}

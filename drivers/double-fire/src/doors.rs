//! How the driver calls each door, and what it makes of the answer.
//!
//! The MCP door is called with plain JSON-RPC over HTTP (the server is
//! stateless, so no session or handshake is needed), which also lets the
//! fault proxy sit in front of it like in front of REST.

use std::fmt;

use kitchen::Action;
use serde_json::{Value, json};

use crate::write::{Ticket, Write};

/// One of the two doors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// The REST routes, with `Idempotency-Key`.
    Rest,
    /// `tools/call` of the action's tool, with `operation_id`.
    Mcp,
}

impl Door {
    /// Both doors.
    pub const BOTH: [Door; 2] = [Door::Rest, Door::Mcp];

    /// The other door.
    pub fn other(self) -> Door {
        match self {
            Door::Rest => Door::Mcp,
            Door::Mcp => Door::Rest,
        }
    }
}

impl fmt::Display for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Door::Rest => "rest",
            Door::Mcp => "mcp",
        })
    }
}

/// What a write attempt came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This attempt performed the write.
    Created {
        /// The id of what the write made or changed: the ticket, or for
        /// `add_comment` the comment.
        id: String,
        /// The exact body (REST) or structured ticket or comment (MCP)
        /// received.
        body: String,
    },
    /// The first attempt's answer, replayed.
    Replayed {
        /// The id of what the write made or changed: the ticket, or for
        /// `add_comment` the comment.
        id: String,
        /// The exact body (REST) or structured ticket or comment (MCP)
        /// received.
        body: String,
    },
    /// Past the key's replay window, the same request again: nothing new
    /// was made, and the answer is the resource as it is now (REST `200`
    /// with `Idempotent-Replayed: expired`, MCP `status: expired`).
    Expired {
        /// The id of what the first attempt made or changed.
        id: String,
        /// The exact body (REST) or structured ticket or comment (MCP)
        /// received: the resource now, not the first answer.
        body: String,
    },
    /// The key names another request.
    Conflict,
    /// Another attempt holds the key.
    InProgress,
    /// (Remote backend.) The provider's answer was lost; the service is
    /// reconciling: REST `202`, MCP `status: unknown`.
    Unknown,
    /// (Remote backend.) The provider made nothing (refused, or could not
    /// be reached); the key is not spent: REST `422 provider-rejected` or
    /// `503 provider-unavailable`, MCP `status: not_created`.
    NotCreated(String),
    /// Refused: bad input, missing key, auth, a version or status the
    /// ticket is not at (the status and problem type, or the tool status).
    Refused(String),
    /// No answer at all: the connection failed or was cut.
    Lost(String),
}

impl Answer {
    /// The id of what the write made or changed, when the answer carries one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Answer::Created { id, .. }
            | Answer::Replayed { id, .. }
            | Answer::Expired { id, .. } => Some(id),
            Answer::Conflict
            | Answer::InProgress
            | Answer::Unknown
            | Answer::NotCreated(_)
            | Answer::Refused(_)
            | Answer::Lost(_) => None,
        }
    }

    /// The body that carried it.
    pub fn body(&self) -> Option<&str> {
        match self {
            Answer::Created { body, .. }
            | Answer::Replayed { body, .. }
            | Answer::Expired { body, .. } => Some(body),
            Answer::Conflict
            | Answer::InProgress
            | Answer::Unknown
            | Answer::NotCreated(_)
            | Answer::Refused(_)
            | Answer::Lost(_) => None,
        }
    }
}

/// An answer with what it says about its key beyond the outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The outcome.
    pub answer: Answer,
    /// Until when the key replays its first answer, as the server
    /// advertised it: REST `Idempotency-Replayable-Until`, MCP
    /// `replayable_until` (RFC 3339, unparsed: the check says if it is not).
    pub replayable_until: Option<String>,
    /// REST `Location` (none on MCP).
    pub location: Option<String>,
}

impl Reply {
    fn bare(answer: Answer) -> Self {
        Self {
            answer,
            replayable_until: None,
            location: None,
        }
    }
}

/// The last segment of a problem document's `type`, e.g. `version-mismatch`.
fn problem_type(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v["type"]
                .as_str()
                .map(|t| t.rsplit('/').next().unwrap_or(t).to_owned())
        })
        .unwrap_or_default()
}

/// An HTTP client for both doors.
#[derive(Debug, Clone)]
pub struct Caller {
    http: reqwest::Client,
}

/// Longest the driver waits for one answer: well past the server's own
/// request timeout (30 s by default), so a server that never answers is a
/// lost answer and a failed check that says so, not a driver that hangs.
const ANSWER_BOUND: std::time::Duration = std::time::Duration::from_secs(90);

impl Default for Caller {
    fn default() -> Self {
        let http = reqwest::Client::builder()
            .timeout(ANSWER_BOUND)
            .build()
            .unwrap_or_default();
        Self { http }
    }
}

impl Caller {
    /// Creates `ticket` through `door` at `base`, with `key` (or none).
    pub async fn create(
        &self,
        base: &str,
        door: Door,
        token: &str,
        key: Option<&str>,
        ticket: &Ticket,
    ) -> Answer {
        self.write(base, door, token, key, &Write::create(ticket))
            .await
    }

    /// Sends `write` through `door` at `base`, with `key` (or none).
    pub async fn write(
        &self,
        base: &str,
        door: Door,
        token: &str,
        key: Option<&str>,
        write: &Write,
    ) -> Answer {
        self.write_reply(base, door, token, key, write).await.answer
    }

    /// Sends `write` like [`Caller::write`], keeping the replay horizon and
    /// `Location` the answer carried.
    pub async fn write_reply(
        &self,
        base: &str,
        door: Door,
        token: &str,
        key: Option<&str>,
        write: &Write,
    ) -> Reply {
        match door {
            Door::Rest => self.write_rest(base, token, key, write).await,
            Door::Mcp => self.write_mcp(base, token, key, write).await,
        }
    }

    async fn write_rest(&self, base: &str, token: &str, key: Option<&str>, write: &Write) -> Reply {
        let rest = write.rest();
        let mut request = self
            .http
            .request(rest.method.clone(), format!("{base}{}", rest.path))
            .bearer_auth(token);
        if let Some((content_type, body)) = &rest.body {
            request = request
                .header("Content-Type", *content_type)
                .body(body.to_string());
        }
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        if let Some(version) = rest.if_match {
            request = request.header("If-Match", format!("\"{version}\""));
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Reply::bare(Answer::Lost(e.to_string())),
        };
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let replayed = header("idempotent-replayed");
        let replayable_until = header("idempotency-replayable-until");
        let location = header("location");
        let body = match response.text().await {
            Ok(b) => b,
            Err(e) => return Reply::bare(Answer::Lost(e.to_string())),
        };
        let id = || {
            serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["id"].as_str().map(str::to_owned))
                .unwrap_or_default()
        };
        let kind = problem_type(&body);
        let answer = match (status, replayed.as_deref(), kind.as_str()) {
            // Past the replay window: 200 with the resource as it is now,
            // whatever status the first answer had.
            (200, Some("expired"), _) => Answer::Expired {
                id: id(),
                body: body.clone(),
            },
            (s, Some("true"), _) if s == rest.performed => Answer::Replayed {
                id: id(),
                body: body.clone(),
            },
            (s, _, _) if s == rest.performed => Answer::Created {
                id: id(),
                body: body.clone(),
            },
            (202, _, _) => Answer::Unknown,
            (422, _, "idempotency-key-reused") => Answer::Conflict,
            (409, _, "operation-in-progress") => Answer::InProgress,
            (422, _, "provider-rejected") | (503, _, "provider-unavailable") => {
                Answer::NotCreated(kind)
            }
            _ => Answer::Refused(format!("{status} {kind}").trim_end().to_owned()),
        };
        Reply {
            answer,
            replayable_until,
            location,
        }
    }

    async fn write_mcp(&self, base: &str, token: &str, key: Option<&str>, write: &Write) -> Reply {
        let mut arguments = write.mcp_arguments();
        if let Some(key) = key {
            arguments["operation_id"] = json!(key);
        }
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": write.action().as_str(), "arguments": arguments}});
        let response = self
            .http
            .post(format!("{base}/mcp"))
            .bearer_auth(token)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&call)
            .send()
            .await;
        let response = match response {
            Ok(r) => r,
            Err(e) => return Reply::bare(Answer::Lost(e.to_string())),
        };
        if !response.status().is_success() {
            return Reply::bare(Answer::Refused(response.status().as_u16().to_string()));
        }
        let reply: Value = match response.json().await {
            Ok(v) => v,
            Err(e) => return Reply::bare(Answer::Lost(e.to_string())),
        };
        if let Some(error) = reply.get("error") {
            return Reply::bare(Answer::Refused(format!("JSON-RPC error {error}")));
        }
        let result = &reply["result"]["structuredContent"];
        let resource = &result[write.mcp_resource()];
        let id = resource["id"].as_str().unwrap_or_default().to_owned();
        let body = resource.to_string();
        let answer = match result["status"].as_str() {
            // `created` for creates and comments, `updated` for edits and
            // transitions: either way this attempt performed the write.
            Some("created" | "updated") => Answer::Created { id, body },
            Some("replayed") => Answer::Replayed { id, body },
            Some("expired") => Answer::Expired { id, body },
            Some("conflict") => Answer::Conflict,
            Some("in_progress") => Answer::InProgress,
            Some("unknown") => Answer::Unknown,
            Some("not_created") => Answer::NotCreated(result["reason"].to_string()),
            Some(other) => Answer::Refused(other.to_owned()),
            None => Answer::Refused(format!("no tool result: {reply}")),
        };
        Reply {
            answer,
            replayable_until: result["replayable_until"].as_str().map(str::to_owned),
            location: None,
        }
    }

    /// Every item of a paged list at `path` (its `field` array), following
    /// `next_cursor` to the end.
    async fn all_pages(
        &self,
        base: &str,
        token: &str,
        path: &str,
        field: &str,
    ) -> anyhow::Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        let separator = if path.contains('?') { '&' } else { '?' };
        loop {
            let mut url = format!("{base}{path}{separator}limit=200");
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let page: Value = self
                .http
                .get(url)
                .bearer_auth(token)
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            items.extend(page[field].as_array().into_iter().flatten().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(items),
            }
        }
    }

    /// How many tickets of `project` the tenant has: the server's state,
    /// read through the list API, never inferred from answers.
    pub async fn count(
        &self,
        base: &str,
        token: &str,
        project: &str,
    ) -> anyhow::Result<Vec<String>> {
        let tickets = self
            .all_pages(
                base,
                token,
                &format!("/v1/tickets?project_id={project}"),
                "tickets",
            )
            .await?;
        Ok(tickets.iter().map(|t| id_of(t).to_owned()).collect())
    }

    /// A ticket's version, read from the server.
    pub async fn version(&self, base: &str, token: &str, ticket: &str) -> anyhow::Result<i64> {
        let ticket: Value = self
            .http
            .get(format!("{base}/v1/tickets/{ticket}"))
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        ticket["version"]
            .as_i64()
            .ok_or_else(|| anyhow::anyhow!("the ticket has no version: {ticket}"))
    }

    /// The provider's id of a ticket (remote backend), read from the server;
    /// `None` for a ticket kept only by the server.
    pub async fn provider_ticket_id(
        &self,
        base: &str,
        token: &str,
        ticket: &str,
    ) -> anyhow::Result<Option<String>> {
        let ticket: Value = self
            .http
            .get(format!("{base}/v1/tickets/{ticket}"))
            .bearer_auth(token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        Ok(ticket["provider_ticket_id"].as_str().map(str::to_owned))
    }

    /// The ids of a ticket's history entries written by `action`, oldest
    /// first.
    pub async fn history(
        &self,
        base: &str,
        token: &str,
        ticket: &str,
        action: Action,
    ) -> anyhow::Result<Vec<String>> {
        let entries = self
            .all_pages(
                base,
                token,
                &format!("/v1/tickets/{ticket}/history"),
                "entries",
            )
            .await?;
        Ok(entries
            .iter()
            .filter(|e| e["action"] == action.as_str())
            .map(|e| id_of(e).to_owned())
            .collect())
    }

    /// The ids of a ticket's comments, oldest first.
    pub async fn comments(
        &self,
        base: &str,
        token: &str,
        ticket: &str,
    ) -> anyhow::Result<Vec<String>> {
        let comments = self
            .all_pages(
                base,
                token,
                &format!("/v1/tickets/{ticket}/comments"),
                "comments",
            )
            .await?;
        Ok(comments.iter().map(|c| id_of(c).to_owned()).collect())
    }

    /// Waits until `base/readyz` answers 200, up to `tries` × 100 ms.
    pub async fn wait_ready(&self, base: &str, tries: u32) -> bool {
        for _ in 0..tries {
            if let Ok(r) = self.http.get(format!("{base}/readyz")).send().await
                && r.status().is_success()
            {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        false
    }
}

fn id_of(item: &Value) -> &str {
    item["id"].as_str().unwrap_or_default()
}

//! How the driver calls each door, and what it makes of the answer.
//!
//! The MCP door is called with plain JSON-RPC over HTTP (the server is
//! stateless, so no session or handshake is needed), which also lets the
//! fault proxy sit in front of it like in front of REST.

use std::fmt;

use serde_json::{Value, json};

/// One of the two doors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `POST /v1/tickets` with `Idempotency-Key`.
    Rest,
    /// `tools/call create_ticket` with `operation_id`.
    Mcp,
}

impl Door {
    /// Both doors.
    pub const BOTH: [Door; 2] = [Door::Rest, Door::Mcp];
}

impl fmt::Display for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Door::Rest => "rest",
            Door::Mcp => "mcp",
        })
    }
}

/// What a create attempt came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A new ticket.
    Created {
        /// Its id.
        ticket: String,
        /// The exact body (REST) or structured ticket (MCP) received.
        body: String,
    },
    /// The original ticket, replayed.
    Replayed {
        /// Its id.
        ticket: String,
        /// The exact body (REST) or structured ticket (MCP) received.
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
    /// Refused: bad input, missing key, auth (the status or tool status).
    Refused(String),
    /// No answer at all: the connection failed or was cut.
    Lost(String),
}

impl Answer {
    /// The ticket id, when the answer carries one.
    pub fn ticket(&self) -> Option<&str> {
        match self {
            Answer::Created { ticket, .. } | Answer::Replayed { ticket, .. } => Some(ticket),
            _ => None,
        }
    }

    /// The body that carried the ticket.
    pub fn body(&self) -> Option<&str> {
        match self {
            Answer::Created { body, .. } | Answer::Replayed { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// A ticket to ask for.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// The project slug (unique per check, so counts are exact).
    pub project_id: String,
    /// The title.
    pub title: String,
}

/// An HTTP client for both doors.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    http: reqwest::Client,
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
        match door {
            Door::Rest => self.create_rest(base, token, key, ticket).await,
            Door::Mcp => self.create_mcp(base, token, key, ticket).await,
        }
    }

    async fn create_rest(
        &self,
        base: &str,
        token: &str,
        key: Option<&str>,
        ticket: &Ticket,
    ) -> Answer {
        let mut request = self
            .http
            .post(format!("{base}/v1/tickets"))
            .bearer_auth(token)
            .json(&json!({"project_id": ticket.project_id, "title": ticket.title}));
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Answer::Lost(e.to_string()),
        };
        let status = response.status().as_u16();
        let replayed = response
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true");
        let body = match response.text().await {
            Ok(b) => b,
            Err(e) => return Answer::Lost(e.to_string()),
        };
        match status {
            201 => {
                let ticket = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| v["id"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                if replayed {
                    Answer::Replayed { ticket, body }
                } else {
                    Answer::Created { ticket, body }
                }
            }
            202 => Answer::Unknown,
            422 | 503 => {
                let kind = serde_json::from_str::<Value>(&body)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                if kind.ends_with("/provider-rejected") || kind.ends_with("/provider-unavailable") {
                    Answer::NotCreated(kind)
                } else if status == 422 {
                    Answer::Conflict
                } else {
                    Answer::Refused(status.to_string())
                }
            }
            409 => Answer::InProgress,
            other => Answer::Refused(other.to_string()),
        }
    }

    async fn create_mcp(
        &self,
        base: &str,
        token: &str,
        key: Option<&str>,
        ticket: &Ticket,
    ) -> Answer {
        let mut arguments = json!({"project_id": ticket.project_id, "title": ticket.title});
        if let Some(key) = key {
            arguments["operation_id"] = json!(key);
        }
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "create_ticket", "arguments": arguments}});
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
            Err(e) => return Answer::Lost(e.to_string()),
        };
        if !response.status().is_success() {
            return Answer::Refused(response.status().as_u16().to_string());
        }
        let reply: Value = match response.json().await {
            Ok(v) => v,
            Err(e) => return Answer::Lost(e.to_string()),
        };
        let result = &reply["result"]["structuredContent"];
        let ticket_body = result["ticket"].to_string();
        let ticket = result["ticket"]["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match result["status"].as_str() {
            Some("created") => Answer::Created {
                ticket,
                body: ticket_body,
            },
            Some("replayed") => Answer::Replayed {
                ticket,
                body: ticket_body,
            },
            Some("conflict") => Answer::Conflict,
            Some("in_progress") => Answer::InProgress,
            Some("unknown") => Answer::Unknown,
            Some("not_created") => Answer::NotCreated(result["reason"].to_string()),
            Some(other) => Answer::Refused(other.to_owned()),
            None => Answer::Refused(format!("no tool result: {reply}")),
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
        let mut ids = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{base}/v1/tickets?limit=200&project_id={project}");
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
            for t in page["tickets"].as_array().into_iter().flatten() {
                ids.push(t["id"].as_str().unwrap_or_default().to_owned());
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(ids),
            }
        }
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

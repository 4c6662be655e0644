//! The MCP door: the ticket service as tools for agents.
//!
//! MCP has no protocol-level idempotency key, and a JSON-RPC id changes on
//! every attempt, so the key lives in the tool contract: every write tool
//! takes an `operation_id` the agent invents and reuses on retry, and its
//! description teaches exactly that. `idempotentHint: true` is only true
//! because the kitchen enforces it. The door translates; it decides nothing
//! and writes no SQL. It shares the REST door's key namespace: both call the
//! kitchen's actions, one namespace per action.
//!
//! # Layout
//!
//! - [`TicketTools`] (`tools`): the rmcp server handler (with `tasks/*`)
//!   over eleven tools (five reads, six writes), whose router it joins from the files below, each
//!   tool with its contract hash; and the caller of a call.
//! - `actions/`: one file per write tool (`create_ticket`,
//!   `update_ticket`, `transition_ticket`, `add_comment`, `add_label`,
//!   `remove_label`), as the kitchen has one per action: the tool's
//!   description, definition and arguments, and its `WriteTool`, how its
//!   arguments become the kitchen's request and its outcome the tool's
//!   result; and the list of them. Adding a write is adding a file here.
//! - `writes`: what every write shares: the operation_id read first and
//!   alone, every argument's problem reported at once with the kitchen's
//!   own, the call's life (caller, attempt, the wait for its outcome or a
//!   task, measurements), the answer to the kitchen's outcome.
//! - `reads`: the five read tools (`get_operation_status`,
//!   `preview_ticket`, `get_ticket`, `list_tickets`, `list_comments`).
//! - `fields`: how the arguments several tools share are read (ticket_id,
//!   expected_version, limit and cursor, a missing required argument).
//! - `outcomes`: the one outcome translation (what a write's outcome
//!   becomes as a tool result) and the builders of tool results and errors.
//! - `failure` ([`FAILURE_META`]): the failure record every result that
//!   shows no effect carries in its `_meta` (retryable, not before when,
//!   the tool and operation), in the shape of the MCP proposal SEP-3313.
//! - [`http_endpoint`]: Streamable HTTP, stateless (any instance answers any
//!   call), for mounting at `/mcp` behind the bearer-token middleware; its
//!   edge ([`http_edge`]) answers every malformed message, refusal and
//!   timeout in JSON-RPC before or instead of a tool, and checks the
//!   caller's scopes against the message (`access::policy`).
//! - `tasks` ([`TaskSettings`]): MCP tasks over HTTP. A client that declares
//!   the tasks extension (2026-07-28) gets a task for a write whose outcome
//!   is not final within a short bound; its id names the operation record,
//!   so `tasks/get` answers on any instance, after a restart too.
//! - [`serve_stdio`] (and [`serve_stream`]): stdio, for desktop agents; the
//!   tenant is fixed at start, from the token given in the environment. No
//!   tasks: a write's answer is waited for.
//! - `vocabulary`: what each write is called in the door's sentences
//!   ("ticket", "change", "comment", what a second try could do, its
//!   result's shape): the door's one per-action table of words, a leaf.
//! - [`contract`]: the read tools' descriptions, the instructions, and the
//!   contract hash each tool publishes in `_meta` and stamps on its calls' telemetry.
//! - `result_text`: what results say (each `next_step`, this door's own
//!   field errors, a task's messages), read at the moment a model decides
//!   whether to retry.
//! - [`OpenWorld`] (`open_world`): which tools reach a provider on this
//!   deployment's backend (their `openWorldHint`), read from the kitchen
//!   once when the tools are built.
//! - `args`: reading a tool's arguments totally (each write tool's own
//!   argument struct is in its file under `actions/`; the read tools' are
//!   here); `results`: structured results.

use std::sync::Arc;

use access::Challenges;
use kitchen::{Caller, Kitchen};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use telemetry::Metrics;

mod actions;
mod args;
pub mod contract;
mod failure;
mod fields;
pub mod http_edge;
mod open_world;
mod outcomes;
mod reads;
mod result_text;
mod results;
mod tasks;
mod tools;
mod vocabulary;
mod writes;

pub use failure::FAILURE_META;
pub use http_edge::{McpEndpoint, McpLimits};
pub use open_world::OpenWorld;
pub use tasks::TaskSettings;
pub use tools::{TenantSource, TicketTools};

/// Host and Origin checks of the HTTP transport (DNS-rebinding protection).
#[derive(Debug, Clone)]
pub struct McpHttpConfig {
    /// `Host` values accepted (a name without a port matches any port).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted from browsers (`scheme://host[:port]`,
    /// `:*` for any port). Requests without an `Origin` are not affected.
    pub allowed_origins: Vec<String>,
}

impl Default for McpHttpConfig {
    /// Loopback only.
    fn default() -> Self {
        Self {
            allowed_hosts: ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec(),
            allowed_origins: ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// The `/mcp` endpoint: the Streamable HTTP service behind its JSON-RPC
/// edge (body limit, message checks, timeout, refusals in JSON-RPC; see
/// [`http_edge`]). The caller must be in the request's extensions (put
/// there by the auth middleware); a message its scopes do not cover is
/// answered `403` with `challenges`' step-up challenge. A client that
/// declares the tasks extension gets a task for a write not final within
/// `tasks.bound`.
pub fn http_endpoint(
    kitchen: Kitchen,
    metrics: Metrics,
    config: &McpHttpConfig,
    limits: McpLimits,
    tasks: TaskSettings,
    challenges: Challenges,
) -> McpEndpoint {
    // The bound stays under half the request timeout, so that a client that
    // opted into tasks gets its task before the edge's timeout error.
    let tasks = tasks.within(limits.request_timeout);
    McpEndpoint::new(
        http_service(kitchen, metrics.clone(), config, tasks),
        limits,
        challenges,
        metrics,
    )
}

/// The Streamable HTTP service, stateless: no sessions, so any instance can
/// answer any call, for both the 2026-07-28 protocol (no initialize) and the
/// older initialize-based revisions. Replies are plain JSON.
fn http_service(
    kitchen: Kitchen,
    metrics: Metrics,
    config: &McpHttpConfig,
    tasks: TaskSettings,
) -> StreamableHttpService<TicketTools, NeverSessionManager> {
    let transport = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(config.allowed_hosts.clone())
        .with_allowed_origins(config.allowed_origins.clone());
    // Built once; each request gets a clone (handles to the kitchen, the
    // metrics and the shared tool router).
    let tools = TicketTools::new(kitchen, TenantSource::Http, metrics).with_tasks(tasks);
    StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        transport,
    )
}

/// Serves the tools over stdin/stdout for `caller` (its tenant, and its
/// token in the history of its writes) until the client closes the stream.
/// Logs must go to stderr: stdout carries the protocol.
pub async fn serve_stdio(
    kitchen: Kitchen,
    caller: Caller,
    metrics: Metrics,
) -> std::io::Result<()> {
    serve_stream(kitchen, caller, metrics, rmcp::transport::stdio()).await
}

/// Serves the tools for `caller` over any byte stream pair (stdio in
/// production, an in-memory pipe in tests) until the client closes it.
pub async fn serve_stream<R, W>(
    kitchen: Kitchen,
    caller: Caller,
    metrics: Metrics,
    (read, write): (R, W),
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let service = TicketTools::new(kitchen, TenantSource::Fixed(caller), metrics)
        .serve((read, write))
        .await
        .map_err(std::io::Error::other)?;
    service.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

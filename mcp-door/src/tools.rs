//! The MCP server: [`TicketTools`] (the kitchen, where callers come from,
//! the metrics, the task settings and the one shared tool router), the
//! router's contract hashes, the caller of a call, and the rmcp handler
//! with `tasks/*`. The tools themselves are in `reads` and `actions/`;
//! what every write shares, in `writes`.

use std::sync::{Arc, OnceLock};

use kitchen::{Actor, Caller, Kitchen, Scopes, Tenant};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, CancelTaskParams, GetTaskParams, GetTaskResult, Implementation,
    ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool_handler};
use telemetry::Metrics;

use crate::contract;
use crate::open_world::OpenWorld;
use crate::tasks::{self, TaskSettings};

/// The scopes a call of `tool` needs (the one policy, `access::policy`).
pub(crate) fn tool_needs(tool: &str) -> Scopes {
    access::policy::mcp("tools/call", Some(tool))
}

/// Where a call's caller comes from. Never from a tool argument.
#[derive(Debug, Clone)]
pub enum TenantSource {
    /// Over HTTP: the bearer-token middleware put the [`Caller`] into the
    /// request's extensions.
    Http,
    /// Over stdio: the caller of the token given at start-up.
    Fixed(Caller),
}

/// Who is calling: the tenant every query is scoped by, and the actor its
/// writes are recorded as (the history shows the token).
#[derive(Debug, Clone)]
pub(crate) struct Who {
    pub(crate) tenant: Tenant,
    pub(crate) actor: Actor,
}

impl From<&Caller> for Who {
    fn from(caller: &Caller) -> Self {
        Self {
            tenant: caller.tenant.clone(),
            actor: Actor::from(caller),
        }
    }
}

/// The MCP server: nine tools over one kitchen.
#[derive(Clone)]
pub struct TicketTools {
    pub(crate) kitchen: Kitchen,
    tenants: TenantSource,
    pub(crate) metrics: Metrics,
    /// Set when a write may answer with a task (over HTTP): see
    /// [`crate::tasks`].
    pub(crate) tasks: Option<TaskSettings>,
    /// Built once per server and shared, never copied: the stateless
    /// transport makes a server per request, and a copy of the router (nine
    /// tool definitions, each with its `_meta` map) was a measurable share
    /// of a replay's cost.
    tool_router: Arc<ToolRouter<Self>>,
}

impl TicketTools {
    /// Tools over `kitchen`, with callers from `tenants`, measured into
    /// `metrics`. Builds the tool definitions for `kitchen`'s backend:
    /// make it once per server and clone it per request.
    pub fn new(kitchen: Kitchen, tenants: TenantSource, metrics: Metrics) -> Self {
        let tool_router = Arc::new(Self::router_for(&OpenWorld::of(&kitchen)));
        Self {
            kitchen,
            tenants,
            metrics,
            tasks: None,
            tool_router,
        }
    }

    /// These tools, declaring the tasks extension: a write by a client
    /// that declared it too (at 2026-07-28 or later) answers with a task
    /// when its outcome is not final within [`TaskSettings::bound`].
    pub fn with_tasks(self, settings: TaskSettings) -> Self {
        Self {
            tasks: Some(settings),
            ..self
        }
    }

    /// The tool definitions, with `openWorldHint` as `open` says and each
    /// tool's contract hash in `_meta` (so a deployment whose tools reach a
    /// provider publishes other hashes: its contract is another).
    fn router_for(open: &OpenWorld) -> ToolRouter<Self> {
        // Every tool, from the routers of the files that define them: the
        // reads, and one per write in `actions/`.
        let mut router = Self::read_tools() + Self::write_tools();
        for (name, route) in &mut router.map {
            // A model reads every input schema on every turn, and MCP
            // already says a schema without `$schema` is JSON Schema
            // 2020-12: the URL would cost tokens and say nothing.
            Arc::make_mut(&mut route.attr.input_schema).remove("$schema");
            if let Some(annotations) = route.attr.annotations.as_mut() {
                annotations.open_world_hint = Some(open.reaches(name));
            }
            let hash = contract::contract_hash(&route.attr);
            let mut meta = route.attr.meta.clone().unwrap_or_default();
            meta.insert(contract::CONTRACT_HASH_META.into(), hash.into());
            route.attr.meta = Some(meta);
        }
        router
    }

    /// Every tool definition as `tools/list` shows it on the local backend,
    /// contract hashes included.
    pub fn definitions() -> Vec<rmcp::model::Tool> {
        Self::definitions_in(&OpenWorld::CLOSED)
    }

    /// Every tool definition as `tools/list` shows it where `open` reaches
    /// a provider.
    pub fn definitions_in(open: &OpenWorld) -> Vec<rmcp::model::Tool> {
        Self::router_for(open).list_all()
    }

    /// The contract hash `tool` publishes, borrowed from the shared router
    /// (no copy per call).
    pub(crate) fn contract(&self, tool: &str) -> &str {
        self.tool_router
            .map
            .get(tool)
            .and_then(|route| route.attr.meta.as_ref())
            .and_then(|meta| meta.get(contract::CONTRACT_HASH_META))
            .and_then(|hash| hash.as_str())
            .unwrap_or_default()
    }

    /// Counts a read tool's call (`ok`, `tool_error` or `error`) with its
    /// contract hash, and passes the result on.
    pub(crate) fn counted(
        &self,
        tool: &str,
        result: Result<CallToolResult, McpError>,
    ) -> Result<CallToolResult, McpError> {
        let outcome = match &result {
            Ok(r) if r.is_error == Some(true) => "tool_error",
            Ok(_) => "ok",
            Err(_) => "error",
        };
        self.metrics.tool_call(tool, self.contract(tool), outcome);
        result
    }
}

impl TicketTools {
    /// The caller: from authentication, never from arguments.
    pub(crate) fn caller(
        &self,
        needs: Scopes,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Who, McpError> {
        let caller = match &self.tenants {
            TenantSource::Fixed(caller) => caller,
            TenantSource::Http => ctx
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .ok_or_else(|| McpError::invalid_request("no authenticated caller", None))?,
        };
        // Over HTTP the edge already answered a missing scope with a 403
        // the client can act on; over stdio this is the only check.
        let missing = caller.scopes.missing_from(needs);
        if !missing.is_empty() {
            return Err(McpError::invalid_request(
                format!(
                    "This call needs the scope {missing}, which the token does not carry; nothing \
                     was done. Use a token issued with it (tickets token issue <tenant> --scope \
                     {missing})."
                ),
                None,
            ));
        }
        Ok(Who::from(caller))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TicketTools {
    /// Built once (with tasks, and without): rmcp asks for it on every
    /// request (the stateless transport configures each request's peer with
    /// it, and gates `tasks/*` on it).
    fn get_info(&self) -> ServerConfig {
        static INFO: OnceLock<ServerConfig> = OnceLock::new();
        static WITH_TASKS: OnceLock<ServerConfig> = OnceLock::new();
        let info = |tasks: bool| {
            let capabilities = if tasks {
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tasks()
                    .build()
            } else {
                ServerCapabilities::builder().enable_tools().build()
            };
            ServerConfig::new(capabilities)
                .with_server_info(
                    Implementation::new("retry-safe-tickets", env!("CARGO_PKG_VERSION"))
                        .with_title("Retry-safe tickets"),
                )
                .with_instructions(contract::INSTRUCTIONS)
        };
        match self.tasks {
            None => INFO.get_or_init(|| info(false)),
            Some(_) => WITH_TASKS.get_or_init(|| info(true)),
        }
        .clone()
    }

    /// `tasks/get`: the task's state, from its operation record.
    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let who = self.caller(access::policy::mcp("tasks/get", None), &ctx)?;
        let settings = self.tasks.unwrap_or_default();
        tasks::get(&self.kitchen, settings, who.tenant.id, &request.task_id).await
    }

    /// `tasks/cancel`: acknowledged for a known task; the write finishes.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = self.caller(access::policy::mcp("tasks/cancel", None), &ctx)?;
        tasks::cancel(&self.kitchen, who.tenant.id, &request.task_id).await
    }

    /// `tasks/update`: acknowledged for a known task (none asks for input).
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = self.caller(access::policy::mcp("tasks/update", None), &ctx)?;
        tasks::update(&self.kitchen, who.tenant.id, &request.task_id).await
    }
}

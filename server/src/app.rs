//! The HTTP application and its lifecycle.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use access::Authenticator;
use axum::Router;
use axum::extract::Request;
use kitchen::Kitchen;
use mcp_door::{McpHttpConfig, McpLimits, TaskSettings};
use telemetry::Metrics;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::compression::CompressionLayer;
use tower_http::decompression::RequestDecompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::map_request_body::MapRequestBodyLayer;
use tower_http::request_id::{
    MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::connections::{self, Limits};

/// How the server listens, how long it lets a request run, and how it
/// bounds connections.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    /// Address to bind; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Longest a request may take before the caller gets a `503` problem.
    /// A create that is cut off this way still finishes (or rolls back) on
    /// its own; the caller retries with the same key.
    pub request_timeout: Duration,
    /// Host and Origin checks of the MCP endpoint.
    pub mcp: McpHttpConfig,
    /// When an MCP write answers a client that declared the tasks extension
    /// with a task, and how often that client is told to poll.
    pub mcp_tasks: TaskSettings,
    /// Longest wait for a request's head (request line and headers); past
    /// it the connection is closed. Without it one client that sends half a
    /// request holds a connection, its memory and a file descriptor
    /// forever. hyper runs the same timer while a kept-alive connection
    /// waits for its next request, so it also bounds idle connections.
    pub header_read_timeout: Duration,
    /// A connection on which no request has started for this long is
    /// closed (after the response it may still be writing).
    pub idle_timeout: Duration,
    /// Most connections open at once; at the limit the server stops
    /// accepting until one closes, and new clients wait in the kernel's
    /// backlog. Keep it below the process's file-descriptor limit
    /// (`ulimit -n`) minus the database pool.
    pub max_connections: usize,
    /// Most connections one client address may hold open at once; past it
    /// a new connection from that address is closed as soon as it is
    /// accepted, so one client (a flood of half-sent requests) cannot fill
    /// `max_connections` and starve everyone else.
    pub max_connections_per_client: usize,
    /// On shutdown, how long requests in flight may take to finish; then
    /// the connections still open are dropped and the server returns. A
    /// create dropped this way still commits or rolls back on its own task.
    pub shutdown_grace: Duration,
    /// How often the retention sweep runs (it sweeps everything due each
    /// time, in batches).
    pub sweep_every: Duration,
    /// Resource-server mode: accept access tokens from these identity
    /// providers besides API tokens. Off (`None`) by default.
    pub oauth: Option<access::OAuthSettings>,
    /// The operators' console on a listener of its own. Off (`None`) by
    /// default.
    pub console: Option<ops_console::ConsoleSettings>,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout: Duration::from_secs(30),
            mcp: McpHttpConfig::default(),
            mcp_tasks: TaskSettings::default(),
            // Ample for any real client (a head is one or two round trips)
            // while freeing a stalled connection quickly.
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            // Well under the 20,000-odd connections that exhaust a typical
            // file-descriptor limit; at ~35 KB each, about 140 MB at most.
            max_connections: 4096,
            // A sixteenth of the whole: far more than any one real client
            // (a browser opens 6, a load test tens) or a small office
            // behind one address needs.
            max_connections_per_client: 256,
            // As long as the request timeout: a request that respects it
            // can finish.
            shutdown_grace: Duration::from_secs(30),
            sweep_every: Duration::from_secs(60),
            oauth: None,
            console: None,
        }
    }
}

/// Every route of the service, with the layers every request goes through.
///
/// Each door answers in its own dialect, so each has its own stack: the
/// REST routes turn bare layer answers (a body-limit `413`, a timeout) into
/// problem documents; `/mcp` reads, limits and times its messages itself
/// and answers JSON-RPC. Shared by both, outermost first: the request id
/// (exists before anything logs), the trace span, compression of answers,
/// the edge rules (`edge.rs`), and gzip request bodies.
///
/// Both doors authenticate through `access`: the same bearer tokens, the
/// same callers, one scope policy.
pub fn router(
    kitchen: Kitchen,
    metrics: Metrics,
    settings: &ServeSettings,
    access: Authenticator,
) -> Router {
    let shared = ServiceBuilder::new()
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request| {
                let request_id = request
                    .extensions()
                    .get::<RequestId>()
                    .and_then(|id| id.header_value().to_str().ok())
                    .unwrap_or_default();
                tracing::info_span!(
                    "request",
                    method = %request.method(),
                    path = %request.uri().path(),
                    request_id,
                    tenant = tracing::field::Empty,
                )
            }),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(CompressionLayer::new())
        .layer(axum::middleware::from_fn(crate::edge::check_request))
        // Only gzip gets here (the edge refuses other codings); the body
        // limits below count decoded bytes, so a small bomb stays small.
        .layer(RequestDecompressionLayer::new().gzip(true))
        .layer(MapRequestBodyLayer::new(axum::body::Body::new));
    let rest = rest_door::router(kitchen.clone(), metrics.clone(), access.clone()).layer(
        ServiceBuilder::new()
            .layer(axum::middleware::map_response(
                rest_door::problem_for_bare_errors,
            ))
            .layer(axum::middleware::from_fn_with_state(
                settings.request_timeout,
                crate::rest_deadline::within,
            ))
            .layer(RequestBodyLimitLayer::new(rest_door::BODY_LIMIT_BYTES)),
    );
    let limits = McpLimits {
        body_limit_bytes: rest_door::BODY_LIMIT_BYTES,
        request_timeout: settings.request_timeout,
    };
    // The MCP endpoint sits behind the same bearer-token middleware as
    // /v1: the tools read the tenant it resolved, never an argument.
    let measured = metrics.clone();
    let mcp = Router::new()
        .nest_service(
            crate::edge::MCP_PATH,
            mcp_door::http_endpoint(
                kitchen.clone(),
                metrics,
                &settings.mcp,
                limits,
                settings.mcp_tasks,
                access.challenges().clone(),
            ),
        )
        .layer(axum::middleware::from_fn_with_state(
            access,
            crate::mcp_auth::require_tenant,
        ));
    // Inside the routes (a router's layers run once a route matched), so
    // each request is measured by its route's template.
    rest.merge(mcp)
        .layer(axum::middleware::from_fn_with_state(
            measured,
            crate::http_metrics::measure,
        ))
        .layer(shared)
}

/// A bound, not yet running, server.
pub struct Application {
    listener: TcpListener,
    router: Router,
    /// The console's listener and routes, when it is on.
    console: Option<(TcpListener, Router)>,
    kitchen: Kitchen,
    metrics: Metrics,
    limits: Limits,
    sweep_every: Duration,
}

impl Application {
    /// Binds `settings.listen` and builds the router over `kitchen`,
    /// measuring into `metrics`.
    pub async fn build(
        kitchen: Kitchen,
        metrics: Metrics,
        settings: &ServeSettings,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(settings.listen).await?;
        let access = Authenticator::new(kitchen.clone(), settings.oauth.clone())
            .map_err(std::io::Error::other)?;
        let console = match &settings.console {
            None => None,
            Some(console) => {
                console.check().map_err(std::io::Error::other)?;
                let bound = TcpListener::bind(console.listen).await.map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("the console cannot listen on {}: {e}", console.listen),
                    )
                })?;
                Some((
                    bound,
                    ops_console::router(kitchen.clone(), metrics.clone(), console),
                ))
            }
        };
        Ok(Self {
            console,
            listener,
            router: router(kitchen.clone(), metrics.clone(), settings, access),
            kitchen,
            metrics,
            sweep_every: settings.sweep_every,
            limits: Limits {
                header_read_timeout: settings.header_read_timeout,
                idle_timeout: settings.idle_timeout,
                max_connections: settings.max_connections,
                max_connections_per_client: settings.max_connections_per_client,
                shutdown_grace: settings.shutdown_grace,
            },
        })
    }

    /// The port it listens on (useful after binding port 0).
    pub fn port(&self) -> u16 {
        self.listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or_default()
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Where the console listens, when it is on.
    pub fn console_addr(&self) -> Option<SocketAddr> {
        self.console
            .as_ref()
            .and_then(|(listener, _)| listener.local_addr().ok())
    }

    /// Serves until `shutdown` resolves, then stops accepting, lets the
    /// requests in flight finish for at most the shutdown grace period and
    /// drops the connections still open after it. The retention sweep runs
    /// alongside (at once, then every `sweep_every`), and with the remote
    /// backend the reconciler (its first pass at once, for effects a crash
    /// left behind); both stop with the server.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(());
        // Resolves when the sender is dropped or sends: either way, stop.
        let stopping = |mut stopped: tokio::sync::watch::Receiver<()>| async move {
            let _ = stopped.changed().await;
        };
        let reconciler = tokio::spawn(
            self.kitchen
                .clone()
                .run_reconciler(stopping(stopped.clone())),
        );
        let (metrics, finished) = (self.metrics.clone(), self.metrics.clone());
        let sweeper = tokio::spawn(self.kitchen.sweeper().run(
            self.sweep_every,
            stopping(stopped.clone()),
            move |report| metrics.swept(report.tombstoned, report.deleted),
            move || finished.sweep_finished(),
        ));
        let watcher = tokio::spawn(watch_operator_gauges(
            self.kitchen.clone(),
            self.metrics.clone(),
            self.sweep_every,
            stopping(stopped.clone()),
        ));
        // The console: few requests from operators, plain axum serving; it
        // stops with the service.
        let console = self.console.map(|(listener, router)| {
            tokio::spawn(
                axum::serve(listener, router)
                    .with_graceful_shutdown(stopping(stopped))
                    .into_future(),
            )
        });
        connections::serve(self.listener, self.router, self.limits, async move {
            shutdown.await;
            drop(stop);
        })
        .await;
        // A pass in flight finishes; an effect it leaves unsettled is picked
        // up by the next instance once its lease runs out.
        if let Err(e) = reconciler.await {
            tracing::error!(error = %e, "the reconciler stopped abnormally");
        }
        if let Err(e) = sweeper.await {
            tracing::error!(error = %e, "the retention sweep stopped abnormally");
        }
        if let Err(e) = watcher.await {
            tracing::error!(error = %e, "the operator gauges stopped abnormally");
        }
        if let Some(console) = console {
            match console.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "the console stopped abnormally"),
                Err(e) => tracing::error!(error = %e, "the console stopped abnormally"),
            }
        }
        Ok(())
    }
}

/// Keeps the gauges that ask for an operator current
/// (`tickets.effects.unresolved`, `tickets.provider.duplicates`): counts
/// read from the database now and then (metric callbacks cannot wait on a
/// query). On the local backend both are 0 without a query.
async fn watch_operator_gauges(
    kitchen: Kitchen,
    metrics: Metrics,
    every: Duration,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        match kitchen.unresolved_effects().await {
            Ok(n) => metrics.set_unresolved_effects(n),
            Err(e) => tracing::error!(error = %e, "cannot count unresolved effects"),
        }
        match kitchen.provider_duplicates().await {
            Ok(n) => metrics.set_provider_duplicates(n),
            Err(e) => tracing::error!(error = %e, "cannot count duplicates at the provider"),
        }
        tokio::select! {
            () = &mut shutdown => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

//! The HTTP application and its lifecycle.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use http::StatusCode;
use kitchen::Kitchen;
use mcp_door::McpHttpConfig;
use telemetry::Metrics;
use tokio::net::TcpListener;
use tower::ServiceBuilder;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{
    MakeRequestUuid, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// How the server listens and how long it lets a request run.
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
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout: Duration::from_secs(30),
            mcp: McpHttpConfig::default(),
        }
    }
}

/// Every route of the service, with the layers every request goes through.
pub fn router(kitchen: Kitchen, metrics: Metrics, settings: &ServeSettings) -> Router {
    // Outermost first: the request id exists before anything logs, and the
    // problem mapper sees the answers of the limit and timeout layers.
    let layers = ServiceBuilder::new()
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
        .layer(axum::middleware::map_response(
            rest_door::problem_for_bare_errors,
        ))
        .layer(CompressionLayer::new())
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            settings.request_timeout,
        ))
        .layer(RequestBodyLimitLayer::new(rest_door::BODY_LIMIT_BYTES));
    // The MCP endpoint sits behind the same bearer-token middleware as
    // /v1: the tools read the tenant it resolved, never an argument.
    let mcp = Router::new()
        .nest_service(
            "/mcp",
            mcp_door::http_service(kitchen.clone(), metrics.clone(), &settings.mcp),
        )
        .layer(axum::middleware::from_fn_with_state(
            kitchen.clone(),
            rest_door::auth::require_tenant,
        ));
    rest_door::router(kitchen, metrics).merge(mcp).layer(layers)
}

/// A bound, not yet running, server.
pub struct Application {
    listener: TcpListener,
    router: Router,
    kitchen: Kitchen,
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
        Ok(Self {
            listener,
            router: router(kitchen.clone(), metrics, settings),
            kitchen,
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

    /// Serves until `shutdown` resolves, then stops accepting and lets the
    /// requests in flight finish. With the remote backend, the reconciler
    /// runs alongside (its first pass at once, for effects a crash left
    /// behind) and stops with the server.
    pub async fn run_until_stopped(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(());
        let reconciler = tokio::spawn(self.kitchen.run_reconciler(async move {
            let mut stopped = stopped;
            // Resolves when the sender is dropped or sends: either way, stop.
            let _ = stopped.changed().await;
        }));
        let served = axum::serve(self.listener, self.router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                drop(stop);
            })
            .await;
        // A pass in flight finishes; an effect it leaves unsettled is picked
        // up by the next instance once its lease runs out.
        if let Err(e) = reconciler.await {
            tracing::error!(error = %e, "the reconciler stopped abnormally");
        }
        served
    }
}

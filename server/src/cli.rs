//! The command line.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use kitchen::{Kitchen, KitchenConfig};

use crate::admin;
use crate::app::{Application, ServeSettings};
use telemetry::Metrics;
use telemetry::logging::OtlpTarget;

/// Where the data lives when nothing else is said: a SQLite file under ./data/.
pub const DEFAULT_DATABASE_URL: &str = "sqlite:data/tickets.db";

/// The retry-safe ticket service: a retried create never makes a second ticket.
#[derive(Debug, Parser)]
#[command(name = "tickets", version, about)]
pub struct Cli {
    /// Database: `sqlite:PATH` (embedded, the default) or `postgres://USER@HOST/DB`
    /// (for several instances).
    #[arg(long, global = true, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub database_url: String,

    /// Log format on stderr.
    #[arg(long, global = true, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// How log lines look on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line.
    Json,
}

impl From<LogFormat> for telemetry::LogFormat {
    fn from(f: LogFormat) -> Self {
        match f {
            LogFormat::Human => telemetry::LogFormat::Human,
            LogFormat::Json => telemetry::LogFormat::Json,
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the REST API (and the MCP endpoint) over HTTP.
    Serve(ServeArgs),
    /// Serve the MCP tools over stdin/stdout (for desktop agents), as the
    /// tenant of the token in TICKETS_TOKEN.
    McpStdio(McpStdioArgs),
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// Settings of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Seconds a request may run before the caller gets a 503 (a create cut
    /// off this way still finishes on its own; retry with the same key).
    #[arg(long, env = "REQUEST_TIMEOUT_SECS", default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Milliseconds a create waits for a concurrent attempt with the same
    /// key before answering "in progress".
    #[arg(long, env = "WAIT_BOUND_MS", default_value_t = 5000)]
    pub wait_bound_ms: u64,
    /// Days an operation record (and its protection against duplicates) is kept.
    #[arg(long, env = "RETENTION_DAYS", default_value_t = 30)]
    pub retention_days: u32,
    /// Most database connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 10)]
    pub max_connections: u32,
    /// Milliseconds a token lookup is reused. A token revoked through
    /// another instance keeps working here this long; 0 disables the cache.
    #[arg(long, env = "AUTH_CACHE_MS", default_value_t = 2000)]
    pub auth_cache_ms: u64,
    /// Host names the MCP endpoint accepts (DNS-rebinding protection);
    /// comma-separated. Add your public host name when not on loopback.
    #[arg(
        long,
        env = "MCP_ALLOWED_HOSTS",
        value_delimiter = ',',
        default_value = "localhost,127.0.0.1,::1"
    )]
    pub mcp_allowed_hosts: Vec<String>,
    /// Browser origins the MCP endpoint accepts (`scheme://host[:port]`,
    /// `:*` for any port); comma-separated. Requests without Origin pass.
    #[arg(
        long,
        env = "MCP_ALLOWED_ORIGINS",
        value_delimiter = ',',
        default_value = "http://localhost:*,http://127.0.0.1:*,http://[::1]:*"
    )]
    pub mcp_allowed_origins: Vec<String>,
}

/// Settings of `mcp-stdio`.
#[derive(Debug, Args)]
pub struct McpStdioArgs {
    /// The API token whose tenant the tools act for.
    #[arg(long, env = "TICKETS_TOKEN", hide_env_values = true)]
    pub token: String,
}

/// `tenant …`
#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id.
    Create {
        /// A slug, e.g. `acme`.
        name: String,
    },
}

/// `token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Issue an API token for a tenant; prints the token once (it is stored
    /// only as a hash).
    Issue {
        /// The tenant's name.
        tenant: String,
    },
    /// Revoke an API token by its id.
    Revoke {
        /// The token id printed when it was issued.
        token_id: String,
    },
}

/// The whole program: parse the command line, set up logging, run.
pub fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // OTLP export of traces and metrics when OTEL_EXPORTER_OTLP_ENDPOINT is
    // set; the guard flushes the last spans at exit.
    let otlp = OtlpTarget::from_env();
    let _traces = telemetry::logging::init(cli.log_format.into(), otlp.as_ref());
    tokio::runtime::Runtime::new()?.block_on(run(cli, otlp))
}

/// Runs the command; `otlp` is where metrics go besides `/metrics`.
pub async fn run(cli: Cli, otlp: Option<OtlpTarget>) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => {
            serve(&cli.database_url, args, Metrics::with_otlp(otlp.as_ref())).await
        }
        Command::McpStdio(args) => {
            let kitchen = connect(&cli.database_url, KitchenConfig::default()).await?;
            let Some(tenant) = kitchen.authenticate(&args.token).await? else {
                anyhow::bail!(
                    "TICKETS_TOKEN is unknown or revoked; issue one with: tickets token issue <tenant>"
                );
            };
            tracing::info!(tenant = %tenant.name, "serving MCP over stdio");
            mcp_door::serve_stdio(kitchen.clone(), tenant, Metrics::with_otlp(otlp.as_ref()))
                .await?;
            kitchen.close().await;
            Ok(())
        }
        Command::Tenant(TenantCommand::Create { name }) => {
            let kitchen = connect(&cli.database_url, KitchenConfig::default()).await?;
            admin::create_tenant(&kitchen, &name).await
        }
        Command::Token(TokenCommand::Issue { tenant }) => {
            let kitchen = connect(&cli.database_url, KitchenConfig::default()).await?;
            admin::issue_token(&kitchen, &tenant).await
        }
        Command::Token(TokenCommand::Revoke { token_id }) => {
            let kitchen = connect(&cli.database_url, KitchenConfig::default()).await?;
            admin::revoke_token(&kitchen, &token_id).await
        }
    }
}

async fn connect(database_url: &str, config: KitchenConfig) -> anyhow::Result<Kitchen> {
    Kitchen::connect(database_url, config)
        .await
        .with_context(|| format!("cannot open the database at {database_url}"))
}

async fn serve(database_url: &str, args: ServeArgs, metrics: Metrics) -> anyhow::Result<()> {
    let config = KitchenConfig {
        wait_bound: Duration::from_millis(args.wait_bound_ms),
        retention: time_days(args.retention_days),
        max_connections: args.max_connections,
        auth_cache_ttl: Duration::from_millis(args.auth_cache_ms),
    };
    let kitchen = connect(database_url, config).await?;
    let settings = ServeSettings {
        listen: args.listen,
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        mcp: mcp_door::McpHttpConfig {
            allowed_hosts: args.mcp_allowed_hosts,
            allowed_origins: args.mcp_allowed_origins,
        },
    };
    let app = Application::build(kitchen.clone(), metrics.clone(), &settings)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = app.local_addr()?;
    tracing::info!(%addr, database = kitchen.database_kind(), "serving");
    #[cfg(feature = "fault-injection")]
    tracing::warn!(
        prefix = kitchen::faults::CRASH_AFTER_COMMIT,
        "FAULT INJECTION BUILD: a create whose key starts with this prefix aborts the process \
         right after its commit. Never deploy this binary."
    );
    if !kitchen.has_tenants().await? {
        eprintln!("{}", admin::first_steps(database_url, addr));
    }
    app.run_until_stopped(crate::shutdown::signal()).await?;
    kitchen.close().await;
    metrics.shutdown();
    Ok(())
}

fn time_days(days: u32) -> kitchen::RetentionPeriod {
    kitchen::RetentionPeriod::days(i64::from(days))
}

//! The command line: clap argument types only. What they make happen is in
//! [`crate::run`].

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand};
use kitchen::{DatabasePooler, GuardMode};

/// Where the data lives when nothing else is said: a SQLite file under ./data/.
pub const DEFAULT_DATABASE_URL: &str = "sqlite:data/tickets.db";

/// The retry-safe ticket service: a retried create never makes a second ticket.
#[derive(Debug, Parser)]
#[command(name = "tickets", version, about)]
pub struct Cli {
    /// Which database, and how it is reached.
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// Log format on stderr.
    #[arg(long, global = true, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Which database, and how it is reached (every command opens it).
#[derive(Debug, Args)]
pub struct DatabaseArgs {
    /// Database: `sqlite:PATH` (embedded, the default) or `postgres://USER@HOST/DB`
    /// (for several instances).
    #[arg(long = "database-url", global = true, env = "DATABASE_URL",
          default_value = DEFAULT_DATABASE_URL)]
    pub url: String,
    /// PostgreSQL: `transaction` when DATABASE_URL is a pooler that lends a
    /// server connection per transaction (pgbouncer's `pool_mode =
    /// transaction`): statements then run unnamed, each in a transaction.
    /// `none` (the default) for a direct connection, HAProxy, or a pooler
    /// in session mode. See docs/deployment.md.
    #[arg(long = "database-pooler", global = true, env = "DATABASE_POOLER", default_value = "none",
          value_parser = parse_pooler)]
    pub pooler: DatabasePooler,
    /// PostgreSQL: seconds a command keeps trying to open the database while it is
    /// unreachable, a read-only standby or unable to write (a failover
    /// under way, a server starting), before it gives up; 0 tries once. A
    /// wrong URL or login is refused at once.
    #[arg(
        long = "database-start-timeout-secs",
        global = true,
        env = "DATABASE_START_TIMEOUT_SECS",
        default_value_t = 30
    )]
    pub start_timeout_secs: u64,
}

fn parse_pooler(raw: &str) -> Result<DatabasePooler, String> {
    raw.parse()
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
    // Boxed: its settings outweigh every other command's many times over.
    Serve(Box<ServeArgs>),
    /// Serve the MCP tools over stdin/stdout (for desktop agents), as the
    /// tenant of the token in TICKETS_TOKEN.
    McpStdio(McpStdioArgs),
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Manage API tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Call a running service with the retry policy of `tickets-client`:
    /// create, update, transition, comment, status, resume.
    // Boxed: its arguments outweigh the small commands'.
    Client(Box<crate::client_cli::ClientArgs>),
    /// Map identity-provider subjects to tenants (OAuth).
    #[command(subcommand)]
    Oauth(OAuthCommand),
    /// For operators: find operations across tenants, see one as recorded,
    /// and settle by hand an effect whose outcome the service could not
    /// learn from the provider.
    #[command(subcommand)]
    Ops(OpsCommand),
}

/// `tickets ops …`.
#[derive(Debug, Subcommand)]
pub enum OpsCommand {
    /// List operations, newest first: every tenant's, or one's.
    List(OpsListArgs),
    /// Show one operation as recorded (nothing is reconciled or sent): the
    /// record, its calls to the provider, copies found there, settlements
    /// by hand, and what a person should check.
    Show(OperationArgs),
    /// Settle by hand an operation whose outcome is `unknown`: `--made` with
    /// the provider's id of what it made (the operation succeeds with it),
    /// or `--not-made` (it failed before its effect: the caller's retry with
    /// the same key sends it); or, for one the provider holds more than
    /// once, `--keep` the original once the copies are removed there. The
    /// provider is searched first; a decision it contradicts is refused
    /// unless `--force`. Writes an audit entry that both doors' status shows.
    // Boxed: the provider's settings outweigh the other commands'.
    Settle(Box<OpsSettleArgs>),
}

/// `tickets ops list`.
#[derive(Debug, Args)]
pub struct OpsListArgs {
    /// Only this tenant's (by name).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Only operations in this state: succeeded, expired, in_progress,
    /// unknown or failed_before_effect.
    #[arg(long)]
    pub state: Option<String>,
    /// Only this action's, e.g. create_ticket.
    #[arg(long)]
    pub action: Option<String>,
    /// Only what a person must act on: effects reconciliation gave up on,
    /// and effects the provider holds more than once.
    #[arg(long)]
    pub needs_operator: bool,
    /// Only operations whose key was first used longer ago than this, e.g.
    /// `10m`, `2h`, `3days`.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub older_than: Option<std::time::Duration>,
    /// Most operations to show (1 to 200).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Where to start: the cursor the previous list printed.
    #[arg(long)]
    pub cursor: Option<String>,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One operation: its tenant, action and key.
#[derive(Debug, Args)]
pub struct OperationArgs {
    /// The tenant, by name.
    pub tenant: String,
    /// The action, e.g. create_ticket.
    pub action: String,
    /// The operation key (the caller's Idempotency-Key or operation_id).
    pub key: String,
}

/// `tickets ops settle`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("decision").required(true).args(["made", "not_made", "keep"])))]
pub struct OpsSettleArgs {
    /// Which operation.
    #[command(flatten)]
    pub operation: OperationArgs,
    /// The provider made it, as this object (its id there, e.g. the
    /// tracker's issue number).
    #[arg(long, value_name = "PROVIDER_REFERENCE")]
    pub made: Option<String>,
    /// The provider never made it.
    #[arg(long)]
    pub not_made: bool,
    /// For an operation whose effect the provider holds more than once
    /// (its status lists duplicates_at_provider): you removed the copies
    /// there, keeping this object, the original.
    #[arg(long, value_name = "PROVIDER_REFERENCE")]
    pub keep: Option<String>,
    /// Who is deciding, for the audit trail.
    #[arg(long)]
    pub by: String,
    /// Why, for the audit trail (what you checked at the provider).
    #[arg(long)]
    pub reason: String,
    /// Settle even where the search of the provider says otherwise (or the
    /// provider cannot be searched).
    #[arg(long)]
    pub force: bool,
    /// The provider the operation's effect was sent to.
    #[command(flatten)]
    pub backend: BackendArgs,
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
    /// Seconds a client has to send a request's head (request line and
    /// headers) before its connection is closed; also how long a kept-alive
    /// connection may wait for its next request.
    #[arg(
        long,
        env = "HEADER_READ_TIMEOUT_SECS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub header_read_timeout_secs: u64,
    /// Seconds a connection may go without starting a request before it is
    /// closed (a response being written finishes first).
    #[arg(
        long,
        env = "IDLE_TIMEOUT_SECS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub idle_timeout_secs: u64,
    /// Most HTTP connections open at once; at the limit new clients wait in
    /// the listen backlog until one closes. Keep it below `ulimit -n`.
    #[arg(
        long,
        env = "MAX_HTTP_CONNECTIONS",
        default_value_t = 4096,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_http_connections: u32,
    /// Most HTTP connections one client address may hold open at once;
    /// past it a new connection from that address is closed at once, so
    /// one client cannot starve the others (behind a proxy every client has
    /// the proxy's address: raise it, or let the proxy limit clients).
    #[arg(
        long,
        env = "MAX_HTTP_CONNECTIONS_PER_CLIENT",
        default_value_t = 256,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_http_connections_per_client: u32,
    /// Seconds requests in flight get to finish on shutdown (SIGTERM,
    /// Ctrl-C); then the connections still open are dropped and the process
    /// exits. A create dropped this way still commits or rolls back.
    #[arg(long, env = "SHUTDOWN_GRACE_SECS", default_value_t = 30)]
    pub shutdown_grace_secs: u64,
    /// Milliseconds a create waits for a concurrent attempt with the same
    /// key before answering "in progress".
    #[arg(long, env = "WAIT_BOUND_MS", default_value_t = 5000)]
    pub wait_bound_ms: u64,
    /// Days a key replays its first answer byte for byte (the replay
    /// window). After it, a retry with the same request answers `expired`
    /// with the resource as it is now, and makes nothing new.
    #[arg(long, env = "RETENTION_DAYS", default_value_t = 30)]
    pub retention_days: u32,
    /// The replay window in seconds instead of days (for tests and drills);
    /// overrides --retention-days.
    #[arg(long, env = "REPLAY_WINDOW_SECS")]
    pub replay_window_secs: Option<u64>,
    /// Days a key is remembered at all, from its first use (the tombstone
    /// horizon). Until then a retry never makes a second effect; after it
    /// the key is free again. Raised to the replay window if shorter.
    #[arg(long, env = "TOMBSTONE_HORIZON_DAYS", default_value_t = 400)]
    pub tombstone_horizon_days: u32,
    /// The tombstone horizon in seconds instead of days (for tests and
    /// drills); overrides --tombstone-horizon-days.
    #[arg(long, env = "TOMBSTONE_HORIZON_SECS")]
    pub tombstone_horizon_secs: Option<u64>,
    /// Seconds between retention sweeps (each sweeps everything due, in
    /// batches). Every instance may sweep; they share the work.
    #[arg(long, env = "SWEEP_EVERY_SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub sweep_every_secs: u64,
    /// Most records one sweep batch changes; small batches keep writes from
    /// waiting behind the sweep (on SQLite, a batch holds the write lock).
    #[arg(long, env = "SWEEP_BATCH", default_value_t = kitchen::DEFAULT_SWEEP_BATCH,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub sweep_batch: u32,
    /// Milliseconds the sweep rests between two full batches, so that
    /// writes get the database in between while a backlog drains (on
    /// SQLite, without it creates nearly stop behind the sweep).
    #[arg(long, env = "SWEEP_PAUSE_MS", default_value_t = 100)]
    pub sweep_pause_ms: u64,
    /// Most database connections.
    #[arg(long, env = "DATABASE_MAX_CONNECTIONS", default_value_t = 10)]
    pub max_connections: u32,
    /// Milliseconds a request waits for a database connection before the
    /// database counts as unreachable: the request is answered `503
    /// database-unavailable` (nothing written) and, until a background
    /// probe reaches the database again, so is every request after it, at
    /// once.
    #[arg(long, env = "DATABASE_ACQUIRE_TIMEOUT_MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub acquire_timeout_ms: u64,
    /// SQLite: most writes one transaction of the single writer commits
    /// together; they share one fsync, each still atomic with its own key.
    #[arg(long, env = "WRITE_GROUP_MAX", default_value_t = kitchen::DEFAULT_WRITE_GROUP_MAX,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub write_group_max: usize,
    /// Milliseconds a token lookup is reused. A token revoked through
    /// another instance keeps working here this long; 0 disables the cache.
    #[arg(long, env = "AUTH_CACHE_MS", default_value_t = 2000)]
    pub auth_cache_ms: u64,
    /// Most finished answers kept in memory, so that a retry within the
    /// replay window is answered without the database; 0 turns it off.
    #[arg(long, env = "REPLAY_CACHE_ENTRIES", default_value_t = kitchen::ReplayCacheConfig::default().max_entries)]
    pub replay_cache_entries: u64,
    /// Most memory those answers may take, in MiB; 0 turns it off.
    #[arg(long, env = "REPLAY_CACHE_MIB", default_value_t = kitchen::ReplayCacheConfig::default().max_bytes >> 20)]
    pub replay_cache_mib: u64,
    /// The operators' console (HTML pages: what callers are doing, writes
    /// that need a person with a settle form, a lookup by key, /metrics) on
    /// a listener of its own, e.g. 127.0.0.1:8081. Off when unset. A
    /// non-loopback address needs ADMIN_TOKEN.
    #[arg(long, env = "ADMIN_LISTEN")]
    pub admin_listen: Option<SocketAddr>,
    /// The operator token the console asks for (the password of HTTP Basic,
    /// any user name; or a bearer token); at least 16 characters. Without
    /// it the console listens on loopback only.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
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
    /// MCP tasks: how long (ms) a write by a client that declared the tasks
    /// extension is waited for before it answers with a task, if its
    /// outcome is not final by then (a provider's lost answer, a dispatch
    /// still running). Kept under half the request timeout.
    #[arg(long, env = "MCP_TASK_AFTER_MS", default_value_t = 2_000)]
    pub mcp_task_after_ms: u64,
    /// MCP tasks: the poll interval (ms) every task advises.
    #[arg(long, env = "MCP_TASK_POLL_MS", default_value_t = 2_000)]
    pub mcp_task_poll_ms: u64,
    /// Signing in with your identity provider (OAuth; off by default).
    #[command(flatten)]
    pub oauth: OAuthArgs,
    /// Where tickets are made.
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The likely-duplicate guard.
    #[command(flatten)]
    pub guard: GuardArgs,
}

/// Resource-server mode: accept access tokens (JWTs) from identity
/// providers besides API tokens. On when at least one issuer is named.
#[derive(Debug, Clone, Args)]
pub struct OAuthArgs {
    /// An identity provider whose access tokens are accepted: its issuer
    /// URL, exactly as its tokens' `iss` says (repeat, or comma-separate).
    /// Naming one turns OAuth on; --oauth-audience is then required.
    #[arg(long = "oauth-issuer", env = "OAUTH_ISSUERS", value_delimiter = ',')]
    pub oauth_issuers: Vec<String>,
    /// This server's canonical resource URL, the audience (`aud`) its
    /// access tokens must carry (RFC 8707), e.g.
    /// https://tickets.example.com/mcp. Tokens for another audience are
    /// refused.
    #[arg(long, env = "OAUTH_AUDIENCE")]
    pub oauth_audience: Option<String>,
    /// A claim whose value is the caller's tenant name (e.g. `org_id`),
    /// used when the token's subject is not mapped with `tickets oauth
    /// map`. Unknown tenants are refused, never created.
    #[arg(long, env = "OAUTH_TENANT_CLAIM")]
    pub oauth_tenant_claim: Option<String>,
    /// Milliseconds fetching an identity provider's keys may take; past it
    /// the caller gets 503 with Retry-After.
    #[arg(long, env = "OAUTH_JWKS_TIMEOUT_MS", default_value_t = 2_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub oauth_jwks_timeout_ms: u64,
    /// Least milliseconds between two fetches of one provider's keys (a
    /// token with an unknown key id triggers a fetch at most this often).
    #[arg(long, env = "OAUTH_JWKS_COOLDOWN_MS", default_value_t = 10_000)]
    pub oauth_jwks_cooldown_ms: u64,
    /// Seconds of clock skew allowed on a token's `exp` and `nbf`.
    #[arg(long, env = "OAUTH_LEEWAY_SECS", default_value_t = 30)]
    pub oauth_leeway_secs: u64,
}

/// Where tickets are made, and how to use a provider.
#[derive(Debug, Clone, Args)]
pub struct BackendArgs {
    /// `local`: in this service's database, exactly once by construction.
    /// `remote`: in a ticket provider over HTTP (PROVIDER_URL), with a
    /// write-ahead record, unknown outcomes and reconciliation.
    #[arg(long, env = "TICKET_BACKEND", value_enum, default_value_t = BackendKind::Local)]
    pub ticket_backend: BackendKind,
    /// Which API the provider speaks (remote backend): `tickets-api`, the
    /// JSON API of docs/provider-simulator.md; or `redmine`, a Redmine's
    /// REST API (REDMINE_* settings; docs/providers.md).
    #[arg(long, env = "PROVIDER_KIND", value_enum, default_value_t = ProviderKind::TicketsApi)]
    pub provider_kind: ProviderKind,
    /// The provider's base URL, e.g. http://127.0.0.1:9090 or
    /// https://tracker.example (remote backend).
    #[arg(long, env = "PROVIDER_URL")]
    pub provider_url: Option<String>,
    /// A PEM file of CA certificates to trust for an https provider, besides
    /// the system's roots (a tracker behind a private CA).
    #[arg(long, env = "PROVIDER_CA_FILE")]
    pub provider_ca_file: Option<std::path::PathBuf>,
    /// Milliseconds one call to the provider may take; past it the answer
    /// counts as lost and the outcome as unknown until reconciled.
    #[arg(long, env = "PROVIDER_TIMEOUT_MS", default_value_t = 10_000)]
    pub provider_timeout_ms: u64,
    /// Milliseconds the provider remembers an idempotency key (its dedup
    /// window). 0: it ignores keys, so nothing is re-sent before a search
    /// shows the ticket is absent. Never set it longer than the provider's
    /// real window.
    #[arg(long, env = "PROVIDER_DEDUP_WINDOW_MS", default_value_t = 0)]
    pub provider_dedup_window_ms: u64,
    /// Milliseconds the provider may still work on a request after it was
    /// sent (its own request deadline). A search that finds nothing proves
    /// absence only this long after the last dispatch.
    #[arg(long, env = "PROVIDER_MAX_INFLIGHT_MS", default_value_t = 30_000)]
    pub provider_max_inflight_ms: u64,
    /// Milliseconds between background reconciliation passes.
    #[arg(long, env = "RECONCILE_EVERY_MS", default_value_t = 5_000)]
    pub reconcile_every_ms: u64,
    /// The most calls to the provider (dispatches and the reconciler's own
    /// searches; those made for a caller's retry or status read do not
    /// count) for one effect whose outcome is unknown. Past it the effect stays unknown,
    /// is no longer reconciled, and is logged for an operator to check the
    /// provider.
    #[arg(long, env = "PROVIDER_MAX_ATTEMPTS", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub provider_max_attempts: u32,
    /// Where tickets go in a Redmine (PROVIDER_KIND=redmine).
    #[command(flatten)]
    pub redmine: RedmineArgs,
}

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderKind {
    /// The JSON API of docs/provider-simulator.md, with idempotency keys.
    TicketsApi,
    /// A Redmine (5.x) REST API: no idempotency keys.
    Redmine,
}

/// A Redmine as the ticket provider (PROVIDER_KIND=redmine). Every setting
/// is checked against Redmine at start.
#[derive(Debug, Clone, Args)]
pub struct RedmineArgs {
    /// The API key of the Redmine user the service acts as ("My account"
    /// → "API access key"); the REST API must be enabled.
    #[arg(long, env = "REDMINE_API_KEY", hide_env_values = true)]
    pub redmine_api_key: Option<String>,
    /// The project tickets go to: its identifier or id.
    #[arg(long, env = "REDMINE_PROJECT")]
    pub redmine_project: Option<String>,
    /// The issue custom field (name or id) holding each effect's external
    /// reference: a text field, "Used as a filter", enabled for the project
    /// and all its trackers.
    #[arg(
        long,
        env = "REDMINE_REFERENCE_FIELD",
        default_value = "External reference"
    )]
    pub redmine_reference_field: String,
    /// The Redmine status each of ours is written as. Redmine statuses not
    /// named here read back as `closed` if Redmine counts them closed, as
    /// `in_progress` otherwise.
    #[arg(
        long,
        env = "REDMINE_STATUSES",
        default_value = "open=New,in_progress=In Progress,resolved=Resolved,closed=Closed"
    )]
    pub redmine_statuses: provider_client::redmine::StatusNames,
}

/// The ticket backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// The service's own database.
    Local,
    /// A ticket provider over HTTP.
    Remote,
}

/// Settings of `mcp-stdio`.
#[derive(Debug, Args)]
pub struct McpStdioArgs {
    /// The API token whose tenant the tools act for.
    #[arg(long, env = "TICKETS_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Where tickets are made.
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The likely-duplicate guard.
    #[command(flatten)]
    pub guard: GuardArgs,
}

/// `tenant …`
#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its id.
    Create {
        /// A slug, e.g. `acme`.
        name: String,
    },
    /// List every tenant: name, id, when it was created, its own
    /// likely-duplicate guard mode if it has one.
    List,
    /// Give a tenant its own likely-duplicate guard mode (`off`, `warn` or
    /// `confirm`), or `default` to follow the deployment's DUPLICATE_GUARD
    /// again. Running instances follow within AUTH_CACHE_MS.
    Guard {
        /// The tenant's name.
        name: String,
        /// `off`, `warn`, `confirm` or `default`.
        #[arg(value_parser = parse_tenant_guard)]
        mode: TenantGuard,
    },
}

/// A tenant's guard as the admin command sets it: a mode of its own, or
/// the deployment's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantGuard(pub Option<GuardMode>);

fn parse_tenant_guard(raw: &str) -> Result<TenantGuard, String> {
    match raw {
        "default" => Ok(TenantGuard(None)),
        _ => raw
            .parse()
            .map(|mode| TenantGuard(Some(mode)))
            .map_err(|e: String| format!("{e}; or `default` for the deployment's DUPLICATE_GUARD")),
    }
}

/// The likely-duplicate guard: what a create or a comment under a new key
/// whose content matches a recent write under another key gets (an agent
/// that minted a fresh key for its retry).
#[derive(Debug, Clone, Args)]
pub struct GuardArgs {
    /// `warn`: made, and the answer points at the earlier write
    /// (`possible_duplicate_of`). `confirm`: refused with 409
    /// `possible-duplicate`, nothing written, unless the caller sends
    /// `confirm_new: true`. `off`: neither. A tenant may have its own
    /// (`tickets tenant guard`).
    #[arg(long, env = "DUPLICATE_GUARD", default_value = "warn", value_parser = parse_guard_mode)]
    pub duplicate_guard: GuardMode,
    /// Seconds back the guard looks for a write with the same content.
    #[arg(long, env = "DUPLICATE_GUARD_WINDOW_SECS",
          default_value_t = kitchen::DEFAULT_DUPLICATE_WINDOW.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub duplicate_guard_window_secs: u64,
}

fn parse_guard_mode(raw: &str) -> Result<GuardMode, String> {
    raw.parse()
}

impl GuardArgs {
    /// The kitchen's guard from these settings.
    pub fn guard(&self) -> kitchen::DuplicateGuard {
        kitchen::DuplicateGuard {
            mode: self.duplicate_guard,
            window: std::time::Duration::from_secs(self.duplicate_guard_window_secs),
        }
    }
}

/// `token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Issue an API token for a tenant; prints the token once (it is stored
    /// only as a hash).
    Issue {
        /// The tenant's name.
        tenant: String,
        /// What the token may do: `tickets:read` (reads, status lookups,
        /// previews) and/or `tickets:write` (writes). Repeat, or
        /// comma-separate. Both when left out.
        #[arg(long = "scope", value_delimiter = ',')]
        scopes: Vec<String>,
    },
    /// Revoke an API token by its id.
    Revoke {
        /// The token id printed when it was issued.
        token_id: String,
    },
    /// List a tenant's API tokens, live and revoked: id, scopes, when
    /// issued, when revoked. Never a secret (only its hash is stored), and
    /// no last use (authentication records nothing).
    List {
        /// The tenant's name.
        tenant: String,
    },
}

/// `oauth …`
#[derive(Debug, Subcommand)]
pub enum OAuthCommand {
    /// Map an identity provider's subject to a tenant: its access tokens
    /// then act for that tenant (this wins over the tenant claim).
    Map {
        /// The issuer, exactly as its tokens' `iss` says.
        #[arg(long)]
        issuer: String,
        /// The subject, exactly as its tokens' `sub` says.
        #[arg(long)]
        subject: String,
        /// The tenant's name.
        #[arg(long)]
        tenant: String,
    },
    /// Remove a subject's mapping.
    Unmap {
        /// The issuer, exactly as its tokens' `iss` says.
        #[arg(long)]
        issuer: String,
        /// The subject, exactly as its tokens' `sub` says.
        #[arg(long)]
        subject: String,
    },
}

//! The composition root: what each command line does. Parses [`Cli`], sets
//! up logging and metrics, opens the kitchen, and serves (HTTP or MCP over
//! stdio) or runs an admin command.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;

use kitchen::{Kitchen, KitchenConfig, RemoteSettings, TicketBackend};
use provider_client::redmine::{RedmineProvider, RedmineSettings, RedmineSetupError};
use telemetry::{Metrics, OtlpTarget};

use crate::admin;
use crate::app::{Application, ServeSettings};
use crate::cli::{
    BackendArgs, BackendKind, Cli, Command, DatabaseArgs, OAuthArgs, OpsCommand, ProviderKind,
    ServeArgs, TenantCommand, TokenCommand,
};

// `BackendArgs` is a clap type in `cli.rs`; building a backend from it (a
// provider client) is composition, so it lives here.
impl BackendArgs {
    /// The kitchen's backend these settings describe. A Redmine is asked
    /// at once whether its settings hold (the key, the project, the
    /// reference field, the statuses).
    pub async fn backend(&self) -> anyhow::Result<TicketBackend> {
        match self.ticket_backend {
            BackendKind::Local => Ok(TicketBackend::Local),
            BackendKind::Remote => {
                let Some(url) = &self.provider_url else {
                    anyhow::bail!(
                        "TICKET_BACKEND=remote needs the provider's address: set PROVIDER_URL \
                         (or --provider-url), e.g. http://127.0.0.1:9090"
                    );
                };
                // A request still in flight at the provider when a search
                // says "absent" would be sent again: a provider that ignores
                // keys then holds two tickets for one intent.
                if self.provider_max_inflight_ms < self.provider_timeout_ms {
                    anyhow::bail!(
                        "PROVIDER_MAX_INFLIGHT_MS ({}) is shorter than PROVIDER_TIMEOUT_MS ({}): \
                         a request the provider may still be working on would count as absent \
                         and be sent again, which can make an effect twice. Set \
                         PROVIDER_MAX_INFLIGHT_MS to at least PROVIDER_TIMEOUT_MS (to the \
                         provider's own request deadline, if longer).",
                        self.provider_max_inflight_ms,
                        self.provider_timeout_ms
                    );
                }
                let call_timeout = Duration::from_millis(self.provider_timeout_ms);
                let tls = provider_client::ProviderTls {
                    extra_roots_pem: match &self.provider_ca_file {
                        None => None,
                        Some(path) => Some(std::fs::read(path).map_err(|e| {
                            anyhow::anyhow!(
                                "PROVIDER_CA_FILE {}: cannot read it: {e}",
                                path.display()
                            )
                        })?),
                    },
                };
                let ca_file = |e: provider_client::SetupError| match (&e, &self.provider_ca_file) {
                    (provider_client::SetupError::ExtraRoots(_), Some(path)) => {
                        anyhow::anyhow!("PROVIDER_CA_FILE {}: {e}", path.display())
                    }
                    _ => e.into(),
                };
                let provider: Arc<dyn kitchen::TicketProvider> = match self.provider_kind {
                    ProviderKind::TicketsApi => Arc::new(
                        provider_client::HttpProvider::with_tls(url, call_timeout, &tls)
                            .map_err(ca_file)?,
                    ),
                    ProviderKind::Redmine => {
                        Arc::new(self.redmine(url, call_timeout, tls).await.map_err(|e| {
                            match e.downcast::<RedmineSetupError>() {
                                Ok(RedmineSetupError::Client(e)) => ca_file(e),
                                Ok(e) => e.into(),
                                Err(e) => e,
                            }
                        })?)
                    }
                };
                Ok(TicketBackend::Remote {
                    provider,
                    settings: RemoteSettings {
                        dedup_window: Duration::from_millis(self.provider_dedup_window_ms),
                        max_inflight: Duration::from_millis(self.provider_max_inflight_ms),
                        call_timeout,
                        reconcile_every: Duration::from_millis(self.reconcile_every_ms.max(1)),
                        max_attempts: self.provider_max_attempts,
                    },
                })
            }
        }
    }
}

impl BackendArgs {
    /// The Redmine at `url`, its settings checked.
    async fn redmine(
        &self,
        url: &str,
        timeout: Duration,
        tls: provider_client::ProviderTls,
    ) -> anyhow::Result<RedmineProvider> {
        // Redmine honours no idempotency key: a re-send within a "window"
        // would make the effect twice.
        if self.provider_dedup_window_ms != 0 {
            anyhow::bail!(
                "PROVIDER_DEDUP_WINDOW_MS is {} but Redmine honours no idempotency key: set it to \
                 0 (nothing is then re-sent before a search shows the effect absent)",
                self.provider_dedup_window_ms
            );
        }
        let r = &self.redmine;
        let (Some(api_key), Some(project)) = (&r.redmine_api_key, &r.redmine_project) else {
            anyhow::bail!(
                "PROVIDER_KIND=redmine needs REDMINE_API_KEY (the API key of the user the \
                 service acts as) and REDMINE_PROJECT (the project's identifier)"
            );
        };
        let settings = RedmineSettings {
            base_url: url.to_owned(),
            api_key: api_key.clone(),
            project: project.clone(),
            reference_field: r.redmine_reference_field.clone(),
            statuses: r.redmine_statuses.clone(),
            timeout,
            tls,
        };
        let provider = RedmineProvider::connect(&settings).await?;
        tracing::info!(provider = ?provider, "Redmine checked: key, project, reference field, statuses");
        Ok(provider)
    }
}

// Likewise for the OAuth settings: validating them is the `access` crate's.
impl OAuthArgs {
    /// Resource-server mode as these settings describe it: `None` when no
    /// issuer is named (OAuth off).
    pub fn settings(&self) -> anyhow::Result<Option<access::OAuthSettings>> {
        if self.oauth_issuers.is_empty() {
            if self.oauth_audience.is_some() || self.oauth_tenant_claim.is_some() {
                anyhow::bail!(
                    "OAUTH_AUDIENCE and OAUTH_TENANT_CLAIM need OAUTH_ISSUERS (--oauth-issuer): \
                     name the identity provider whose tokens to accept"
                );
            }
            return Ok(None);
        }
        let Some(audience) = &self.oauth_audience else {
            anyhow::bail!(
                "OAUTH_ISSUERS needs OAUTH_AUDIENCE (--oauth-audience): this server's canonical \
                 URL, the audience its access tokens carry, e.g. https://tickets.example.com/mcp"
            );
        };
        let settings = access::OAuthSettings::new(&self.oauth_issuers, audience)?
            .tenant_claim(self.oauth_tenant_claim.clone())
            .jwks_timeout(Duration::from_millis(self.oauth_jwks_timeout_ms))
            .jwks_cooldown(Duration::from_millis(self.oauth_jwks_cooldown_ms))
            .leeway(Duration::from_secs(self.oauth_leeway_secs));
        Ok(Some(settings))
    }
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
            serve(&cli.database, *args, Metrics::with_otlp(otlp.as_ref())).await
        }
        Command::McpStdio(args) => {
            // A host (a desktop agent) starts this from a folder of its own
            // choosing: a relative path there must not quietly make an
            // empty database and then blame the token.
            require_existing_sqlite_file(&cli.database.url)?;
            let config = KitchenConfig {
                backend: args.backend.backend().await?,
                duplicate_guard: args.guard.guard(),
                ..KitchenConfig::default()
            };
            let kitchen = connect(&cli.database, config).await?;
            // Effects a crash left behind, and unknown ones, settle while
            // the tools are served.
            let reconciler = tokio::spawn(kitchen.clone().run_reconciler(std::future::pending()));
            let Some(tenant) = kitchen.authenticate(&args.token).await? else {
                anyhow::bail!(
                    "TICKETS_TOKEN is unknown or revoked; issue one with: tickets token issue <tenant>"
                );
            };
            tracing::info!(tenant = %tenant.tenant.name, "serving MCP over stdio");
            mcp_door::serve_stdio(kitchen.clone(), tenant, Metrics::with_otlp(otlp.as_ref()))
                .await?;
            reconciler.abort();
            kitchen.close().await;
            Ok(())
        }
        Command::Client(args) => crate::client_run::run(*args).await,
        Command::Tenant(TenantCommand::Create { name }) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::create_tenant(&kitchen, &name).await
        }
        Command::Token(TokenCommand::Issue { tenant, scopes }) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::issue_token(&kitchen, &tenant, &scopes).await
        }
        Command::Oauth(command) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::oauth(&kitchen, command).await
        }
        Command::Token(TokenCommand::Revoke { token_id }) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::revoke_token(&kitchen, &token_id).await
        }
        Command::Tenant(TenantCommand::Guard { name, mode }) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::set_guard(&kitchen, &name, mode.0).await
        }
        Command::Tenant(TenantCommand::List) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::list_tenants(&kitchen).await
        }
        Command::Ops(OpsCommand::List(args)) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            crate::ops::list(&kitchen, &args).await
        }
        Command::Ops(OpsCommand::Show(args)) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            crate::ops::show(&kitchen, &args).await
        }
        Command::Ops(OpsCommand::Settle(args)) => {
            // The provider is searched before a decision is recorded.
            let config = KitchenConfig {
                backend: args.backend.backend().await?,
                ..KitchenConfig::default()
            };
            let kitchen = connect(&cli.database, config).await?;
            crate::ops::settle(&kitchen, &args).await
        }
        Command::Token(TokenCommand::List { tenant }) => {
            let kitchen = connect(&cli.database, KitchenConfig::default()).await?;
            admin::list_tokens(&kitchen, &tenant).await
        }
    }
}

/// For a SQLite URL, that its file exists, naming the absolute path it was
/// looked for at when it does not. Other URLs pass.
fn require_existing_sqlite_file(database_url: &str) -> anyhow::Result<()> {
    let Some(rest) = database_url.strip_prefix("sqlite:") else {
        return Ok(());
    };
    let path = rest.trim_start_matches("//");
    let path = path.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    let path = std::path::Path::new(path);
    if path.exists() {
        return Ok(());
    }
    let absolute = std::env::current_dir()
        .map(|dir| dir.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    anyhow::bail!(
        "no database at {} (DATABASE_URL={database_url}, from the folder {}); mcp-stdio opens \
         an existing database and never makes one: set DATABASE_URL to the absolute path of the \
         database `tickets serve` and `tickets token issue` use, e.g. sqlite:/srv/tickets/tickets.db",
        absolute.display(),
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| "?".into())
    )
}

async fn connect(database: &DatabaseArgs, config: KitchenConfig) -> anyhow::Result<Kitchen> {
    let config = KitchenConfig {
        database_pooler: database.pooler,
        ..config
    };
    // A SQLite file that cannot be opened (a folder that is a file, no
    // permission) stays so: only a database server can be on its way.
    let patience = if database.url.starts_with("sqlite:") {
        Duration::ZERO
    } else {
        Duration::from_secs(database.start_timeout_secs)
    };
    let started = std::time::Instant::now();
    loop {
        match Kitchen::connect(&database.url, config.clone()).await {
            Ok(kitchen) => return Ok(kitchen),
            // A failover at start (or a database still starting) passes in
            // seconds: keep trying rather than exit and leave it to a
            // supervisor. Migrations apply all or nothing, so an attempt
            // cut short left nothing half done.
            Err(e) if e.may_open_later() && started.elapsed() < patience => {
                tracing::warn!(
                    error = format!("{:#}", anyhow::Error::from(e)),
                    retry_in_ms = START_RETRY.as_millis() as u64,
                    gives_up_after_secs = database.start_timeout_secs,
                    "cannot open the database yet; trying again",
                );
                tokio::time::sleep(START_RETRY).await;
            }
            Err(e) => {
                return Err(anyhow::Error::from(e))
                    .with_context(|| format!("cannot open the database at {}", database.url));
            }
        }
    }
}

/// How long a start waits between two attempts to open the database.
const START_RETRY: Duration = Duration::from_secs(1);

async fn serve(database: &DatabaseArgs, args: ServeArgs, metrics: Metrics) -> anyhow::Result<()> {
    let config = KitchenConfig {
        wait_bound: Duration::from_millis(args.wait_bound_ms),
        replay_window: match args.replay_window_secs {
            Some(secs) => time_secs(secs),
            None => time_days(args.retention_days),
        },
        tombstone_horizon: match args.tombstone_horizon_secs {
            Some(secs) => time_secs(secs),
            None => time_days(args.tombstone_horizon_days),
        },
        sweep_batch: args.sweep_batch,
        sweep_pause: Duration::from_millis(args.sweep_pause_ms),
        max_connections: args.max_connections,
        acquire_timeout: Duration::from_millis(args.acquire_timeout_ms),
        write_group_max: args.write_group_max,
        auth_cache_ttl: Duration::from_millis(args.auth_cache_ms),
        replay_cache: kitchen::ReplayCacheConfig {
            max_entries: args.replay_cache_entries,
            max_bytes: args.replay_cache_mib.saturating_mul(1 << 20),
        },
        backend: args.backend.backend().await?,
        duplicate_guard: args.guard.guard(),
        ..KitchenConfig::default()
    };
    let kitchen = connect(database, config).await?;
    let settings = ServeSettings {
        listen: args.listen,
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        mcp: mcp_door::McpHttpConfig {
            allowed_hosts: args.mcp_allowed_hosts,
            allowed_origins: args.mcp_allowed_origins,
        },
        mcp_tasks: mcp_door::TaskSettings {
            bound: Duration::from_millis(args.mcp_task_after_ms),
            poll_interval: Duration::from_millis(args.mcp_task_poll_ms),
        },
        header_read_timeout: Duration::from_secs(args.header_read_timeout_secs),
        idle_timeout: Duration::from_secs(args.idle_timeout_secs),
        max_connections: usize::try_from(args.max_http_connections).unwrap_or(usize::MAX),
        max_connections_per_client: usize::try_from(args.max_http_connections_per_client)
            .unwrap_or(usize::MAX),
        shutdown_grace: Duration::from_secs(args.shutdown_grace_secs),
        sweep_every: Duration::from_secs(args.sweep_every_secs),
        oauth: args.oauth.settings()?,
        console: match args.admin_listen {
            None if args.admin_token.is_some() => {
                anyhow::bail!(
                    "ADMIN_TOKEN needs ADMIN_LISTEN (--admin-listen): where the console listens"
                )
            }
            None => None,
            Some(listen) => {
                let console = ops_console::ConsoleSettings {
                    listen,
                    token: args.admin_token.clone(),
                };
                console.check().map_err(anyhow::Error::msg)?;
                Some(console)
            }
        },
    };
    let app = Application::build(kitchen.clone(), metrics.clone(), &settings)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = app.local_addr()?;
    if let Some(console) = app.console_addr() {
        tracing::info!(%console, "the operators' console: http://{console}/");
    }
    tracing::info!(
        %addr,
        database = kitchen.database_kind(),
        tickets = kitchen.backend_name(),
        provider = args
            .backend
            .provider_url
            .as_deref()
            .map_or_else(|| "-".to_owned(), provider_client::redacted),
        "serving"
    );
    if kitchen::faults::armed() {
        tracing::warn!(
            after_commit = kitchen::faults::CRASH_AFTER_COMMIT,
            after_dispatch = kitchen::faults::CRASH_AFTER_DISPATCH,
            before_dispatch = kitchen::faults::CRASH_BEFORE_DISPATCH,
            "FAULT INJECTION: a write whose key starts with one of these prefixes aborts the \
             process at that moment. Never deploy this binary."
        );
    }
    if !kitchen.has_tenants().await? {
        eprintln!("{}", admin::first_steps(&database.url, addr));
    }
    app.run_until_stopped(crate::shutdown::signal()).await?;
    kitchen.close().await;
    metrics.shutdown();
    Ok(())
}

fn time_days(days: u32) -> kitchen::RetentionPeriod {
    kitchen::RetentionPeriod::days(i64::from(days))
}

fn time_secs(secs: u64) -> kitchen::RetentionPeriod {
    kitchen::RetentionPeriod::seconds(i64::try_from(secs).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    /// The backend settings of `tickets serve ARGS`.
    async fn backend(args: &[&str]) -> anyhow::Result<kitchen::TicketBackend> {
        let cli = Cli::try_parse_from(["tickets", "serve"].iter().chain(args))?;
        let Command::Serve(serve) = cli.command else {
            anyhow::bail!("not serve");
        };
        serve.backend.backend().await
    }

    #[tokio::test]
    async fn an_inflight_bound_shorter_than_the_call_timeout_is_refused_naming_both() {
        let remote = [
            "--ticket-backend",
            "remote",
            "--provider-url",
            "http://127.0.0.1:1",
        ];
        let short = [
            &remote[..],
            &[
                "--provider-timeout-ms",
                "10000",
                "--provider-max-inflight-ms",
                "2000",
            ],
        ]
        .concat();
        let said = backend(&short).await.expect_err("a trap").to_string();
        assert!(
            said.contains("PROVIDER_MAX_INFLIGHT_MS (2000)")
                && said.contains("PROVIDER_TIMEOUT_MS (10000)"),
            "{said}"
        );
        backend(&remote).await.expect("the defaults hold");
    }

    #[test]
    fn a_provider_url_is_logged_without_its_credentials() {
        let url = "http://tkuser:s3cret-pass@127.0.0.1:19090/api";
        let shown = provider_client::redacted(url);
        assert!(
            !shown.contains("s3cret") && !shown.contains("tkuser"),
            "{shown}"
        );
        assert!(shown.contains("127.0.0.1:19090/api"), "{shown}");
        assert_eq!(provider_client::redacted("http://h:1/"), "http://h:1/");
        let provider = provider_client::HttpProvider::new(url, std::time::Duration::from_secs(1))
            .expect("a provider");
        assert!(!format!("{provider:?}").contains("s3cret"));
    }

    #[test]
    fn mcp_stdio_refuses_a_sqlite_file_that_does_not_exist_and_makes_none() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let missing = dir.path().join("data/tickets.db");
        let url = format!("sqlite:{}", missing.display());
        let err = super::require_existing_sqlite_file(&url).expect_err("no such file");
        let said = err.to_string();
        assert!(said.contains(&missing.display().to_string()), "{said}");
        assert!(said.contains("DATABASE_URL"), "{said}");
        assert!(!missing.exists(), "nothing was made");
        std::fs::create_dir_all(missing.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&missing, b"").expect("a file");
        super::require_existing_sqlite_file(&url).expect("an existing file passes");
        super::require_existing_sqlite_file("postgres://u@h/db").expect("not SQLite");
        let relative = super::require_existing_sqlite_file("sqlite:no/such/dir/t.db")
            .expect_err("relative and missing");
        assert!(
            relative.to_string().contains("/no/such/dir/t.db"),
            "names the absolute path: {relative}"
        );
    }

    #[tokio::test]
    async fn a_provider_ca_file_that_cannot_be_used_names_the_setting() {
        let remote = [
            "--ticket-backend",
            "remote",
            "--provider-url",
            "https://127.0.0.1:1",
        ];
        let missing = [&remote[..], &["--provider-ca-file", "/nonexistent/ca.pem"]].concat();
        let err = backend(&missing).await.expect_err("a missing file");
        assert!(
            err.to_string()
                .contains("PROVIDER_CA_FILE /nonexistent/ca.pem"),
            "{err}"
        );

        let dir = tempfile::tempdir().expect("a temporary directory");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here").expect("write");
        let path = empty.to_str().expect("utf-8");
        let err = backend(&[&remote[..], &["--provider-ca-file", path]].concat())
            .await
            .expect_err("a file without a certificate");
        assert!(err.to_string().contains("PROVIDER_CA_FILE"), "{err}");
        assert!(err.to_string().contains("BEGIN CERTIFICATE"), "{err}");

        assert!(
            backend(&remote).await.is_ok(),
            "no CA file: the system's roots"
        );
    }

    #[tokio::test]
    async fn a_redmine_is_refused_at_start_naming_the_setting_at_fault() {
        let redmine = [
            "--ticket-backend",
            "remote",
            "--provider-kind",
            "redmine",
            "--provider-url",
            "http://127.0.0.1:1",
        ];
        let said = |args: Vec<&'static str>| async move {
            backend(&args).await.expect_err("refused").to_string()
        };
        let no_key = said(redmine.to_vec()).await;
        assert!(
            no_key.contains("REDMINE_API_KEY") && no_key.contains("REDMINE_PROJECT"),
            "{no_key}"
        );
        let settings = [
            &redmine[..],
            &["--redmine-api-key", "k", "--redmine-project", "p"],
        ]
        .concat();
        let window = said([&settings[..], &["--provider-dedup-window-ms", "1000"]].concat()).await;
        assert!(window.contains("PROVIDER_DEDUP_WINDOW_MS"), "{window}");
        let down = said(settings.clone()).await;
        assert!(
            down.contains("PROVIDER_URL") && down.contains("could not be reached"),
            "{down}"
        );
        let statuses = Cli::try_parse_from(
            ["tickets", "serve"]
                .iter()
                .chain(&settings)
                .chain(&["--redmine-statuses", "open=New"]),
        )
        .expect_err("a partial mapping")
        .to_string();
        assert!(
            statuses.contains("missing: in_progress, resolved, closed"),
            "{statuses}"
        );
    }
}

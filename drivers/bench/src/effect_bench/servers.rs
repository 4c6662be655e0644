//! This service as the callers of strategies (a) on the local backend, (c)
//! and (d) meet it: the real `tickets` binary as child processes, each on
//! a database made for the run (a SQLite file, or a fresh PostgreSQL
//! database for the two instances of row "retry on another instance"),
//! with the local or the remote backend and the bench's timings.
//!
//! The kill -9 soak has the same parts (`soak/server.rs`, `soak/database.rs`)
//! but keeps them private to it; these add the backend's settings and a
//! second instance on one database.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

use super::RedmineConfig;
use super::timing;

/// How long a server may take to answer `/readyz` (a debug build migrating
/// a fresh database on a busy machine included).
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The tenant every cell writes for.
pub(crate) const TENANT: &str = "effect-bench";

/// What a server is started with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The provider's URL for the remote backend; `None`: local backend.
    pub(crate) provider: Option<String>,
    /// `Some`: the provider at [`Settings::provider`] is Redmine (the
    /// fault proxy in front of it), reached with these settings
    /// (`PROVIDER_KIND=redmine`) and the Redmine timings.
    pub(crate) redmine: Option<RedmineConfig>,
    /// The provider's dedup window when it honours keys (0: it does not).
    pub(crate) provider_window: Duration,
    /// A short replay window, in seconds, instead of the default 30 days.
    pub(crate) replay_window_secs: Option<u64>,
    /// `DUPLICATE_GUARD`, always set: the grid's servers run with `off`
    /// (as before the guard existed, whatever the default), the guard
    /// columns' with theirs. Its window is the default (10 minutes, far
    /// longer than any cell).
    pub(crate) guard: kitchen::GuardMode,
    /// Where its stderr goes.
    pub(crate) log: PathBuf,
}

/// `tickets` as an admin command (`tenant create …`): what it printed.
pub(crate) async fn admin(
    binary: &Path,
    database_url: &str,
    args: &[&str],
) -> anyhow::Result<String> {
    let output = Command::new(binary)
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("run {} {}", binary.display(), args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "{} {} exited with {}: {}",
            binary.display(),
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8(output.stdout)?.trim().to_owned())
}

/// The tenant and a token for it, on a new database.
pub(crate) async fn tenant(binary: &Path, database_url: &str) -> anyhow::Result<String> {
    admin(binary, database_url, &["tenant", "create", TENANT]).await?;
    admin(binary, database_url, &["token", "issue", TENANT]).await
}

/// `tickets serve`, a child process on a loopback port. Killed when
/// dropped.
pub(crate) struct Server {
    port: u16,
    child: Child,
}

impl Server {
    /// Starts `binary serve` on `database_url` with `settings`, and waits
    /// until it is ready.
    pub(crate) async fn start(
        binary: &Path,
        database_url: &str,
        settings: &Settings,
    ) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&settings.log)
            .with_context(|| format!("open {}", settings.log.display()))?;
        let millis = |d: Duration| d.as_millis().to_string();
        let mut command = Command::new(binary);
        command
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env("DATABASE_URL", database_url)
            .env("RUST_LOG", "warn")
            .env("DUPLICATE_GUARD", settings.guard.as_str())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true);
        if let Some(secs) = settings.replay_window_secs {
            command.env("REPLAY_WINDOW_SECS", secs.to_string());
        }
        if let Some(provider) = &settings.provider {
            let (timeout, max_inflight) = match &settings.redmine {
                None => (timing::PROVIDER_TIMEOUT, timing::PROVIDER_MAX_INFLIGHT),
                Some(_) => (
                    timing::REDMINE_PROVIDER_TIMEOUT,
                    timing::REDMINE_MAX_INFLIGHT,
                ),
            };
            command
                .env("TICKET_BACKEND", "remote")
                .env("PROVIDER_URL", provider)
                .env("PROVIDER_TIMEOUT_MS", millis(timeout))
                .env("PROVIDER_DEDUP_WINDOW_MS", millis(settings.provider_window))
                .env("PROVIDER_MAX_INFLIGHT_MS", millis(max_inflight))
                .env("RECONCILE_EVERY_MS", millis(timing::RECONCILE_EVERY));
            if let Some(redmine) = &settings.redmine {
                command
                    .env("PROVIDER_KIND", "redmine")
                    .env("REDMINE_API_KEY", &redmine.api_key)
                    .env("REDMINE_PROJECT", &redmine.project)
                    .env("REDMINE_REFERENCE_FIELD", &redmine.reference_field);
            }
        }
        let child = command
            .spawn()
            .with_context(|| format!("start {} serve", binary.display()))?;
        let mut server = Self { port, child };
        server.wait_ready().await?;
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()?;
        let url = format!("{}/readyz", self.base_url());
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the server exited before it was ready: {status}");
            }
            if let Ok(response) = http.get(&url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server was not ready within {READY_WITHIN:?}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Stops it (SIGKILL: nothing of it is measured any more) and reaps it.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        self.child.start_kill().context("stop the server")?;
        self.child.wait().await.context("reap the server")?;
        Ok(())
    }
}

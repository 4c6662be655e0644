//! The real `tickets` binary as a child process: its admin commands, and a
//! server that is SIGKILLed and started again on the same port, as a
//! crashed process under a supervisor would be.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

/// How long a (re)started server may take to answer `/readyz`: a debug
/// build migrating a fresh database on a busy machine included.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How often readiness is asked while waiting for it.
const READY_POLL: Duration = Duration::from_millis(25);

/// Runs `binary` with `args` against `database_url` (e.g. `tenant create
/// soak`) and returns what it printed on stdout, trimmed.
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

/// `tickets serve` on a fixed loopback port.
pub(crate) struct Server {
    binary: PathBuf,
    database_url: String,
    port: u16,
    http: reqwest::Client,
    child: Child,
}

impl Server {
    /// Starts `binary serve` over `database_url` on a free port and waits
    /// until it is ready.
    pub(crate) async fn start(binary: &Path, database_url: &str) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = spawn(binary, database_url, port)?;
        let mut server = Self {
            binary: binary.to_owned(),
            database_url: database_url.to_owned(),
            port,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()?,
            child,
        };
        server.wait_ready().await?;
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// SIGKILL (no shutdown, no draining: whatever was in flight is cut
    /// wherever it was), then reaps the process.
    pub(crate) async fn kill(&mut self) -> anyhow::Result<()> {
        // On Unix, start_kill sends SIGKILL.
        self.child.start_kill().context("SIGKILL the server")?;
        self.child.wait().await.context("reap the killed server")?;
        Ok(())
    }

    /// Starts the server again on the same port and waits until it is
    /// ready; returns how long that took.
    pub(crate) async fn restart(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        self.child = spawn(&self.binary, &self.database_url, self.port)?;
        self.wait_ready().await?;
        Ok(started.elapsed())
    }

    /// Polls `/readyz` until it answers 200; fails if the process exits
    /// first or it takes longer than [`READY_WITHIN`].
    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let url = format!("{}/readyz", self.base_url());
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the server exited before it was ready: {status}");
            }
            if let Ok(response) = self.http.get(&url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the server was not ready within {READY_WITHIN:?}");
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }
}

fn spawn(binary: &Path, database_url: &str, port: u16) -> anyhow::Result<Child> {
    Command::new(binary)
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        // Stdout carries the soak's JSON summary; the server's warnings go
        // to stderr with the soak's own progress.
        .stdout(Stdio::null())
        // A soak that fails half-way must not leave a server behind.
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("start {} serve", binary.display()))
}

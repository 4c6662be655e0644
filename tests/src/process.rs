//! The server as a separate process: for checks that crash it, restart it,
//! or run several instances of it.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

use tokio::process::{Child, Command};

/// The fault-injection build of the server, built on first use (cargo
/// skips the work when it is up to date).
///
/// # Panics
/// When cargo cannot build it.
pub fn fault_injection_binary() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "server",
            "--features",
            "fault-injection",
            "--bin",
            "tickets-fault-injection",
        ])
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "cargo could not build tickets-fault-injection"
    );
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    target.join("debug").join("tickets-fault-injection")
}

/// A free loopback port (bound and released; the server binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A `serve` process that can be restarted at the same address.
pub struct ServerProcess {
    binary: PathBuf,
    database_url: String,
    env: Vec<(String, String)>,
    port: u16,
    child: Mutex<Option<Child>>,
}

impl ServerProcess {
    /// Starts `binary serve` on a free port over `database_url`.
    pub fn start(binary: PathBuf, database_url: &str) -> Self {
        Self::start_with_env(binary, database_url, Vec::new())
    }

    /// Starts `binary serve` with extra environment (e.g. the remote
    /// ticket backend's settings), kept for restarts.
    pub fn start_with_env(binary: PathBuf, database_url: &str, env: Vec<(String, String)>) -> Self {
        let server = Self {
            binary,
            database_url: database_url.to_owned(),
            env,
            port: free_port(),
            child: Mutex::new(None),
        };
        server.spawn();
        server
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the process again at the same port (after it died).
    pub async fn restart(&self) {
        let old = self.child.lock().expect("lock").take();
        if let Some(mut old) = old {
            // It crashed (or is about to be replaced): reap it first.
            let _ = old.start_kill();
            let _ = old.wait().await;
        }
        self.spawn();
    }

    fn spawn(&self) {
        let child = Command::new(&self.binary)
            .args(["serve", "--listen", &format!("127.0.0.1:{}", self.port)])
            .env("DATABASE_URL", &self.database_url)
            .env("RUST_LOG", "warn")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the server process");
        *self.child.lock().expect("lock") = Some(child);
    }
}

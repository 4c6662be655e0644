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
    build_binary("tickets-fault-injection", &[])
}

/// The server binary as deployed (`tickets`, default features), built on
/// first use.
///
/// # Panics
/// When cargo cannot build it.
pub fn tickets_binary() -> PathBuf {
    build_binary("tickets", &[])
}

/// Builds `bin` of the server package with `extra` cargo arguments; the
/// tests crate cannot name another package's binaries through
/// `CARGO_BIN_EXE_*`. `--workspace`, like every build in `.ci/run`: cargo
/// resolves features over the packages a build selects, so a build of one
/// package alone would compile most dependencies a second time.
fn build_binary(bin: &str, extra: &[&str]) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "--workspace", "--bin", bin])
        .args(extra)
        .status()
        .expect("run cargo");
    assert!(status.success(), "cargo could not build {bin}");
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    target.join("debug").join(bin)
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

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child
            .lock()
            .expect("lock")
            .as_ref()
            .and_then(Child::id)
    }

    /// Sends SIGTERM, the way an orchestrator stops it.
    ///
    /// # Panics
    /// When it is not running or `kill` fails.
    pub fn terminate(&self) {
        let pid = self.pid().expect("the server is running");
        // Through kill(1): the workspace forbids the unsafe libc call.
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {pid} failed");
    }

    /// Waits at most `bound` for the process to exit; its status, or `None`
    /// when it is still running (it is then left running).
    pub async fn wait_exit(&self, bound: std::time::Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.lock().expect("lock").take();
        let mut child = child?;
        match tokio::time::timeout(bound, child.wait()).await {
            Ok(status) => Some(status.expect("wait for the server process")),
            Err(_) => {
                *self.child.lock().expect("lock") = Some(child);
                None
            }
        }
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

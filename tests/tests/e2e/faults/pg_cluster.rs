//! A private PostgreSQL cluster a test may stop and start: its own data
//! directory under `target/`, its own free loopback port, run as the
//! `postgres` user (PostgreSQL refuses root). The shared server on 5432 is
//! never touched. Dropping it stops it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where Debian keeps the server's programs.
const BIN: &str = "/usr/lib/postgresql/15/bin";

/// A running (or stopped) private cluster.
pub struct PgCluster {
    dir: PathBuf,
    /// The data directory, as `pg_ctl -D` takes it.
    data: String,
    port: u16,
}

impl PgCluster {
    /// Makes and starts a cluster with trust authentication.
    ///
    /// # Panics
    /// When the server's programs or the `postgres` user are missing, with
    /// what to install.
    pub fn start() -> Self {
        assert!(
            Path::new(BIN).join("initdb").exists(),
            "the storage-fault tests start a PostgreSQL cluster of their own: install \
             postgresql-15 (apt-get install -y postgresql-15)"
        );
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/storage-faults")
            .join(format!("pg-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).expect("make the cluster's directory");
        let port = free_port();
        chown_to_postgres(&dir);
        let data = dir.join("data").to_string_lossy().into_owned();
        run_as_postgres(&[
            &format!("{BIN}/initdb"),
            "-D",
            &data,
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
        ]);
        let cluster = Self { dir, data, port };
        cluster.start_again();
        cluster
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops it at once (`pg_ctl stop -m fast`): clients are disconnected.
    pub fn stop(&self) {
        run_as_postgres(&[
            &format!("{BIN}/pg_ctl"),
            "stop",
            "-D",
            &self.data,
            "-m",
            "fast",
            "-w",
        ]);
    }

    /// Starts it (again), waiting until it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log");
        run_as_postgres(&[
            &format!("{BIN}/pg_ctl"),
            "start",
            "-D",
            &self.data,
            "-o",
            &options,
            "-l",
            log.to_str().expect("a UTF-8 path"),
            "-w",
        ]);
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--", &format!("{BIN}/pg_ctl")])
            .args(["stop", "-D", &self.data, "-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `args` as the `postgres` user, and panics with its output if it
/// fails.
fn run_as_postgres(args: &[&str]) {
    let output = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .args(args)
        .output()
        .expect("run runuser");
    assert!(
        output.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Gives `dir` to the `postgres` user, which runs the cluster.
fn chown_to_postgres(dir: &Path) {
    let status = Command::new("chown")
        .args(["-R", "postgres:postgres"])
        .arg(dir)
        .status()
        .expect("run chown");
    assert!(status.success(), "chown {} failed", dir.display());
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

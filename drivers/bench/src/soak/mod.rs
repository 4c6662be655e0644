//! The kill -9 soak: does a retried create survive its server being
//! SIGKILLed at random moments?
//!
//! N clients create tickets with fresh keys against the real `tickets`
//! binary, a child process, while it is SIGKILLed K times at moments drawn
//! from a seed and restarted on the same port. Every attempt that gets no
//! definite answer (a cut connection, a timeout, a 5xx, `in_progress`) is
//! retried with the same key and the same body until it does. About one
//! client in four goes through the MCP door, the rest through REST.
//!
//! Then the database itself is counted, not the answers: per key exactly
//! one ticket (0 duplicates), every acknowledged ticket there under its key
//! (0 lost), every key's operation record `succeeded` (0 unsettled) and
//! naming the acknowledged ticket (0 mismatched). A kill between a commit
//! and its answer is exactly the case the operation key exists for; a kill
//! before the commit must leave nothing behind that a retry trips over.
//!
//! Files: `keys.rs` (key names, and how a title carries its key),
//! `database.rs` (the run's own database), `server.rs` (the child process),
//! `attempt.rs` (one create through a door, sorted), `clients.rs` (the
//! retrying clients), `tally.rs` (their progress, which sets the kill
//! moments), `killer.rs` (the seeded kills), `stored.rs` (the count's SQL),
//! `verdict.rs` (the count's judgement).

mod attempt;
mod clients;
// The effect benchmark makes its scratch databases with it too.
pub(crate) mod database;
mod keys;
mod killer;
mod server;
mod stored;
mod tally;
mod verdict;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

pub use database::DatabaseKind;

use attempt::DoorClient;
use clients::FleetPlan;
use database::SoakDatabase;
use server::Server;
use tally::Tally;

/// The tenant the soak creates tickets for.
const TENANT: &str = "soak";

/// A soak run's settings.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// The `tickets` binary to run.
    pub server_bin: PathBuf,
    /// Which database it runs on.
    pub database: DatabaseKind,
    /// The PostgreSQL server on which a fresh database is made (and
    /// dropped) for the run.
    pub postgres_url: String,
    /// Concurrent clients.
    pub clients: usize,
    /// How many times the server is SIGKILLed and restarted.
    pub kills: u32,
    /// Keys each client creates.
    pub keys_per_client: usize,
    /// Seeds the kill moments; the same seed replays the same schedule.
    pub seed: u64,
    /// How long one attempt may take before it counts as unanswered.
    pub request_timeout: Duration,
    /// How long the clients keep retrying at most; keys still unanswered
    /// then are violations.
    pub give_up_after: Duration,
    /// Sabotage: every retry sends a fresh key with the same body, as a
    /// client without idempotency would. The soak must then find
    /// duplicates (when a kill cut an answer after its commit).
    pub fresh_key_retries: bool,
}

/// What a soak run found, printed as one JSON line.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// `sqlite` or `postgres`.
    pub database: &'static str,
    /// The seed of the kill moments.
    pub seed: u64,
    /// Concurrent clients.
    pub clients: usize,
    /// Keys planned (clients × keys per client).
    pub keys: usize,
    /// Kills asked for.
    pub kills_planned: u32,
    /// Kills done.
    pub kills: u32,
    /// Attempts in flight at the kills, summed.
    pub in_flight_at_kills: usize,
    /// Attempts sent, retries included.
    pub attempts: u64,
    /// Keys acknowledged only after at least one unanswered attempt.
    pub answered_after_retry: usize,
    /// Keys never answered before the deadline.
    pub unanswered: usize,
    /// Keys with a definite answer that was not a ticket.
    pub refused: usize,
    /// Tickets beyond one per key (and tickets with no planned key).
    pub duplicates: usize,
    /// Acknowledged tickets missing from the database under their key.
    pub lost: usize,
    /// Keys without a `succeeded` operation record.
    pub unsettled: usize,
    /// Keys whose record names another ticket than the acknowledged one.
    pub mismatched: usize,
    /// Whether retries used fresh keys (the sabotage).
    pub fresh_key_retries: bool,
    /// Wall-clock seconds of the whole run.
    pub seconds: f64,
}

impl Summary {
    /// True when every key settled exactly once and every kill happened.
    pub fn passed(&self) -> bool {
        self.kills == self.kills_planned
            && self.unanswered == 0
            && self.refused == 0
            && self.duplicates == 0
            && self.lost == 0
            && self.unsettled == 0
            && self.mismatched == 0
    }
}

/// Runs the soak on a fresh database, which is removed afterwards whether
/// the run passed, failed or broke; `progress` hears what happens.
pub async fn run(config: &SoakConfig, progress: &dyn Fn(&str)) -> anyhow::Result<Summary> {
    let database = SoakDatabase::create(config.database, &config.postgres_url).await?;
    let soaked = soak(config, &database, progress).await;
    if let Err(e) = database.remove().await {
        progress(&format!(
            "warning: could not remove the soak database: {e:#}"
        ));
    }
    soaked
}

async fn soak(
    config: &SoakConfig,
    database: &SoakDatabase,
    progress: &dyn Fn(&str),
) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let url = database.url();
    let bin = &config.server_bin;
    anyhow::ensure!(
        bin.is_file(),
        "no server binary at {} (build it first: cargo build --workspace --bin tickets)",
        bin.display()
    );
    server::admin(bin, url, &["tenant", "create", TENANT]).await?;
    let token = server::admin(bin, url, &["token", "issue", TENANT]).await?;
    let mut server = Server::start(bin, url).await?;

    let tally = Arc::new(Tally::new());
    let plan = FleetPlan {
        clients: config.clients,
        keys_per_client: config.keys_per_client,
        fresh_key_retries: config.fresh_key_retries,
        give_up_at: started + config.give_up_after,
    };
    let door_client = DoorClient::new(&server.base_url(), &token, config.request_timeout)?;
    let fleet = tokio::spawn(clients::run(plan, door_client, tally.clone()));
    let total = config.clients * config.keys_per_client;
    let schedule = killer::schedule(config.seed, config.kills, total);
    let kills = match killer::run(&mut server, &schedule, &tally, progress).await {
        Ok(kills) => kills,
        Err(e) => {
            fleet.abort();
            return Err(e.context("kill and restart the server"));
        }
    };
    let records = fleet.await.context("the soak clients")??;
    // Every key is answered (or given up on): the server has nothing left
    // to do, and the count reads what it left.
    server.kill().await?;

    for record in records.iter().filter(|r| r.acknowledged.is_none()).take(5) {
        progress(&format!(
            "{}: {} after {} attempts",
            record.key,
            record
                .refused
                .as_deref()
                .map(|why| format!("refused ({why})"))
                .or_else(|| record
                    .last_unanswered
                    .as_ref()
                    .map(|why| format!("unanswered ({why})")))
                .unwrap_or_else(|| "never tried".into()),
            record.attempts
        ));
    }
    let planned: BTreeMap<String, Option<uuid::Uuid>> = records
        .iter()
        .map(|r| (r.key.clone(), r.acknowledged))
        .collect();
    let stored = stored::read(config.database, url, TENANT).await?;
    let verdict = verdict::judge(&planned, &stored);
    for finding in &verdict.findings {
        progress(&format!("violation: {finding}"));
    }
    Ok(Summary {
        database: config.database.as_str(),
        seed: config.seed,
        clients: config.clients,
        keys: total,
        kills_planned: config.kills,
        kills: kills.kills,
        in_flight_at_kills: kills.in_flight_at_kills,
        attempts: records.iter().map(|r| u64::from(r.attempts)).sum(),
        answered_after_retry: records
            .iter()
            .filter(|r| r.acknowledged.is_some() && r.attempts > 1)
            .count(),
        unanswered: records
            .iter()
            .filter(|r| r.acknowledged.is_none() && r.refused.is_none())
            .count(),
        refused: records.iter().filter(|r| r.refused.is_some()).count(),
        duplicates: verdict.duplicates,
        lost: verdict.lost,
        unsettled: verdict.unsettled,
        mismatched: verdict.mismatched,
        fresh_key_retries: config.fresh_key_retries,
        seconds: started.elapsed().as_secs_f64(),
    })
}

//! `soak`: SIGKILL the real server at random moments while clients create
//! tickets and retry, then count in the database that every key made
//! exactly one ticket. See `soak --help` and `tickets_bench::soak`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use tickets_bench::soak::{self, DatabaseKind, SoakConfig};

/// Kill -9 soak: N clients create with fresh keys while the server is
/// SIGKILLed K times and restarted; every unanswered key is retried with the
/// same key until answered; then the database is counted. Prints one JSON
/// line; exits 1 on any duplicate, loss, unsettled or unanswered key.
#[derive(Debug, Parser)]
#[command(name = "soak", version)]
struct Args {
    /// The `tickets` binary (build it first: cargo build --workspace --bin tickets).
    #[arg(long, default_value = "target/debug/tickets")]
    server_bin: PathBuf,
    /// The database the server runs on (a fresh one, removed afterwards).
    #[arg(long, value_enum, default_value_t = DatabaseKind::Sqlite)]
    database: DatabaseKind,
    /// The PostgreSQL server where a fresh `soak_<random>` database is made.
    #[arg(
        long,
        env = "TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    postgres_url: String,
    /// Concurrent clients (about one in four uses the MCP door).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    clients: u32,
    /// How many times the server is SIGKILLed and restarted.
    #[arg(long, default_value_t = 3)]
    kills: u32,
    /// Keys each client creates, one after another.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    keys_per_client: u32,
    /// Seed of the kill moments (printed; pass it again to replay a run's
    /// schedule). Random when left out.
    #[arg(long)]
    seed: Option<u64>,
    /// Milliseconds an attempt may take before it counts as unanswered.
    #[arg(long, default_value_t = 10_000)]
    request_timeout_ms: u64,
    /// Seconds the clients keep retrying at most; keys unanswered by then
    /// fail the run.
    #[arg(long, default_value_t = 300)]
    give_up_secs: u64,
    /// Sabotage: retries send a fresh key (same body), as a client without
    /// idempotency would. The run should then FAIL with duplicates.
    #[arg(long)]
    fresh_key_retries: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(rand::random);
    let config = SoakConfig {
        server_bin: args.server_bin,
        database: args.database,
        postgres_url: args.postgres_url,
        clients: usize::try_from(args.clients)?,
        kills: args.kills,
        keys_per_client: usize::try_from(args.keys_per_client)?,
        seed,
        request_timeout: Duration::from_millis(args.request_timeout_ms),
        give_up_after: Duration::from_secs(args.give_up_secs),
        fresh_key_retries: args.fresh_key_retries,
    };
    let database = config.database.as_str();
    eprintln!(
        "soak {database}: seed {seed} (replay with --seed {seed}), {} clients × {} keys, {} kills",
        config.clients, config.keys_per_client, config.kills
    );
    let summary = soak::run(&config, &|line| eprintln!("soak {database}: {line}")).await?;
    println!("{}", serde_json::to_string(&summary)?);
    if !summary.passed() {
        eprintln!("soak {database}: FAILED (seed {seed})");
        std::process::exit(1);
    }
    Ok(())
}

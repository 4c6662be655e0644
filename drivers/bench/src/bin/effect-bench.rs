//! `effect-bench`: the fault points × strategies × backends matrix behind
//! the effect ledger, judged by the ground truth. See `effect-bench --help`,
//! `tickets_bench::effect_bench` and `docs/effect-benchmark.md`.

use std::path::PathBuf;

use clap::Parser;

use tickets_bench::effect_bench::{self, Backend, Config, Guard, Row, Strategy};

/// Runs every fault point against blind retry, the provider's native key,
/// this service with a naive client, and this service with tickets-client,
/// on this service's database and on providers that honour or ignore keys;
/// then blind retry through this service with its likely-duplicate guard
/// off, warn and confirm; counts the effects where they are made; writes results.json, prints the
/// tables (and, with --doc, writes them into the doc's results section). Exits 1 if a
/// cell could not be measured or tickets-client ever made an effect twice.
#[derive(Debug, Parser)]
#[command(name = "effect-bench", version)]
struct Args {
    /// The `tickets` binary (build it first: cargo build --workspace --bin tickets).
    #[arg(long, default_value = "target/debug/tickets")]
    server_bin: PathBuf,
    /// The PostgreSQL server where the two-instance row gets a fresh
    /// database.
    #[arg(
        long,
        env = "TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    postgres_url: String,
    /// Seed of the schedule (intent starts, interruption moments); the same
    /// seed replays it.
    #[arg(long, default_value_t = 17)]
    seed: u64,
    /// Intents per cell (default 8; 1 with --smoke).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=500))]
    intents: Option<u32>,
    /// The smoke size: three rows on the local and honouring backends and
    /// two guard cells (warn, confirm) on the local one, one intent per
    /// cell, SQLite only.
    #[arg(long)]
    smoke: bool,
    /// Only this row (repeatable).
    #[arg(long, value_enum)]
    only_row: Vec<Row>,
    /// Only this backend (repeatable).
    #[arg(long, value_enum)]
    only_backend: Vec<Backend>,
    /// Only this strategy (repeatable).
    #[arg(long, value_enum)]
    only_strategy: Vec<Strategy>,
    /// Only this likely-duplicate guard (repeatable): the guard columns
    /// with it; `off` also selects the grid's columns (whose server runs
    /// with the guard off).
    #[arg(long, value_enum)]
    only_guard: Vec<Guard>,
    /// Where results.json goes.
    #[arg(long, default_value = "target/effect-bench")]
    out: PathBuf,
    /// Also write the results into this doc, between its markers.
    #[arg(long)]
    doc: Option<PathBuf>,
    /// Where servers' logs and callers' journals go.
    #[arg(long, default_value = "target/effect-bench/work")]
    work_dir: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let intents = args.intents.unwrap_or(if args.smoke { 1 } else { 8 });
    let command = std::env::args()
        .skip(1)
        .fold("effect-bench".to_owned(), |line, arg| line + " " + &arg);
    let config = Config {
        server_bin: args.server_bin,
        postgres_url: args.postgres_url,
        seed: args.seed,
        intents: usize::try_from(intents)?,
        smoke: args.smoke,
        rows: args.only_row,
        backends: args.only_backend,
        strategies: args.only_strategy,
        guards: args.only_guard,
        work_dir: args.work_dir,
        command,
    };
    eprintln!(
        "effect-bench: seed {} (replay with --seed {}), {} intent(s) per cell{}",
        config.seed,
        config.seed,
        config.intents,
        if config.smoke { ", smoke" } else { "" }
    );
    let report = effect_bench::run(&config, &|line| eprintln!("effect-bench: {line}")).await?;
    report.write(&args.out)?;
    if let Some(doc) = &args.doc {
        report.write_into_doc(doc)?;
    }
    println!("{}", report.markdown());
    eprintln!(
        "effect-bench: {:.0} s; results in {}",
        report.meta.seconds,
        args.out.display()
    );
    let failed = report.failed();
    let duplicated = report.client_duplicates();
    for cell in &duplicated {
        eprintln!(
            "effect-bench: tickets-client made an effect twice in {} {}",
            cell.row.slug(),
            cell.column
        );
    }
    if failed > 0 || !duplicated.is_empty() {
        eprintln!("effect-bench: FAILED ({failed} cell(s) not measured)");
        std::process::exit(1);
    }
    Ok(())
}

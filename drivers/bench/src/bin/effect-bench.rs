//! `effect-bench`: the fault points × strategies × backends matrix behind
//! the effect ledger, judged by the ground truth. See `effect-bench --help`,
//! `tickets_bench::effect_bench` and `docs/effect-benchmark.md`.

use std::path::PathBuf;

use clap::Parser;

use tickets_bench::effect_bench::{self, Backend, Config, Guard, RedmineConfig, Row, Strategy};

/// Runs every fault point against blind retry, the provider's native key,
/// this service with a naive client, and this service with tickets-client,
/// on this service's database, on providers that honour or ignore keys and
/// on a real Redmine (--redmine-*); then blind retry through this service
/// with its likely-duplicate guard off, warn and confirm; counts the effects
/// where they are made; writes results.json, prints the tables (and, with
/// --doc, writes them into the doc's results section). Exits 1 if a cell
/// could not be measured or tickets-client ever made an effect twice.
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
    /// The redmine backend's Redmine, fresh for the run (`python3
    /// tests/redmine/redmine.py serve` prints its settings;
    /// drivers/effect_bench.sh starts one). A run with redmine cells fails
    /// without it.
    #[arg(long, requires_all = ["redmine_api_key", "redmine_project"])]
    redmine_url: Option<String>,
    /// The API key our server and the simple adapter act with in Redmine
    /// (a non-administrator's, so that Redmine's permissions apply).
    #[arg(long, requires = "redmine_url")]
    redmine_api_key: Option<String>,
    /// The API key the count reads Redmine with (default: --redmine-api-key;
    /// an administrator's sees every issue).
    #[arg(long, requires = "redmine_url")]
    redmine_truth_api_key: Option<String>,
    /// The Redmine project's identifier (or id).
    #[arg(long, requires = "redmine_url")]
    redmine_project: Option<String>,
    /// The issue custom field holding each effect's reference: its name, or
    /// its id (a non-administrator cannot look fields up by name).
    #[arg(long, default_value = "External reference")]
    redmine_reference_field: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let intents = args.intents.unwrap_or(if args.smoke { 1 } else { 8 });
    // The Redmine's URL and keys change with every instance: the command
    // that reproduces a run names the flags, not their values.
    let mut secret = false;
    let command = std::env::args()
        .skip(1)
        .fold("effect-bench".to_owned(), |line, arg| {
            let shown = if secret { "…" } else { arg.as_str() };
            let line = line + " " + shown;
            secret = arg.starts_with("--redmine-") && !arg.contains('=');
            line
        });
    let redmine = match (args.redmine_url, args.redmine_api_key, args.redmine_project) {
        (Some(url), Some(api_key), Some(project)) => Some(RedmineConfig {
            url,
            truth_api_key: args
                .redmine_truth_api_key
                .unwrap_or_else(|| api_key.clone()),
            api_key,
            project,
            reference_field: args.redmine_reference_field,
        }),
        _ => None,
    };
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
        redmine,
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

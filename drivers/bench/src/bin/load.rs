//! `load`: the benchmark's load generator and ceilings. See `load --help`
//! and docs/performance.md.

use kitchen::actions::CreateTicket;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use double_fire::Door;
use kitchen::{Kitchen, KitchenConfig, OperationKey, TenantName};
use tickets_bench::load::{self, LoadConfig, Workload};

/// Load and ceilings for the retry-safe ticket service.
#[derive(Debug, Parser)]
#[command(name = "load", version)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DoorArg {
    Rest,
    Mcp,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum WorkloadArg {
    Create,
    Replay,
    Mixed,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CeilingKind {
    /// The create transaction: claim, ticket insert, history entry, result,
    /// committed.
    Create,
    /// The operation record by primary key: the replay read.
    Read,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Fire N concurrent keep-alive clients at a running server, then check
    /// its state for duplicates and losses. Prints one JSON report on stdout.
    Run {
        /// Base URL of the server.
        #[arg(long)]
        url: String,
        /// A bearer token.
        #[arg(long, env = "LOAD_TOKEN", hide_env_values = true)]
        token: String,
        /// Which door.
        #[arg(long, value_enum, default_value_t = DoorArg::Rest)]
        door: DoorArg,
        /// What each request does.
        #[arg(long, value_enum, default_value_t = WorkloadArg::Create)]
        workload: WorkloadArg,
        /// For `mixed`: the share of requests that retry an earlier key.
        #[arg(long, default_value_t = 0.25)]
        retry_share: f64,
        /// Concurrent clients.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// Seconds to fire.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// No progress lines on stderr.
        #[arg(long)]
        quiet: bool,
    },
    /// The store's own create transaction or replay read in a tight loop,
    /// with the server's settings and no HTTP: the ceiling the service is
    /// measured against. Prints transactions per second.
    Ceiling {
        /// The database (`sqlite:PATH` or `postgres://…`).
        #[arg(long, env = "DATABASE_URL")]
        database_url: String,
        /// Which path.
        #[arg(long, value_enum)]
        kind: CeilingKind,
        /// Concurrent tasks.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// Seconds to run.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// Print a pgbench script that runs the store's own statements (the
    /// create's write transaction, or the replay read) for a tenant.
    PgbenchScript {
        /// Which path.
        #[arg(long, value_enum)]
        kind: CeilingKind,
        /// The tenant's id (a UUID).
        #[arg(long)]
        tenant_id: String,
        /// For `read`: the operation key to read.
        #[arg(long, default_value = "")]
        key: String,
    },
    /// Add N operation records (and tickets) to a database, for the growth
    /// case. Prints the tenant id used.
    Seed {
        /// The database.
        #[arg(long, env = "DATABASE_URL")]
        database_url: String,
        /// How many.
        #[arg(long)]
        operations: u64,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Args::parse().command {
        Command::Run {
            url,
            token,
            door,
            workload,
            retry_share,
            concurrency,
            seconds,
            quiet,
        } => {
            let config = LoadConfig {
                base_url: url.trim_end_matches('/').to_owned(),
                token,
                door: match door {
                    DoorArg::Rest => Door::Rest,
                    DoorArg::Mcp => Door::Mcp,
                },
                workload: match workload {
                    WorkloadArg::Create => Workload::Create,
                    WorkloadArg::Replay => Workload::Replay,
                    WorkloadArg::Mixed => Workload::Mixed(retry_share.clamp(0.0, 1.0)),
                },
                concurrency,
                duration: Duration::from_secs_f64(seconds),
                progress: !quiet,
            };
            let report = load::run(&config).await?;
            eprintln!("{}", report.line());
            println!("{}", serde_json::to_string(&report)?);
            let v = &report.verification;
            anyhow::ensure!(
                v.duplicates == 0 && v.lost == 0,
                "the server duplicated or lost tickets: {v:?}"
            );
        }
        Command::Ceiling {
            database_url,
            kind,
            concurrency,
            seconds,
        } => {
            let kitchen = Kitchen::connect(
                &database_url,
                KitchenConfig {
                    max_connections: u32::try_from(concurrency).unwrap_or(u32::MAX).max(10),
                    ..KitchenConfig::default()
                },
            )
            .await?;
            let tenant = ceiling_tenant(&kitchen).await?;
            let duration = Duration::from_secs_f64(seconds);
            let done = match kind {
                CeilingKind::Create => {
                    kitchen::bench::create_ceiling(&kitchen, tenant, concurrency, duration).await?
                }
                CeilingKind::Read => {
                    let key = OperationKey::parse(uuid::Uuid::now_v7().to_string())?;
                    let draft = kitchen::TicketDraft {
                        project_id: Some("ceiling".into()),
                        title: Some("Ceiling".into()),
                        ..Default::default()
                    };
                    let primed = kitchen.write::<CreateTicket>(tenant, &key, &draft).await?;
                    anyhow::ensure!(
                        matches!(primed, kitchen::Outcome::Created(_)),
                        "could not make the record the read ceiling reads: {}",
                        primed.name()
                    );
                    kitchen::bench::read_ceiling(&kitchen, tenant, &key, concurrency, duration)
                        .await?
                }
            };
            println!("{:.1}", done as f64 / seconds);
        }
        Command::PgbenchScript {
            kind,
            tenant_id,
            key,
        } => print!("{}", pgbench_script(kind, &tenant_id, &key)),
        Command::Seed {
            database_url,
            operations,
        } => {
            let kitchen = Kitchen::connect(&database_url, KitchenConfig::default()).await?;
            let tenant = ceiling_tenant(&kitchen).await?;
            kitchen::bench::seed(&kitchen, tenant, operations).await?;
            println!("{tenant}");
        }
    }
    Ok(())
}

/// A tenant of its own for ceiling and seed runs.
async fn ceiling_tenant(kitchen: &Kitchen) -> anyhow::Result<kitchen::TenantId> {
    let name = TenantName::parse(format!(
        "bench-{}",
        &uuid::Uuid::now_v7().simple().to_string()[20..]
    ))
    .map_err(anyhow::Error::msg)?;
    let tenant = kitchen
        .create_tenant(name)
        .await?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(tenant.id)
}

/// The store's statements with pgbench-side values for their parameters.
///
/// The create ceiling is the store's create on PostgreSQL: one statement
/// that claims the key (its result recorded with the claim) and inserts the
/// ticket and its first history entry. The per-transaction values come from
/// one pgbench-side random number (`\set`, no round trip): the key, and the
/// ticket's and entry's ids, which start with the script's creation time in
/// milliseconds like the store's UUID v7, so the indexes grow near their
/// right edge as they do under the service.
fn pgbench_script(kind: CeilingKind, tenant: &str, key: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let bind = |sql: &str, values: &[String]| {
        // Highest numbers first, so that $10 is not read as $1 followed by 0.
        let mut sql = sql.to_owned();
        for (i, value) in values.iter().enumerate().rev() {
            sql = sql.replace(&format!("${}", i + 1), value);
        }
        sql
    };
    let tenant = format!("{}::uuid", quote(tenant));
    let action = quote(kitchen::Action::CreateTicket.as_str());
    match kind {
        CeilingKind::Create => {
            let millis = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
            let id = |version: char| {
                format!(
                    "(lpad(to_hex({millis}::bigint), 12, '0') || '{version}' || lpad(to_hex(:r), 19, '0'))"
                )
            };
            let key = format!("('ceiling-' || {})", id('7'));
            let ticket = format!("{}::uuid", id('7'));
            let entry = format!("{}::uuid", id('8'));
            // As a create stores them: the ticket's JSON (with its real id)
            // and the changes of its first history entry.
            let snapshot = format!(
                "('{{\"id\":\"' || {ticket}::text || '\",\"project_id\":\"ceiling\",\"title\":\"Ceiling\",\"description\":null,\"priority\":\"normal\",\"status\":\"open\",\"created_at\":\"2026-01-01T00:00:00Z\",\"version\":1}}')"
            );
            let changes = quote(
                r#"{"priority":{"from":null,"to":"normal"},"project_id":{"from":null,"to":"ceiling"},"status":{"from":null,"to":"open"},"title":{"from":null,"to":"Ceiling"}}"#,
            );
            let horizon = |d: kitchen::RetentionPeriod| {
                format!(
                    "date_trunc('second', now()) + interval '{} seconds'",
                    d.whole_seconds() + 1
                )
            };
            let claim = [
                tenant.clone(),
                action.clone(),
                key.clone(),
                format!("{}::smallint", kitchen::FINGERPRINT_VERSION),
                quote(&"0".repeat(64)),
                quote(kitchen::OperationState::Succeeded.as_str()),
                ticket.clone(),
                snapshot,
                "now()".into(),
                horizon(kitchen::DEFAULT_TOMBSTONE_HORIZON),
                horizon(kitchen::DEFAULT_REPLAY_WINDOW),
                ticket.clone(),
                // result_snapshot_tail: the ceiling's ticket has no
                // description to store the answer around.
                "NULL".into(),
            ];
            let insert_ticket = [
                ticket.clone(),
                tenant.clone(),
                "'ceiling'".into(),
                "'Ceiling'".into(),
                "NULL".into(),
                "'normal'".into(),
                "'open'".into(),
                "now()".into(),
                "NULL".into(),
                "NULL".into(),
                kitchen::Version::FIRST.get().to_string(),
                "NULL".into(),
                // labels: none
                "'[]'".into(),
            ];
            let insert_history = [
                entry,
                tenant,
                ticket,
                action,
                key,
                "NULL".into(),
                changes,
                kitchen::Version::FIRST.get().to_string(),
                "now()".into(),
                // changes_tail: whole, as above.
                "NULL".into(),
            ];
            let values: Vec<String> = claim
                .into_iter()
                .chain(insert_ticket)
                .chain(insert_history)
                .collect();
            let create = bind(&kitchen::bench::create_statement(), &values);
            format!("\\set r random(0, 4611686018427387903)\n{create};\n")
        }
        CeilingKind::Read => {
            let read = bind(
                kitchen::bench::SELECT_OPERATION,
                &[tenant, action, quote(key)],
            );
            format!("{read};\n")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statement up to its first parameter: what binding leaves as is.
    fn statement_head(sql: &str) -> &str {
        &sql[..sql.find('$').unwrap_or(sql.len())]
    }

    #[test]
    fn the_create_ceiling_is_the_stores_create_statement() {
        let script = pgbench_script(
            CeilingKind::Create,
            "00000000-0000-0000-0000-000000000001",
            "",
        );
        let lines: Vec<&str> = script.lines().collect();
        assert_eq!(lines.len(), 2, "{script}");
        assert!(lines[0].starts_with("\\set r random("), "{script}");
        // The store's one statement, with every parameter bound.
        let statement = kitchen::bench::create_statement();
        assert!(lines[1].starts_with(statement_head(&statement)), "{script}");
        assert!(
            lines[1].ends_with("SELECT count(*) FROM claim;"),
            "{script}"
        );
        assert!(
            !lines[1].contains('$'),
            "a parameter is left unbound: {script}"
        );
        // One random number names the key and both ids of a transaction.
        assert!(lines[1].matches("to_hex(:r)").count() >= 5, "{script}");
    }

    #[test]
    fn the_read_ceiling_is_the_replays_read() {
        let script = pgbench_script(
            CeilingKind::Read,
            "00000000-0000-0000-0000-000000000001",
            "it's-a-key",
        );
        assert!(script.starts_with(statement_head(kitchen::bench::SELECT_OPERATION)));
        assert!(script.contains("'it''s-a-key'"), "{script}");
        assert!(!script.contains('$'), "{script}");
    }
}

//! `load`: the benchmark's load generator and ceilings. See `load --help`
//! and docs/performance.md.

use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use drivers::double_fire::Door;
use drivers::load::{self, LoadConfig, Workload};
use kitchen::{Kitchen, KitchenConfig, OperationKey, TenantName};

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
                    let primed = kitchen.create_ticket(tenant, &key, &draft).await?;
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
/// The create ceiling is the store's write transaction for a create: BEGIN,
/// the claim, the ticket, its first history entry, the result on the claimed
/// row, COMMIT; the four statements carry one key and one ticket id per
/// transaction. pgbench substitutes `:name` with a variable (also inside
/// quotes), and `\gset` makes the columns of a query's one row variables: so
/// one SELECT, right after BEGIN, makes the per-transaction values. It
/// stands where the store sets its lock bound (`set_config`), so the script
/// makes as many round trips as the store's transaction.
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
            let key = "':key'".to_owned();
            let ticket = "':ticket'::uuid".to_owned();
            // As a create stores them: the ticket's JSON (with its real id)
            // and the changes of its first history entry.
            let snapshot = quote(
                r#"{"id":":ticket","project_id":"ceiling","title":"Ceiling","description":null,"priority":"normal","status":"open","created_at":"2026-01-01T00:00:00Z","version":1}"#,
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
            let claim = bind(
                kitchen::bench::CLAIM,
                &[
                    tenant.clone(),
                    action.clone(),
                    key.clone(),
                    format!("{}::smallint", kitchen::FINGERPRINT_VERSION),
                    quote(&"0".repeat(64)),
                    quote(kitchen::OperationState::Succeeded.as_str()),
                    // The claim records no result yet: FINISH does.
                    "NULL".into(),
                    "NULL".into(),
                    "now()".into(),
                    horizon(kitchen::DEFAULT_TOMBSTONE_HORIZON),
                    horizon(kitchen::DEFAULT_REPLAY_WINDOW),
                    // The resource: FINISH records it.
                    "NULL".into(),
                ],
            );
            let insert_ticket = bind(
                kitchen::bench::INSERT_TICKET,
                &[
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
                ],
            );
            let insert_history = bind(
                kitchen::bench::INSERT_HISTORY,
                &[
                    "':entry'::uuid".into(),
                    tenant.clone(),
                    ticket.clone(),
                    action.clone(),
                    key.clone(),
                    "NULL".into(),
                    changes,
                    kitchen::Version::FIRST.get().to_string(),
                    "now()".into(),
                ],
            );
            let finish = bind(
                kitchen::bench::FINISH,
                &[tenant, action, key, ticket.clone(), snapshot, ticket],
            );
            // Time-ordered ids, as the store's (UUID v7: the milliseconds
            // first), so the indexes grow at their right edge as they do
            // under the service; random ids would scatter the inserts.
            let v7 = "(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') \
                      || '7' || substr(md5(random()::text), 1, 19))";
            format!(
                "BEGIN;\n\
                 SELECT {v7} AS key, {v7}::uuid AS ticket, {v7}::uuid AS entry \\gset\n\
                 {claim};\n{insert_ticket};\n{insert_history};\n{finish};\n\
                 COMMIT;\n"
            )
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
    fn the_create_ceiling_is_the_stores_write_transaction() {
        let script = pgbench_script(
            CeilingKind::Create,
            "00000000-0000-0000-0000-000000000001",
            "",
        );
        let lines: Vec<&str> = script.lines().collect();
        assert_eq!(lines.first(), Some(&"BEGIN;"), "{script}");
        assert_eq!(lines.last(), Some(&"COMMIT;"), "{script}");
        assert!(lines[1].ends_with("AS entry \\gset"), "{script}");
        // The store's four statements, in its order, each with every
        // parameter bound.
        let statements = [
            kitchen::bench::CLAIM,
            kitchen::bench::INSERT_TICKET,
            kitchen::bench::INSERT_HISTORY,
            kitchen::bench::FINISH,
        ];
        for (line, sql) in lines[2..6].iter().zip(statements) {
            assert!(line.starts_with(statement_head(sql)), "{line}");
            assert!(!line.contains('$'), "a parameter is left unbound: {line}");
        }
        // One key and one ticket id per transaction, in every statement
        // that names them.
        for (line, names) in lines[2..6].iter().zip([
            &[":key"][..],
            &[":ticket"],
            &[":key", ":ticket", ":entry"],
            &[":key", ":ticket"],
        ]) {
            for name in names {
                assert!(line.contains(&format!("'{name}'")), "{name} in {line}");
            }
        }
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

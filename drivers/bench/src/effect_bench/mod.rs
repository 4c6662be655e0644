//! The effect benchmark: is the effect ledger worth it, or does a simpler
//! policy do as well?
//!
//! The report behind the ledger says it should be rejected if blind
//! retry, or "use the provider's native key, otherwise don't auto-retry",
//! gives the same zero duplicates and fewer unresolved outcomes across the
//! same faults. This runs that comparison: every fault point (a row of
//! [`Row`]) against every strategy ([`Strategy`]: (a) blind retry with a
//! fresh key, (b) the provider's native key or no retry, (c) this service
//! with a naive same-key client, (d) this service with `tickets-client`)
//! on every backend ([`Backend`]: ours, a provider that honours keys, one
//! that ignores them), the same intents and the same seeded schedule for
//! each.
//!
//! A cell is judged by the ground truth only: tickets per intent counted at
//! the provider simulator (`/_sim/counts`) or in the database our server
//! wrote, never by what any caller was told. Its numbers, apart: extra
//! effects, missing effects, false deduplications, unresolved outcomes;
//! then attempts, time spent unknown, latency.
//!
//! Files: `matrix.rs` (rows, columns, which cells exist, how each fault is
//! made), `timing.rs` (every duration, the seeded schedule), `wire.rs` (one
//! attempt and what a status-reading client hears), `callers.rs`
//! (strategies (a) to (c)), `client_caller.rs` (strategy (d)),
//! `scenario.rs` (one intent's story under a row), `proxy.rs` (the proxy
//! every caller goes through: faults on the caller's side of the wire,
//! attempts counted), `servers.rs` (our server as child processes, their
//! databases), `env.rs` (what one backend's cells share), `cell.rs` (one
//! cell, end to end), `truth.rs` (the count), `metrics.rs` (a cell's
//! numbers), `report.rs` (JSON, markdown, the doc).

mod callers;
mod cell;
mod client_caller;
mod env;
mod matrix;
mod metrics;
mod proxy;
mod report;
mod scenario;
mod servers;
mod timing;
mod truth;
mod wire;

use std::path::PathBuf;
use std::time::Instant;

pub use matrix::{Backend, Column, Row, Strategy};
pub use metrics::{Metrics, Spread};
pub use report::{CellReport, CellStatus, DOC_END, DOC_START, Meta, Report};

use matrix::{Applies, applies};

/// A run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `tickets` binary.
    pub server_bin: PathBuf,
    /// The PostgreSQL server on which the two-instance row's database is
    /// made (and dropped).
    pub postgres_url: String,
    /// Seeds the schedule; the same seed replays it.
    pub seed: u64,
    /// Intents per cell.
    pub intents: usize,
    /// The smoke subset: a few cells on SQLite only.
    pub smoke: bool,
    /// Only these rows (all when empty).
    pub rows: Vec<Row>,
    /// Only these backends (all when empty).
    pub backends: Vec<Backend>,
    /// Only these strategies (all when empty).
    pub strategies: Vec<Strategy>,
    /// Where servers' logs and callers' journals go.
    pub work_dir: PathBuf,
    /// The command line that reproduces the run, for the report.
    pub command: String,
}

/// The rows of the smoke run: a provider's lost answer, ours, and the
/// retry past the provider's window (the cell the simple adapter loses).
const SMOKE_ROWS: [Row; 3] = [
    Row::MutatedAnswerLost,
    Row::AnswerLostToCaller,
    Row::AfterProviderWindow,
];

/// The backends of the smoke run.
const SMOKE_BACKENDS: [Backend; 2] = [Backend::Local, Backend::Honour];

impl Config {
    fn wants(&self, row: Row, column: Column) -> bool {
        fn pick<T: PartialEq>(list: &[T], x: T) -> bool {
            list.is_empty() || list.contains(&x)
        }
        let smoke =
            !self.smoke || (SMOKE_ROWS.contains(&row) && SMOKE_BACKENDS.contains(&column.backend));
        smoke
            && pick(&self.rows, row)
            && pick(&self.backends, column.backend)
            && pick(&self.strategies, column.strategy)
    }
}

/// Runs the matrix (the cells `config` wants), telling `progress` about
/// each cell as it completes.
pub async fn run(config: &Config, progress: &dyn Fn(&str)) -> anyhow::Result<Report> {
    anyhow::ensure!(
        config.server_bin.is_file(),
        "no server binary at {} (build it first: cargo build --workspace --bin tickets)",
        config.server_bin.display()
    );
    std::fs::create_dir_all(&config.work_dir)?;
    // Fresh journals per run: a journal left by an earlier run must not be
    // resumed by this one.
    let journals = tempfile::Builder::new()
        .prefix("journals")
        .tempdir_in(&config.work_dir)?;
    let started = Instant::now();
    let started_at = kitchen::rfc3339(time::OffsetDateTime::now_utc());
    let columns = Column::all();
    let mut cells = Vec::new();
    for backend in Backend::ALL {
        let wanted: Vec<(Row, usize, Column)> = Row::ALL
            .iter()
            .flat_map(|&row| {
                columns
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.backend == backend)
                    .map(move |(i, &c)| (row, i, c))
            })
            .collect();
        let runs = |&(row, _, column): &(Row, usize, Column)| {
            config.wants(row, column) && matches!(applies(row, column), Applies::Yes(_))
        };
        let mut env = if wanted.iter().any(runs) {
            let logs = config.work_dir.join("logs");
            std::fs::create_dir_all(&logs)?;
            Some(env::Env::start(backend, &config.server_bin, &config.postgres_url, &logs).await?)
        } else {
            None
        };
        for (row, column_index, column) in wanted {
            let status = match (applies(row, column), &mut env) {
                (Applies::No(reason), _) => CellStatus::NotApplicable {
                    reason: reason.into(),
                },
                (Applies::Yes(_), _) if !config.wants(row, column) => CellStatus::NotRun,
                (Applies::Yes(mechanism), Some(env)) => {
                    let cell = cell::Cell {
                        row,
                        column,
                        column_index,
                        intents: config.intents,
                        seed: config.seed,
                    };
                    let began = Instant::now();
                    match cell::run(env, cell, journals.path()).await {
                        Ok(metrics) => {
                            progress(&format!(
                                "{:<28} {:<10} extra {} missing {} false-dedup {} unresolved {} \
                                 (attempts {:.2}, {:.1} s)",
                                row.slug(),
                                column.label(),
                                metrics.extra,
                                metrics.missing,
                                metrics.false_dedup,
                                metrics.unresolved,
                                metrics.attempts_mean,
                                began.elapsed().as_secs_f64()
                            ));
                            CellStatus::Measured {
                                mechanism: mechanism.into(),
                                metrics: Box::new(metrics),
                            }
                        }
                        Err(e) => {
                            progress(&format!("{} {}: FAILED: {e:#}", row.slug(), column.label()));
                            CellStatus::Failed {
                                error: format!("{e:#}"),
                            }
                        }
                    }
                }
                (Applies::Yes(_), None) => CellStatus::NotRun,
            };
            cells.push(CellReport {
                row,
                backend: column.backend,
                strategy: column.strategy,
                column: column.label(),
                status,
            });
        }
        if let Some(env) = env
            && let Err(e) = env.stop().await
        {
            progress(&format!("warning: could not tear {backend} down: {e:#}"));
        }
    }
    Ok(Report {
        meta: Meta {
            seed: config.seed,
            smoke: config.smoke,
            intents_per_cell: config.intents,
            started_at,
            seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            command: config.command.clone(),
            timings_ms: timing::table(),
        },
        cells,
    })
}

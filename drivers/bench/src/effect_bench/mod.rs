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
//! that ignores them, a real Redmine), the same intents and the same
//! seeded schedule for each. Beside that grid, the guard columns: (a) through this service on
//! every backend with its likely-duplicate guard ([`Guard`]) `off`, `warn`
//! or `confirm`, what it costs and what it saves.
//!
//! A cell is judged by the ground truth only: tickets per intent counted at
//! the provider simulator (`/_sim/counts`), in Redmine (issues by exact
//! subject, read from Redmine itself) or in the database our server
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

pub use matrix::{Backend, Column, Guard, Row, Strategy};
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
    /// Only these guards (all when empty); the grid's columns, whose
    /// server runs with the guard off, count as `off`.
    pub guards: Vec<Guard>,
    /// Where servers' logs and callers' journals go.
    pub work_dir: PathBuf,
    /// The command line that reproduces the run, for the report.
    pub command: String,
    /// The Redmine of the `redmine` backend; a run that wants a Redmine
    /// cell without it fails before any cell runs.
    pub redmine: Option<RedmineConfig>,
}

/// A running Redmine for the `redmine` backend (`python3
/// tests/redmine/redmine.py serve` prints these), fresh for the run: the
/// count reads issues by exact subject, and this run's subjects must be
/// the only ones there.
#[derive(Debug, Clone)]
pub struct RedmineConfig {
    /// Redmine's own URL; the fault proxy is put in front of it, and the
    /// count reads it directly.
    pub url: String,
    /// The API key our server and the simple adapter (b) act with (a
    /// non-administrator's, so that Redmine's permissions and workflow
    /// apply).
    pub api_key: String,
    /// The API key the count reads with (an administrator's sees every
    /// issue, whatever the acting user may see).
    pub truth_api_key: String,
    /// The project's identifier (or id).
    pub project: String,
    /// The issue custom field holding each effect's reference, by name or
    /// (for a non-administrator) by id.
    pub reference_field: String,
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

/// The guard cells of the smoke run (beside the grid's): blind retry on
/// our database after a lost answer, flagged and refused.
const SMOKE_GUARDS: [(Row, Backend, Guard); 2] = [
    (Row::AnswerLostToCaller, Backend::Local, Guard::Warn),
    (Row::AnswerLostToCaller, Backend::Local, Guard::Confirm),
];

impl Config {
    fn wants(&self, row: Row, column: Column) -> bool {
        fn pick<T: PartialEq>(list: &[T], x: T) -> bool {
            list.is_empty() || list.contains(&x)
        }
        let smoke = !self.smoke
            || match column.guard {
                None => SMOKE_ROWS.contains(&row) && SMOKE_BACKENDS.contains(&column.backend),
                Some(guard) => SMOKE_GUARDS.contains(&(row, column.backend, guard)),
            };
        smoke
            && pick(&self.rows, row)
            && pick(&self.backends, column.backend)
            && pick(&self.strategies, column.strategy)
            && pick(&self.guards, column.guard.unwrap_or(Guard::Off))
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
    let columns = Column::every();
    let redmine_wanted = Row::ALL.iter().any(|&row| {
        columns.iter().any(|&c| {
            c.backend.redmine()
                && config.wants(row, c)
                && matches!(applies(row, c), Applies::Yes(_))
        })
    });
    anyhow::ensure!(
        !redmine_wanted || config.redmine.is_some(),
        "the redmine backend needs a running Redmine: --redmine-url, --redmine-api-key, \
         --redmine-project, --redmine-reference-field (drivers/effect_bench.sh starts one \
         with tests/redmine/redmine.py serve and passes them); or leave it out with \
         --only-backend local --only-backend honour --only-backend ignore"
    );
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
        let backend_began = Instant::now();
        let mut env = if wanted.iter().any(runs) {
            let logs = config.work_dir.join("logs");
            std::fs::create_dir_all(&logs)?;
            let redmine = if backend.redmine() {
                config.redmine.as_ref()
            } else {
                None
            };
            Some(
                env::Env::start(
                    backend,
                    &config.server_bin,
                    &config.postgres_url,
                    &logs,
                    redmine,
                )
                .await?,
            )
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
                            let guard = match column.guard {
                                Some(_) => format!(
                                    " flagged {} (heard {}) refused {} (heard {})",
                                    metrics.possible_duplicate_flagged,
                                    metrics.possible_duplicate_flagged_heard,
                                    metrics.possible_duplicate_refused,
                                    metrics.possible_duplicate_refused_heard
                                ),
                                None => String::new(),
                            };
                            progress(&format!(
                                "{:<28} {:<18} extra {} missing {} false-dedup {} unresolved {}{guard} \
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
                guard: column.guard,
                column: column.label(),
                status,
            });
        }
        if let Some(env) = env {
            if let Err(e) = env.stop().await {
                progress(&format!("warning: could not tear {backend} down: {e:#}"));
            }
            progress(&format!(
                "{backend}: {:.0} s",
                backend_began.elapsed().as_secs_f64()
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(smoke: bool) -> Config {
        Config {
            server_bin: PathBuf::new(),
            postgres_url: String::new(),
            seed: 17,
            intents: 1,
            smoke,
            rows: Vec::new(),
            backends: Vec::new(),
            strategies: Vec::new(),
            guards: Vec::new(),
            work_dir: PathBuf::new(),
            command: String::new(),
            redmine: None,
        }
    }

    fn runs(config: &Config) -> Vec<(Row, Column)> {
        Row::ALL
            .iter()
            .flat_map(|&r| Column::every().into_iter().map(move |c| (r, c)))
            .filter(|&(r, c)| config.wants(r, c) && matches!(applies(r, c), Applies::Yes(_)))
            .collect()
    }

    #[test]
    fn the_smoke_run_has_its_thirteen_grid_cells_and_two_guard_cells() {
        let cells = runs(&config(true));
        assert_eq!(cells.len(), 15);
        let guarded: Vec<Option<Guard>> = cells
            .iter()
            .filter_map(|(_, c)| c.guard.is_some().then_some(c.guard))
            .collect();
        assert_eq!(guarded, [Some(Guard::Warn), Some(Guard::Confirm)]);
    }

    #[test]
    fn only_guard_off_keeps_the_grid_and_drops_the_other_guards() {
        let mut off = config(false);
        off.guards = vec![Guard::Off];
        let cells = runs(&off);
        assert!(
            cells
                .iter()
                .all(|(_, c)| matches!(c.guard, None | Some(Guard::Off)))
        );
        assert_eq!(
            cells.iter().filter(|(_, c)| c.guard.is_none()).count(),
            122 + 36
        );
    }

    #[test]
    fn the_smoke_run_needs_no_redmine() {
        assert!(
            runs(&config(true))
                .iter()
                .all(|(_, c)| c.backend != Backend::Redmine)
        );
    }

    #[tokio::test]
    async fn a_run_that_wants_redmine_without_one_fails_before_any_cell() {
        let mut only = config(false);
        only.server_bin = std::env::current_exe().expect("the test binary");
        only.backends = vec![Backend::Redmine];
        let dir = tempfile::tempdir().expect("a directory");
        only.work_dir = dir.path().to_owned();
        let error = run(&only, &|_| {}).await.expect_err("no Redmine given");
        assert!(format!("{error}").contains("--redmine-url"), "{error}");
    }

    #[test]
    fn titles_are_unique_within_a_run_on_redmine() {
        // The count reads Redmine by exact subject across one project:
        // every intent of every Redmine cell needs a subject of its own.
        let mut seen = std::collections::BTreeSet::new();
        for row in Row::ALL {
            for (column_index, column) in Column::every().into_iter().enumerate() {
                if !column.backend.redmine() {
                    continue;
                }
                let cell = cell::Cell {
                    row,
                    column,
                    column_index,
                    intents: 8,
                    seed: 17,
                };
                for intent in 0..500 {
                    assert!(seen.insert(cell.title(intent)), "{}", cell.title(intent));
                }
            }
        }
    }
}

//! The run's results as the three things people read: JSON (every cell,
//! with the run's metadata), markdown tables (the four judging numbers as
//! a grid, the same for blind retry under each likely-duplicate guard with
//! what the guard said, then attempts and times per cell, then which
//! mechanism made each fault), and, in the benchmark's doc, the same
//! markdown between two markers so that the doc always holds the latest
//! full run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::matrix::{Applies, Backend, Column, Guard, Row, Strategy, applies};
use super::metrics::{Metrics, Spread};

/// Where the generated part of the doc starts.
pub const DOC_START: &str = "<!-- effect-bench:results:start -->";
/// Where it ends.
pub const DOC_END: &str = "<!-- effect-bench:results:end -->";

/// What became of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CellStatus {
    /// Measured.
    Measured {
        /// How its fault was made.
        mechanism: String,
        /// Its numbers.
        metrics: Box<Metrics>,
    },
    /// The cell cannot exist.
    NotApplicable {
        /// Why.
        reason: String,
    },
    /// Not in this run (`--smoke`, `--only-*`).
    NotRun,
    /// It could not be measured.
    Failed {
        /// Why.
        error: String,
    },
}

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellReport {
    /// The fault point.
    pub row: Row,
    /// Where effects are made.
    pub backend: Backend,
    /// How the caller goes about them.
    pub strategy: Strategy,
    /// A guard column's likely-duplicate guard (absent: the grid's, whose
    /// server runs with the guard off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<Guard>,
    /// `honour/c`, `honour/a+warn`.
    pub column: String,
    /// What became of it.
    #[serde(flatten)]
    pub status: CellStatus,
}

/// The run's settings and circumstances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Meta {
    /// The seed of the schedule.
    pub seed: u64,
    /// Whether this was the smoke size.
    pub smoke: bool,
    /// Intents per cell.
    pub intents_per_cell: usize,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// How long it took.
    pub seconds: f64,
    /// The command that reproduces it.
    pub command: String,
    /// The durations the faults are made with, in milliseconds.
    pub timings_ms: BTreeMap<&'static str, u64>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Settings and circumstances.
    pub meta: Meta,
    /// Every cell of the matrix, row by row, column by column.
    pub cells: Vec<CellReport>,
}

impl Report {
    /// Cells that could not be measured.
    pub fn failed(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| matches!(c.status, CellStatus::Failed { .. }))
            .count()
    }

    /// Cells where strategy (d) made an effect twice: this service's
    /// promise broken, whatever the fault.
    pub fn client_duplicates(&self) -> Vec<&CellReport> {
        self.cells
            .iter()
            .filter(|c| c.strategy == Strategy::Client)
            .filter(
                |c| matches!(&c.status, CellStatus::Measured { metrics, .. } if metrics.extra > 0),
            )
            .collect()
    }

    fn cell(&self, row: Row, column: Column) -> Option<&CellReport> {
        self.cells.iter().find(|c| {
            c.row == row
                && c.backend == column.backend
                && c.strategy == column.strategy
                && c.guard == column.guard
        })
    }

    /// Blind retry on `backend` under `guard`: a guard column's cell, or
    /// for the local backend with the guard off the grid's `local/a` (blind
    /// retry calls this service there already).
    fn guard_cell(&self, row: Row, backend: Backend, guard: Guard) -> Option<&CellReport> {
        let grid = backend == Backend::Local && guard == Guard::Off;
        self.cell(
            row,
            Column {
                backend,
                strategy: Strategy::Blind,
                guard: (!grid).then_some(guard),
            },
        )
    }

    /// The guard table: blind retry through this service under each guard,
    /// the four numbers and what the guard said. Empty when no guard
    /// column was measured.
    pub fn guard_markdown(&self) -> String {
        let measured = self
            .cells
            .iter()
            .any(|c| c.guard.is_some() && matches!(c.status, CellStatus::Measured { .. }));
        if !measured {
            return String::new();
        }
        let mut out = String::from(
            "Blind retry (a) **through this service** with its likely-duplicate guard \
             (`DUPLICATE_GUARD`, window the default 600 s): each cell **extra · missing · \
             false dedup · unresolved** as above; under `warn`, `flagged S/H`: answers our \
             server sent with `Possible-Duplicate-Of` / of those, answers a caller received; \
             under `confirm`, `refused S/H`: `409 possible-duplicate` answers sent / \
             received. `confirm-new`: `confirm`, and the caller says `confirm_new: true` on \
             an intent it means as a second one (only the control has one). `local off` is \
             the grid's local/a; on the providers these callers call this service, not the \
             provider (the grid's honour/a and ignore/a).\n\n| fault point |",
        );
        for backend in Backend::GUARDED {
            for guard in Guard::ALL {
                let _ = write!(out, " {backend} {guard} |");
            }
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(Backend::GUARDED.len() * Guard::ALL.len()));
        out.push('\n');
        for row in Row::ALL {
            let _ = write!(out, "| {}. {} |", row.index(), row.slug());
            for backend in Backend::GUARDED {
                for guard in Guard::ALL {
                    let text = match self.guard_cell(row, backend, guard).map(|c| &c.status) {
                        Some(CellStatus::Measured { metrics: m, .. }) => {
                            let said = match guard {
                                Guard::Off => String::new(),
                                Guard::Warn => format!(
                                    " flagged {}/{}",
                                    m.possible_duplicate_flagged,
                                    m.possible_duplicate_flagged_heard
                                ),
                                Guard::Confirm | Guard::ConfirmNew => format!(
                                    " refused {}/{}",
                                    m.possible_duplicate_refused,
                                    m.possible_duplicate_refused_heard
                                ),
                            };
                            format!("{}{said}", four(m))
                        }
                        Some(CellStatus::NotApplicable { .. }) => "n/a".into(),
                        Some(CellStatus::Failed { .. }) => "error".into(),
                        Some(CellStatus::NotRun) | None => "–".into(),
                    };
                    let _ = write!(out, " {text} |");
                }
            }
            out.push('\n');
        }
        out
    }

    /// The markdown: the grid, the per-cell table, the mechanisms.
    pub fn markdown(&self) -> String {
        let columns = Column::all();
        let mut out = String::new();
        let meta = &self.meta;
        let _ = writeln!(
            out,
            "Run: `{}` (seed {}, {} intent(s) per cell{}), {}, {:.0} s.\n",
            meta.command,
            meta.seed,
            meta.intents_per_cell,
            if meta.smoke { ", smoke size" } else { "" },
            meta.started_at,
            meta.seconds
        );
        out.push_str(
            "Each cell: **extra · missing · false dedup · unresolved**, summed over its \
             intents (each declares one effect; the control two). Counted where effects \
             are made; `n/a`: the cell cannot exist; `–`: not run.\n\n",
        );
        let _ = write!(out, "| fault point |");
        for c in &columns {
            let _ = write!(out, " {} |", c.label());
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(columns.len()));
        out.push('\n');
        for row in Row::ALL {
            let _ = write!(out, "| {}. {} |", row.index(), row.slug());
            for &column in &columns {
                let text = match self.cell(row, column).map(|c| &c.status) {
                    Some(CellStatus::Measured { metrics, .. }) => four(metrics),
                    Some(CellStatus::NotApplicable { .. }) => "n/a".into(),
                    Some(CellStatus::Failed { .. }) => "error".into(),
                    Some(CellStatus::NotRun) | None => "–".into(),
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
        let guards = self.guard_markdown();
        if !guards.is_empty() {
            out.push('\n');
            out.push_str(&guards);
        }
        out.push_str(
            "\nPer measured cell: write attempts per intent on the wire (mean, max), status \
             lookups per intent, writes the provider received per intent, time spent not \
             knowing (ms from the intent's start to a definite answer, over resolved intents, \
             in rows whose fault leaves the caller uncertain: p50/max), latency (ms from the \
             intent's start to its caller's last return, scripted pauses included: p50/max), \
             and what the callers concluded.\n\n\
             | fault point | column | attempts | lookups | provider writes | unknown ms | latency ms | callers concluded |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for cell in &self.cells {
            let CellStatus::Measured { metrics: m, .. } = &cell.status else {
                continue;
            };
            let spread =
                |s: &Option<Spread>| s.map_or("–".into(), |s| format!("{}/{}", s.p50, s.max));
            let outcomes: Vec<String> =
                m.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} / {} | {} | {} | {} | {} | {} |",
                cell.row.slug(),
                cell.column,
                m.attempts_mean,
                m.attempts_max,
                m.status_reads_mean,
                m.provider_writes_mean.map_or("–".into(), |w| w.to_string()),
                spread(&m.unknown_ms),
                spread(&m.latency_ms),
                outcomes.join(", ")
            );
        }
        out.push_str("\nHow each fault is made (`cell.rs`, `matrix.rs`):\n\n| fault point | mechanism | columns |\n|---|---|---|\n");
        let columns = Column::every();
        for row in Row::ALL {
            let mut by_mechanism: Vec<(&'static str, Vec<String>)> = Vec::new();
            let mut not_applicable: Vec<(&'static str, Vec<String>)> = Vec::new();
            for &column in &columns {
                let (list, text) = match applies(row, column) {
                    Applies::Yes(text) => (&mut by_mechanism, text),
                    Applies::No(text) => (&mut not_applicable, text),
                };
                match list.iter_mut().find(|(t, _)| *t == text) {
                    Some((_, cols)) => cols.push(column.label()),
                    None => list.push((text, vec![column.label()])),
                }
            }
            for (text, cols) in by_mechanism {
                let _ = writeln!(out, "| {} | {text} | {} |", row.slug(), cols.join(", "));
            }
            for (text, cols) in not_applicable {
                let _ = writeln!(
                    out,
                    "| {} | n/a: {text} | {} |",
                    row.slug(),
                    cols.join(", ")
                );
            }
        }
        out
    }

    /// Writes `results.json` into `dir`.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        let json = serde_json::to_string_pretty(self)?;
        std::fs::write(dir.join("results.json"), json + "\n")?;
        Ok(())
    }

    /// Replaces what is between the markers in the doc at `path` with the
    /// markdown; fails if the doc has no markers.
    pub fn write_into_doc(&self, path: &Path) -> anyhow::Result<()> {
        let doc =
            std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        let updated = splice(&doc, &self.markdown()).with_context(|| {
            format!("{} has no {DOC_START} … {DOC_END} section", path.display())
        })?;
        std::fs::write(path, updated)?;
        Ok(())
    }
}

/// The four judging numbers, `extra·missing·false dedup·unresolved`, in
/// bold when any is not zero.
fn four(m: &Metrics) -> String {
    let four = format!(
        "{}·{}·{}·{}",
        m.extra, m.missing, m.false_dedup, m.unresolved
    );
    if m.extra + m.missing + m.false_dedup + m.unresolved > 0 {
        format!("**{four}**")
    } else {
        four
    }
}

/// `doc` with the text between the markers replaced by `generated`.
fn splice(doc: &str, generated: &str) -> Option<String> {
    let start = doc.find(DOC_START)? + DOC_START.len();
    let end = start + doc[start..].find(DOC_END)?;
    Some(format!(
        "{}\n{}\n{}",
        &doc[..start],
        generated.trim_end(),
        &doc[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_doc_keeps_its_prose_around_the_results() {
        let doc = format!("# Title\nprose\n{DOC_START}\nold table\n{DOC_END}\nreading\n");
        let spliced = splice(&doc, "new table\n").expect("markers");
        assert_eq!(
            spliced,
            format!("# Title\nprose\n{DOC_START}\nnew table\n{DOC_END}\nreading\n")
        );
        assert_eq!(
            splice(&spliced, "newer").map(|d| d.contains("new table")),
            Some(false)
        );
        assert!(splice("no markers", "x").is_none());
    }

    fn measured(extra: u64, missing: u64, false_dedup: u64, said: (u64, u64)) -> CellStatus {
        CellStatus::Measured {
            mechanism: "m".into(),
            metrics: Box::new(Metrics {
                intents: 8,
                declared: 8,
                effects: 8 + extra - missing,
                extra,
                missing,
                false_dedup,
                unresolved: 0,
                attempts_mean: 2.0,
                attempts_max: 2,
                status_reads_mean: 0.0,
                provider_writes_mean: None,
                unknown_ms: None,
                latency_ms: None,
                outcomes: BTreeMap::new(),
                unsettled_at_count: 0,
                possible_duplicate_flagged: said.0,
                possible_duplicate_flagged_heard: said.0,
                possible_duplicate_refused: said.1,
                possible_duplicate_refused_heard: said.1.saturating_sub(1),
            }),
        }
    }

    fn report(cells: Vec<(Row, Column, CellStatus)>) -> Report {
        Report {
            meta: Meta {
                seed: 17,
                smoke: false,
                intents_per_cell: 8,
                started_at: String::new(),
                seconds: 1.0,
                command: "effect-bench".into(),
                timings_ms: BTreeMap::new(),
            },
            cells: cells
                .into_iter()
                .map(|(row, column, status)| CellReport {
                    row,
                    backend: column.backend,
                    strategy: column.strategy,
                    guard: column.guard,
                    column: column.label(),
                    status,
                })
                .collect(),
        }
    }

    #[test]
    fn the_guard_table_reads_local_off_from_the_grid_and_says_what_the_guard_said() {
        let column = |guard| Column {
            backend: Backend::Local,
            strategy: Strategy::Blind,
            guard,
        };
        let row = Row::AnswerLostToCaller;
        let grid_only = report(vec![(row, column(None), measured(8, 0, 0, (0, 0)))]);
        assert_eq!(grid_only.guard_markdown(), "", "no guard column measured");
        let run = report(vec![
            (row, column(None), measured(8, 0, 0, (0, 0))),
            (row, column(Some(Guard::Warn)), measured(8, 0, 0, (8, 0))),
            (row, column(Some(Guard::Confirm)), measured(0, 0, 0, (0, 8))),
            (
                Row::NewActionControl,
                column(Some(Guard::Confirm)),
                measured(0, 8, 8, (0, 8)),
            ),
        ]);
        let table = run.guard_markdown();
        let line = |prefix: &str| {
            table
                .lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            line("| 4. answer-lost-to-caller |").starts_with(
                "| 4. answer-lost-to-caller | **8·0·0·0** | **8·0·0·0** flagged 8/8 | \
                 0·0·0·0 refused 8/7 | – |"
            ),
            "{table}"
        );
        assert!(
            line("| 0. new-action-control |").contains("| **0·8·8·0** refused 8/7 |"),
            "{table}"
        );
        assert!(
            run.markdown().contains(&table),
            "the guard table is in the markdown"
        );
        let grid = run.markdown();
        let header = grid
            .lines()
            .find(|l| l.starts_with("| fault point | local/a"));
        assert_eq!(
            header.map(|h| h.matches('|').count()),
            Some(Column::all().len() + 2),
            "the grid has a column for each of Column::all()"
        );
    }

    #[test]
    fn redmine_has_grid_columns_b_to_d_and_no_guard_columns() {
        let on_redmine = |strategy| Column {
            backend: Backend::Redmine,
            strategy,
            guard: None,
        };
        let row = Row::CallerCrash;
        let run = report(vec![
            (
                row,
                Column {
                    backend: Backend::Local,
                    strategy: Strategy::Blind,
                    guard: Some(Guard::Warn),
                },
                measured(8, 0, 0, (8, 0)),
            ),
            (row, on_redmine(Strategy::Native), measured(8, 0, 0, (0, 0))),
            (row, on_redmine(Strategy::Naive), measured(8, 0, 0, (0, 0))),
            (row, on_redmine(Strategy::Client), measured(0, 0, 0, (0, 0))),
        ]);
        let markdown = run.markdown();
        let header = markdown
            .lines()
            .find(|l| l.starts_with("| fault point | local/a"))
            .unwrap_or_default();
        assert!(
            header.ends_with("| ignore/d | redmine/b | redmine/c | redmine/d |"),
            "{header}"
        );
        let crash = markdown
            .lines()
            .find(|l| l.starts_with("| 7. caller-crash-restart |"))
            .unwrap_or_default();
        assert!(
            crash.ends_with("| **8·0·0·0** | **8·0·0·0** | 0·0·0·0 |"),
            "{crash}"
        );
        let guards = run.guard_markdown();
        assert!(!guards.is_empty());
        assert!(!guards.contains("redmine"), "{guards}");
        assert!(
            markdown.contains("redmine/b, redmine/c, redmine/d |"),
            "the mechanisms name Redmine's columns"
        );
    }
}

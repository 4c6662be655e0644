//! The run's results as the three things people read: JSON (every cell,
//! with the run's metadata), markdown tables (the four judging numbers as
//! a grid, then attempts and times per cell, then which mechanism made
//! each fault), and, in the benchmark's doc, the same markdown between two
//! markers so that the doc always holds the latest full run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::matrix::{Applies, Backend, Column, Row, Strategy, applies};
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
    /// `honour/c`.
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
        self.cells
            .iter()
            .find(|c| c.row == row && c.backend == column.backend && c.strategy == column.strategy)
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
                    Some(CellStatus::Measured { metrics, .. }) => {
                        let m = metrics;
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
                    Some(CellStatus::NotApplicable { .. }) => "n/a".into(),
                    Some(CellStatus::Failed { .. }) => "error".into(),
                    Some(CellStatus::NotRun) | None => "–".into(),
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
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
}

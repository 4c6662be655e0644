//! Results, totals, and how they are printed.

use std::collections::BTreeSet;
use std::fmt;

use kitchen::Action;
use serde::Serialize;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    /// The promise held.
    Pass,
    /// The promise broke (or the server misbehaved).
    Fail,
    /// Not run: the target lacks what the check needs (said in `detail`).
    Skip,
}

/// One check's result.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    /// The check's number (1 to 24; see the table in the module docs).
    pub number: u8,
    /// The check's name, with the action (for checks that run for every
    /// action) and the door(s) it went through.
    pub name: String,
    /// The write action the check fired.
    pub action: Action,
    /// Pass, fail or skip.
    pub verdict: Verdict,
    /// The effects that exist for the check, read from the server: ticket
    /// ids (`create_ticket`), the ticket's history entries of the action
    /// (`update_ticket`, `transition_ticket`), comment ids (`add_comment`).
    pub effects: Vec<String>,
    /// Effects the check intended (0 for the control check, whose duplicate
    /// is the point).
    pub intended: usize,
    /// What happened, in words.
    pub detail: String,
}

impl fmt::Display for CheckResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = match self.verdict {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        };
        write!(
            f,
            "{verdict} {} {}: {}",
            self.number, self.name, self.detail
        )?;
        if !self.effects.is_empty() {
            write!(f, " [effects: {}]", self.effects.join(", "))?;
        }
        Ok(())
    }
}

/// Totals over every run, for soak mode.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Totals {
    /// How many times the set ran.
    pub runs: u32,
    /// Checks passed.
    pub passed: usize,
    /// Checks failed.
    pub failed: usize,
    /// Checks skipped.
    pub skipped: usize,
    /// Effects intended (each a distinct one with its own key).
    pub intended_effects: usize,
    /// Effects that exist for those checks.
    pub effects_found: usize,
    /// Effects beyond the intended ones: retries that duplicated.
    pub duplicates: usize,
    /// Intended effects that do not exist.
    pub lost: usize,
}

/// Every result and the totals.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Each check's result, in order.
    pub checks: Vec<CheckResult>,
    /// Totals.
    pub totals: Totals,
}

impl Report {
    pub(crate) fn new(checks: Vec<CheckResult>, runs: u32) -> Self {
        let mut totals = Totals {
            runs,
            ..Totals::default()
        };
        for c in &checks {
            match c.verdict {
                Verdict::Pass => totals.passed += 1,
                Verdict::Fail => totals.failed += 1,
                Verdict::Skip => {
                    totals.skipped += 1;
                    continue;
                }
            }
            if c.intended > 0 {
                totals.intended_effects += c.intended;
                totals.effects_found += c.effects.len();
                totals.duplicates += c.effects.len().saturating_sub(c.intended);
                totals.lost += c.intended.saturating_sub(c.effects.len());
            }
        }
        Self { checks, totals }
    }

    /// Whether every check that ran passed.
    pub fn all_passed(&self) -> bool {
        self.totals.failed == 0
    }

    /// The summary lines printed after the checks: the totals, then one
    /// line per reason checks were skipped, with their numbers, so that a
    /// skip is never only a count.
    pub fn summary(&self) -> String {
        let t = &self.totals;
        let mut summary = format!(
            "runs: {}; intended effects: {}, effects found: {}, duplicates: {}, lost: {}\n\
             {} passed, {} failed, {} skipped",
            t.runs,
            t.intended_effects,
            t.effects_found,
            t.duplicates,
            t.lost,
            t.passed,
            t.failed,
            t.skipped
        );
        for (why, numbers) in self.skips() {
            let numbers: Vec<String> = numbers.iter().map(u8::to_string).collect();
            summary.push_str(&format!("\nskipped {}: {why}", numbers.join(", ")));
        }
        summary
    }

    /// Each reason checks were skipped, in the order first seen, with the
    /// numbers of the checks it skipped.
    fn skips(&self) -> Vec<(&str, BTreeSet<u8>)> {
        let mut skips: Vec<(&str, BTreeSet<u8>)> = Vec::new();
        for c in self.checks.iter().filter(|c| c.verdict == Verdict::Skip) {
            match skips.iter_mut().find(|(why, _)| *why == c.detail) {
                Some((_, numbers)) => {
                    numbers.insert(c.number);
                }
                None => skips.push((&c.detail, BTreeSet::from([c.number]))),
            }
        }
        skips
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(number: u8, verdict: Verdict, detail: &str) -> CheckResult {
        CheckResult {
            number,
            name: format!("check {number}"),
            action: Action::CreateTicket,
            verdict,
            effects: Vec::new(),
            intended: 0,
            detail: detail.to_owned(),
        }
    }

    #[test]
    fn the_summary_says_which_checks_were_skipped_and_why() {
        let report = Report::new(
            vec![
                result(2, Verdict::Pass, "ok"),
                result(8, Verdict::Skip, "needs a restart"),
                result(24, Verdict::Skip, "window too long"),
                result(23, Verdict::Skip, "needs a restart"),
                result(24, Verdict::Skip, "window too long"),
            ],
            1,
        );
        let summary = report.summary();
        let lines: Vec<&str> = summary.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "1 passed, 0 failed, 4 skipped",
                "skipped 8, 23: needs a restart",
                "skipped 24: window too long",
            ],
            "{summary}"
        );
    }
}

//! A cell's numbers, from two sources kept apart: the ground truth (how
//! many effects each intent has where effects are made) gives the first
//! four, which judge the strategy; what the caller concluded gives only
//! "unresolved", and the wire gives attempts and times. Never is an effect
//! counted from an answer.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::callers::CallEnd;
use super::proxy::GuardSaid;

/// What one intent's caller did and concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IntentLog {
    /// Its unique title (where its effects are counted).
    pub(crate) title: String,
    /// How its last call ended.
    pub(crate) end: CallEnd,
    /// Whether any of its calls was answered "it already exists" (replayed,
    /// expired, a conflict): the answers a false deduplication gives.
    pub(crate) dedup_answer: bool,
    /// Whether its caller was ever without a definite answer: an answer
    /// lost, withheld, ambiguous, or a call interrupted.
    pub(crate) met_ambiguity: bool,
    /// From its start to its last call's return (scripted pauses included).
    pub(crate) latency: Duration,
    /// Write requests its calls sent, counted on the wire.
    pub(crate) writes: u32,
    /// Answers its callers received with `Possible-Duplicate-Of`.
    pub(crate) flagged_heard: u64,
    /// `409 possible-duplicate` answers its callers received.
    pub(crate) refused_heard: u64,
}

/// Milliseconds: the median and the largest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Median (the lower of the two middle values).
    pub p50: u64,
    /// Largest.
    pub max: u64,
}

impl Spread {
    fn of(mut values: Vec<u64>) -> Option<Self> {
        values.sort_unstable();
        let p50 = *values.get((values.len().max(1) - 1) / 2)?;
        Some(Self {
            p50,
            max: *values.last()?,
        })
    }
}

/// A measured cell's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Intents run.
    pub intents: usize,
    /// Effects they declared (intents × the row's multiplicity).
    pub declared: u64,
    /// Effects found where effects are made.
    pub effects: u64,
    /// Effects beyond the declared multiplicity, summed over intents.
    pub extra: u64,
    /// Declared effects not found, summed over intents.
    pub missing: u64,
    /// Intents missing an effect whose caller was told it already existed.
    pub false_dedup: u64,
    /// Intents whose caller stopped without knowing whether the effect
    /// exists.
    pub unresolved: u64,
    /// Write requests per intent, on the wire: mean.
    pub attempts_mean: f64,
    /// … and the most for one intent.
    pub attempts_max: u32,
    /// Status lookups (`GET /v1/operations/…`) per intent, mean.
    pub status_reads_mean: f64,
    /// Write requests the provider received per intent, mean (remote
    /// backends): our server's dispatches, or the caller's own requests.
    pub provider_writes_mean: Option<f64>,
    /// Time spent not knowing, for intents that met an ambiguous moment
    /// and were resolved: from the intent's start to the definite answer.
    pub unknown_ms: Option<Spread>,
    /// From each intent's start to its caller's last return.
    pub latency_ms: Option<Spread>,
    /// The callers' conclusions: `done`, `done_dedup`, `refused`,
    /// `refused_dedup`, `not_sent`, `unresolved`.
    pub outcomes: BTreeMap<String, usize>,
    /// Effects our server was still working on when the count was taken.
    pub unsettled_at_count: u64,
    /// Our server's answers carrying `Possible-Duplicate-Of` (the guard in
    /// `warn` made a write it took for a duplicate), counted on the wire
    /// whether or not they reached a caller.
    pub possible_duplicate_flagged: u64,
    /// … of which a caller received.
    pub possible_duplicate_flagged_heard: u64,
    /// Our server's `409 possible-duplicate` answers (the guard in
    /// `confirm` refused an attempt, nothing written), counted on the wire.
    pub possible_duplicate_refused: u64,
    /// … of which a caller received.
    pub possible_duplicate_refused_heard: u64,
}

/// What a cell measured, beside its intents' logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Observed {
    /// Effects per title, where effects are made.
    pub(crate) truth: BTreeMap<String, u64>,
    /// Status lookups the callers made.
    pub(crate) status_reads: u64,
    /// Writes the provider received during the cell (remote backends).
    pub(crate) provider_writes: Option<u64>,
    /// Effects our server still worked on at the count.
    pub(crate) unsettled: u64,
    /// What our server's guard answered, on the wire.
    pub(crate) guard_said: GuardSaid,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn per_intent(total: u64, intents: usize) -> f64 {
    // Counts of a bench are far below 2^52: exact as f64.
    let mean = total as f64 / intents.max(1) as f64;
    (mean * 100.0).round() / 100.0
}

/// The cell's numbers from its intents and what was observed; each intent
/// declares `multiplicity` effects.
pub(crate) fn measure(logs: &[IntentLog], observed: &Observed, multiplicity: u64) -> Metrics {
    let mut metrics = Metrics {
        intents: logs.len(),
        declared: multiplicity * u64::try_from(logs.len()).unwrap_or(0),
        effects: 0,
        extra: 0,
        missing: 0,
        false_dedup: 0,
        unresolved: 0,
        attempts_mean: per_intent(logs.iter().map(|l| u64::from(l.writes)).sum(), logs.len()),
        attempts_max: logs.iter().map(|l| l.writes).max().unwrap_or(0),
        status_reads_mean: per_intent(observed.status_reads, logs.len()),
        provider_writes_mean: observed.provider_writes.map(|n| per_intent(n, logs.len())),
        unknown_ms: Spread::of(
            logs.iter()
                .filter(|l| l.met_ambiguity && l.end.resolved())
                .map(|l| millis(l.latency))
                .collect(),
        ),
        latency_ms: Spread::of(logs.iter().map(|l| millis(l.latency)).collect()),
        outcomes: BTreeMap::new(),
        unsettled_at_count: observed.unsettled,
        possible_duplicate_flagged: observed.guard_said.flagged,
        possible_duplicate_flagged_heard: logs.iter().map(|l| l.flagged_heard).sum(),
        possible_duplicate_refused: observed.guard_said.refused,
        possible_duplicate_refused_heard: logs.iter().map(|l| l.refused_heard).sum(),
    };
    for log in logs {
        let found = observed.truth.get(&log.title).copied().unwrap_or(0);
        metrics.effects += found;
        metrics.extra += found.saturating_sub(multiplicity);
        let missing = multiplicity.saturating_sub(found);
        metrics.missing += missing;
        if missing > 0 && log.dedup_answer {
            metrics.false_dedup += 1;
        }
        if !log.end.resolved() {
            metrics.unresolved += 1;
        }
        let outcome = match log.end {
            CallEnd::Done { dedup: false } => "done",
            CallEnd::Done { dedup: true } => "done_dedup",
            CallEnd::Refused { dedup: false } => "refused",
            CallEnd::Refused { dedup: true } => "refused_dedup",
            CallEnd::NotSent => "not_sent",
            CallEnd::Unresolved => "unresolved",
        };
        *metrics.outcomes.entry(outcome.to_owned()).or_default() += 1;
    }
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(title: &str, end: CallEnd, dedup_answer: bool, ms: u64) -> IntentLog {
        IntentLog {
            title: title.into(),
            end,
            dedup_answer,
            met_ambiguity: true,
            latency: Duration::from_millis(ms),
            writes: 2,
            flagged_heard: 0,
            refused_heard: 0,
        }
    }

    #[test]
    fn effects_are_judged_by_the_truth_not_by_the_answers() {
        let logs = [
            // Told "done", but two tickets exist: one extra.
            log("a", CallEnd::Done { dedup: false }, false, 100),
            // Told "it already exists", and nothing exists: missing, and a
            // false deduplication.
            log("b", CallEnd::Refused { dedup: true }, true, 300),
            // Never told anything; the effect exists once.
            log("c", CallEnd::Unresolved, false, 900),
        ];
        let observed = Observed {
            truth: [("a".into(), 2), ("c".into(), 1)].into(),
            status_reads: 3,
            provider_writes: Some(4),
            unsettled: 0,
            guard_said: GuardSaid::default(),
        };
        let m = measure(&logs, &observed, 1);
        assert_eq!((m.declared, m.effects), (3, 3));
        assert_eq!(
            (m.extra, m.missing, m.false_dedup, m.unresolved),
            (1, 1, 1, 1)
        );
        assert_eq!(m.unknown_ms, Some(Spread { p50: 100, max: 300 }));
        assert_eq!(m.latency_ms, Some(Spread { p50: 300, max: 900 }));
        assert_eq!(m.attempts_mean, 2.0);
        assert_eq!(m.status_reads_mean, 1.0);
        assert_eq!(m.outcomes["refused_dedup"], 1);
    }

    #[test]
    fn the_control_declares_two_effects_per_intent() {
        let logs = [log("a", CallEnd::Done { dedup: true }, true, 10)];
        let one = Observed {
            truth: [("a".into(), 1)].into(),
            ..Observed::default()
        };
        let m = measure(&logs, &one, 2);
        assert_eq!((m.declared, m.missing, m.false_dedup), (2, 1, 1));
    }

    #[test]
    fn what_the_guard_said_is_counted_apart_from_what_callers_heard() {
        // The control under confirm, two intents: the first's second
        // caller was refused as a likely duplicate and its ticket is
        // missing (a false deduplication); the second's said confirm_new
        // and got both.
        let refused = IntentLog {
            refused_heard: 1,
            ..log("a", CallEnd::Refused { dedup: true }, true, 10)
        };
        let confirmed = log("b", CallEnd::Done { dedup: false }, false, 10);
        let observed = Observed {
            truth: [("a".into(), 1), ("b".into(), 2)].into(),
            guard_said: GuardSaid {
                flagged: 0,
                refused: 1,
            },
            ..Observed::default()
        };
        let m = measure(&[refused, confirmed], &observed, 2);
        assert_eq!((m.extra, m.missing, m.false_dedup), (0, 1, 1));
        assert_eq!(
            (
                m.possible_duplicate_refused,
                m.possible_duplicate_refused_heard
            ),
            (1, 1)
        );
        // Under warn a flag may land on an answer nobody received (a late
        // delivery after the caller dropped its call): said 2, heard 1.
        let flagged = IntentLog {
            flagged_heard: 1,
            ..log("c", CallEnd::Done { dedup: false }, false, 10)
        };
        let observed = Observed {
            truth: [("c".into(), 2)].into(),
            guard_said: GuardSaid {
                flagged: 2,
                refused: 0,
            },
            ..Observed::default()
        };
        let m = measure(&[flagged], &observed, 1);
        assert_eq!(m.extra, 1, "warn protects nothing");
        assert_eq!(
            (
                m.possible_duplicate_flagged,
                m.possible_duplicate_flagged_heard
            ),
            (2, 1)
        );
    }
}

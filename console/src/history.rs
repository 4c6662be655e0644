//! What callers did over the last hour, in 10-second steps, for the
//! overview's sparklines: this instance's counts, sampled. (Longer spans,
//! latency percentiles and every instance together are Prometheus's: see
//! `ops/`.) This is the one reader of `Metrics::take_latency_window`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use maud::{Markup, html};
use telemetry::Metrics;

/// How often the counts are sampled.
pub(crate) const STEP: Duration = Duration::from_secs(10);
/// How many samples are kept: an hour.
const KEPT: usize = 360;

/// The running totals at one sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Totals {
    pub(crate) attempts: u64,
    pub(crate) replays: u64,
    pub(crate) conflicts: u64,
    pub(crate) errors: u64,
    /// The median and 99th percentile of the writes of the step before
    /// this sample, in microseconds (0 for a step without writes).
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
}

impl Totals {
    fn of(metrics: &Metrics) -> Self {
        metrics
            .stats()
            .all()
            .iter()
            .fold(Self::default(), |t, s| Self {
                attempts: t.attempts
                    + s.created
                    + s.replayed
                    + s.expired
                    + s.conflict
                    + s.invalid
                    + s.refused
                    + s.in_progress
                    + s.error,
                replays: t.replays + s.replayed + s.expired,
                conflicts: t.conflicts + s.conflict,
                errors: t.errors + s.error,
                ..t
            })
    }

    /// With the latency percentiles of the writes since the last sample.
    fn with_latency(self, metrics: &Metrics) -> Self {
        let (p50, p99) = metrics.take_latency_window().unwrap_or_default();
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Self {
            p50_us: micros(p50),
            p99_us: micros(p99),
            ..self
        }
    }

    /// The step from `earlier` to this sample: counts as increases, the
    /// latency as measured over it.
    fn since(self, earlier: Self) -> Self {
        Self {
            attempts: self.attempts.saturating_sub(earlier.attempts),
            replays: self.replays.saturating_sub(earlier.replays),
            conflicts: self.conflicts.saturating_sub(earlier.conflicts),
            errors: self.errors.saturating_sub(earlier.errors),
            p50_us: self.p50_us,
            p99_us: self.p99_us,
        }
    }
}

/// The samples, oldest first.
#[derive(Debug, Default)]
pub(crate) struct History {
    samples: Mutex<VecDeque<Totals>>,
}

impl History {
    /// A history of `metrics`, sampled every [`STEP`] by a task that ends
    /// once the console (the last holder of the history) is gone.
    pub(crate) fn start(metrics: Metrics) -> Arc<Self> {
        let history = Arc::new(Self::default());
        history.push(Totals::of(&metrics).with_latency(&metrics));
        let weak: Weak<Self> = Arc::downgrade(&history);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(STEP).await;
                let Some(history) = weak.upgrade() else {
                    return;
                };
                history.push(Totals::of(&metrics).with_latency(&metrics));
            }
        });
        history
    }

    fn push(&self, totals: Totals) {
        let Ok(mut samples) = self.samples.lock() else {
            return;
        };
        if samples.len() == KEPT {
            samples.pop_front();
        }
        samples.push_back(totals);
    }

    /// What happened in each step, oldest first.
    pub(crate) fn steps(&self) -> Vec<Totals> {
        let Ok(samples) = self.samples.lock() else {
            return Vec::new();
        };
        samples
            .iter()
            .zip(samples.iter().skip(1))
            .map(|(earlier, later)| later.since(*earlier))
            .collect()
    }
}

/// `values` as an inline SVG line, 240 by 36, scaled to its largest value.
pub(crate) fn sparkline(values: &[u64]) -> Markup {
    const WIDTH: f64 = 240.0;
    const HEIGHT: f64 = 36.0;
    if values.len() < 2 {
        return html! { span.muted { "collecting (one point every 10 s)" } };
    }
    let top = values.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = WIDTH / (values.len() - 1) as f64;
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let x = i as f64 * step;
            let y = HEIGHT - 2.0 - (*v as f64 / top) * (HEIGHT - 4.0);
            format!("{x:.1},{y:.1}")
        })
        .collect();
    html! {
        svg.spark width="240" height="36" viewBox="0 0 240 36" role="img" aria-label="sparkline" {
            polyline fill="none" stroke="#2457d6" stroke-width="1.5" points=(points.join(" ")) {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_the_increases_between_samples() {
        let history = History::default();
        for attempts in [3, 10, 10, 25] {
            history.push(Totals {
                attempts,
                ..Totals::default()
            });
        }
        let steps: Vec<u64> = history.steps().iter().map(|t| t.attempts).collect();
        assert_eq!(steps, [7, 0, 15]);
        assert!(sparkline(&steps).into_string().contains("<polyline"));
        assert!(sparkline(&[1]).into_string().contains("collecting"));
    }
}

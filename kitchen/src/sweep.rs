//! [`Sweeper`]: the retention sweep. Past its replay window a record
//! becomes a tombstone; past its tombstone horizon it is deleted (see
//! `domain/lifecycle.rs` for what each phase answers, and `store/sweep.rs`
//! for why it works in batches and how instances share the work).
//!
//! Answers never depend on the sweep having run: the write path and the
//! status read decide a key's phase from its record's horizons and the
//! clock. The sweep only reclaims space.

use std::future::Future;
use std::time::Duration;

use crate::KitchenError;
use crate::clock::Clock;
use crate::domain::lifecycle::floor_to_second;
use crate::store::{self, Db};

/// What a sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Records turned into tombstones (frozen answers dropped).
    pub tombstoned: u64,
    /// Records deleted (their keys are free again).
    pub deleted: u64,
}

impl SweepReport {
    fn add(&mut self, other: SweepReport) {
        self.tombstoned += other.tombstoned;
        self.deleted += other.deleted;
    }
}

/// Sweeps one kitchen's database. Every instance may run one; on
/// PostgreSQL they share the work without waiting for each other.
#[derive(Debug, Clone)]
pub struct Sweeper {
    pub(crate) db: Db,
    pub(crate) clock: Clock,
    pub(crate) batch: u32,
    /// The rest between two full batches.
    pub(crate) pause: Duration,
    /// How long a SQLite batch waits for the write lock.
    pub(crate) wait: Duration,
}

impl Sweeper {
    /// One batch of each kind: at most `batch` records tombstoned and at
    /// most `batch` deleted.
    pub async fn sweep_batch(&self) -> Result<SweepReport, KitchenError> {
        // Whole seconds, like the horizons, so a text comparison on SQLite
        // is exact.
        let now = floor_to_second(self.clock.now());
        let tombstoned = store::sweep::tombstone(&self.db, self.wait, now, self.batch).await?;
        let deleted = store::sweep::delete(&self.db, self.wait, now, self.batch).await?;
        Ok(SweepReport {
            tombstoned,
            deleted,
        })
    }

    /// Batch after batch until nothing is due; calls `on_batch` after each
    /// batch that changed something.
    pub async fn sweep_due(
        &self,
        on_batch: &mut (impl FnMut(&SweepReport) + Send),
    ) -> Result<SweepReport, KitchenError> {
        let mut total = SweepReport::default();
        loop {
            let batch = self.sweep_batch().await?;
            if batch != SweepReport::default() {
                on_batch(&batch);
            }
            total.add(batch);
            let full = u64::from(self.batch);
            if batch.tombstoned < full && batch.deleted < full {
                return Ok(total);
            }
            // Let writes in between batches: measured on SQLite with a
            // backlog of due records, back-to-back batches cut creates to a
            // tenth and brought their p99 near the wait bound.
            if self.pause.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(self.pause).await;
            }
        }
    }

    /// Sweeps everything due now, then again every `every`, until
    /// `shutdown` resolves. A failed sweep is logged and the next one runs
    /// on schedule: a database blip must not stop retention for good.
    /// `on_batch` hears of each batch that changed something, `on_done` of
    /// each sweep that got through everything due (so that a sweep that
    /// keeps failing, or never runs, can be told from one with nothing to
    /// do).
    pub async fn run(
        self,
        every: Duration,
        shutdown: impl Future<Output = ()>,
        mut on_batch: impl FnMut(&SweepReport) + Send,
        mut on_done: impl FnMut() + Send,
    ) {
        tokio::pin!(shutdown);
        loop {
            match self.sweep_due(&mut on_batch).await {
                Ok(report) if report == SweepReport::default() => on_done(),
                Ok(report) => {
                    tracing::info!(
                        tombstoned = report.tombstoned,
                        deleted = report.deleted,
                        "retention sweep done"
                    );
                    on_done();
                }
                Err(e) => tracing::error!(error = %e, "retention sweep failed"),
            }
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    }
}

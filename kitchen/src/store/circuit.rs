//! What the kitchen remembers about the database's health between
//! requests, so that a database that is down costs a caller nothing but a
//! quick answer.
//!
//! - **Reachability** (a circuit): once a request finds the database
//!   unreachable (no connection within the acquire timeout, the server
//!   shutting down, its connection killed), a background probe pings the
//!   database. While the pings fail, every request is answered at once
//!   with the same storage fault, without waiting for a connection; the
//!   first ping answered closes the circuit. Recovery needs no restart
//!   and no traffic.
//! - **Writability**: a write that failed because the database cannot
//!   store anything (a full disk, a read-only server, a file another
//!   program holds locked) marks writes as failing; the next write that
//!   commits, or a readiness probe that manages to commit one row, clears
//!   it. Reads go on meanwhile: they still work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use time::OffsetDateTime;

use super::{Db, on_db};
use crate::KitchenError;
use crate::domain::fault::{StorageFault, Written};

/// How often the background probe pings a database that is down.
const PROBE_EVERY: Duration = Duration::from_millis(200);

/// The database's health as requests found it. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// The circuit: the probe found the database unreachable, and it has
    /// not answered since.
    unreachable: AtomicBool,
    /// A probe is checking on the database.
    probing: AtomicBool,
    /// Writes failed for want of a writable database, and none committed
    /// since.
    writes_failing: AtomicBool,
}

impl Health {
    /// `Err` at once while the circuit is open: the database did not
    /// answer a moment ago and the probe has not reached it since. Nothing
    /// was written.
    pub(crate) fn check(&self) -> Result<(), KitchenError> {
        if self.shared.unreachable.load(Ordering::Acquire) {
            return Err(KitchenError::Unavailable {
                fault: StorageFault::Unreachable,
                written: Written::Nothing,
                cause: "the database did not answer a moment ago; a probe is checking on it".into(),
            });
        }
        Ok(())
    }

    /// Learns from a request's error: an unreachable database opens the
    /// circuit (and starts its probe, once); one that cannot store
    /// anything marks writes as failing.
    pub(crate) fn saw(&self, error: &KitchenError, db: &Db, acquire_timeout: Duration) {
        match error.storage_fault() {
            Some((StorageFault::Unreachable, _)) => self.open(db, acquire_timeout),
            Some((StorageFault::CannotWrite | StorageFault::Locked, _)) => {
                self.shared.writes_failing.store(true, Ordering::Release);
            }
            None => {}
        }
    }

    /// A write committed: writes work.
    pub(crate) fn committed(&self) {
        self.shared.writes_failing.store(false, Ordering::Release);
    }

    /// Whether writes failed for want of a writable database, with none
    /// committed since.
    pub(crate) fn writes_failing(&self) -> bool {
        self.shared.writes_failing.load(Ordering::Acquire)
    }

    /// Checks on the database after a request found it unreachable: one
    /// probe at a time pings it, at once and then every [`PROBE_EVERY`].
    /// While the pings fail the circuit is open; the first that answers
    /// closes it and ends the probe. A single lost connection (a backend
    /// killed mid-request) answers the first ping, so it fails only its
    /// own request, never the ones after it.
    fn open(&self, db: &Db, acquire_timeout: Duration) {
        if self.shared.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (shared, db) = (self.shared.clone(), db.clone());
        tokio::spawn(async move {
            loop {
                if let Ok(Ok(())) = tokio::time::timeout(acquire_timeout, db.ping()).await {
                    if shared.unreachable.swap(false, Ordering::AcqRel) {
                        tracing::info!(database = db.kind(), "the database answers again");
                    }
                    shared.probing.store(false, Ordering::Release);
                    return;
                }
                if !shared.unreachable.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        database = db.kind(),
                        "the database is unreachable: answering at once until it is back"
                    );
                }
                tokio::time::sleep(PROBE_EVERY).await;
            }
        });
    }
}

/// Commits one row, the smallest write there is: can the database store
/// something now? (For the readiness probe while writes are failing.)
pub(crate) async fn probe_write(db: &Db) -> Result<(), KitchenError> {
    const PROBE: &str = "INSERT INTO write_probe (id, probed_at) VALUES (1, $1) \
         ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at";
    let now = OffsetDateTime::now_utc();
    on_db!(db, pool => sqlx::query(PROBE).bind(now).execute(pool).await.map(drop))?;
    Ok(())
}
